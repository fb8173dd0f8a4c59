// Package httpapi is hush's HTTP API (docs/openapi.yaml, served at GET
// /openapi.yaml): it submits, reads and cancels jobs through the worker's
// job client, and shows and resets users' limiter state, readiness and
// metrics through the worker.
//
//	POST   /v1/notifications        submit a job: 202 {"id"}, duplicate 200 {"id","duplicate":true}
//	POST   /v1/notifications:batch  submit up to worker.MaxBatch jobs: 200 {"results"}, one answer per job
//	GET    /v1/notifications/{id}   the job's state and counts per delivery state
//	DELETE /v1/notifications/{id}   cancel the job: nothing of it is sent after the answer
//	GET    /v1/users/{id}/throttle  the limiter status of one user
//	DELETE /v1/users/{id}/throttle  clear one user's limiter state
//	PUT, GET, DELETE /v1/users/{id}/preferences  one user's own preferences in an app
//	DELETE /v1/users/{id}           delete every key hush keeps for one user of an app
//	GET    /healthz, /readyz, /metrics, /openapi.yaml
//
// Its answers are package wire's types, which the Go client (package
// client) decodes. It holds no state of its own: New takes what it serves
// as two small interfaces, Jobs (a *worker.Client) and Worker (a
// *worker.Worker), declared here, where they are used.
//
// It may import payload, wire, throttle (the policy it names rules by),
// worker (its types and errors) and docs (the OpenAPI description it
// serves); not go-redis, Asynq or a provider package directly. setup builds
// it for hush serve.
package httpapi
