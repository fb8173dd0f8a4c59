// Package setup turns a process's environment into a running hush: it reads
// and validates the HUSH_* configuration (Config, LoadConfig, PrintUsage),
// opens the one Redis client (a URL, Redis Cluster, Sentinel, or an
// embedded miniredis for development), reads the apps file
// (HUSH_APPS_FILE: apps*.go; CheckAppsFile checks one offline), builds each
// app's APNs, FCM or dry-run senders and its limiter, and runs the worker
// with its HTTP API, package worker/httpapi (Serve), its Redis client's
// commands counted (internal/redismetrics). While it runs, the
// apps are rebuilt and swapped in when the apps file or a credential file
// changes, or on SIGHUP (reload.go).
//
// The pipeline itself is package worker, which knows nothing of the
// environment. setup may import worker, worker/httpapi, throttle, payload,
// internal/redismetrics, the sender packages under providers, envconfig,
// miniredis, go-redis, the Prometheus client and the YAML decoder (go.yaml.in/yaml/v3); only cmd/hush (and tests) import
// setup.
package setup
