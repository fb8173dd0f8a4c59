// Command hush is the one hush binary: the worker (serve) and the operator's
// tools that talk to a running worker's HTTP API (send, throttle).
//
// main is thin: it parses the command line and calls package worker; it
// holds no delivery logic. Everything about serve is configured by HUSH_*
// environment variables (hush serve --help lists them), the other commands
// find the server with --server or HUSH_HTTP_ADDR and authenticate with
// HUSH_API_TOKEN.
//
// It may import payload (to build jobs) and worker (to run); never Asynq,
// the limiter or the provider SDKs directly.
package main
