// Command hush is the one hush binary. Its commands:
//
//   - serve: the worker, the HTTP API, /healthz, /readyz and /metrics,
//     configured by HUSH_* environment variables only (hush serve --help
//     lists them); package setup builds and runs it.
//   - send, cancel, throttle: operator tools that talk to a running serve
//     over its HTTP API through package client, finding it with --server or
//     HUSH_HTTP_ADDR and authenticating with HUSH_API_TOKEN.
//   - apps check: the offline check of an apps file (package setup).
//   - simulate: the offline replay of a trace through throttle's in-memory
//     limiter, with text, JSON and HTML reports (package internal/simulate).
//   - demo: a self-contained burst through a worker on an embedded Redis and
//     the fake providers of providers/fake, with a live timeline (package
//     internal/demo).
//   - bench: a worker against a Redis the operator names and fake APNs,
//     measuring deliveries/s and Redis CPU per delivery (package
//     internal/bench).
//   - version, help.
//
// main parses the command line and calls the packages; it holds no
// delivery logic. It may import payload, throttle, setup, worker, client,
// internal/simulate, internal/demo, internal/bench and internal/cmdkit, and
// go-redis where serve holds the process's one Redis client; never Asynq or
// the provider SDKs directly.
package main
