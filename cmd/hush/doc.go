// Command hush is the one hush binary: the worker (serve), the operator's
// tools that talk to a running worker's HTTP API (send, cancel, throttle),
// the offline replay of a trace through the limiter (simulate), the offline
// check of an apps file (apps check) and a self-contained demo (demo).
//
// main is thin: it parses the command line and calls package worker; it
// holds no delivery logic. Everything about serve is configured by HUSH_*
// environment variables (hush serve --help lists them), the other commands
// find the server with --server or HUSH_HTTP_ADDR and authenticate with
// HUSH_API_TOKEN.
//
// It may import payload (to build jobs) and worker (to run); simulate also
// uses throttle's in-memory limiter and demo the fake providers of
// providers/fake. Never Asynq, the Redis limiter or the provider SDKs
// directly.
package main
