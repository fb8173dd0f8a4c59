// Package setup turns a process's environment into a running hush: it reads
// and validates the HUSH_* configuration (Config, LoadConfig, PrintUsage),
// opens the one Redis client (a URL, Redis Cluster, Sentinel, or an
// embedded miniredis for development), builds the APNs, FCM or dry-run
// senders, and runs the worker with its HTTP API (Serve).
//
// The pipeline itself is package worker, which knows nothing of the
// environment. setup may import worker, throttle, payload, the sender
// packages under providers, envconfig, miniredis and go-redis; only
// cmd/hush (and tests) import setup.
package setup
