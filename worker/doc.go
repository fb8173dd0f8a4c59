// Package worker is hush's delivery pipeline: the only package that imports
// Asynq.
//
// It accepts jobs (Client.Enqueue, the HTTP API), fans each job out into one
// delivery task per recipient, passes every delivery through the limiter
// (deferring it to the slot the limiter books), sends to every device through
// the providers' Senders, classifies the outcomes, records per-device and
// per-recipient progress so retries and re-runs are idempotent, emits events
// (the capped Redis stream hush:events and an optional webhook), exposes
// Prometheus metrics, /healthz and /readyz, and wires all of it from the
// environment (Config, Serve).
//
// It may import payload, throttle, providers (and its sender packages),
// Asynq, go-redis, envconfig, miniredis (the embedded development Redis) and
// client_golang.
//
// Redis keys besides Asynq's and the limiter's (each job's keys share the
// hash tag {<id>}, so they live on one Redis Cluster slot):
//
//	hush:job:{<id>}       hash: state, accepted_at, recipients, priority,
//	                      deadline, cursor (fan-out progress), deferrals and
//	                      one counter per final state (delivered, expired,
//	                      token_invalid, failed)
//	hush:job:{<id>}:r     hash: recipient index -> final state
//	hush:job:{<id>}:dev   hash: "<recipient>/<device>" -> delivered | token_invalid
//	hush:events           stream of events (capped with MAXLEN ~)
//
// The limiter member of a delivery is "<job id>/<recipient index>".
package worker
