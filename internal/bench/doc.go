// Package bench sizes a deployment: it runs a hush worker in this process
// against a Redis the operator names (a database of its own) and a local
// fake APNs, submits single-recipient and fan-out jobs, and reports
// deliveries/s, Redis CPU and commands per delivery, each master's share,
// and the ceiling, the deliveries/s at which the busiest master spends a
// full core.
//
// hush bench parses its flags and the HUSH_* configuration and calls Run.
// The package may import payload, setup, worker, providers/fake,
// internal/cmdkit and go-redis (to read each master's INFO and delete its
// own keys).
package bench
