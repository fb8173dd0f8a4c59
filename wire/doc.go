// Package wire holds the JSON types hush's HTTP API answers with
// (docs/openapi.yaml, whose schema each type names): the accepted job, the
// job status, the cancellation, the batch answers, the limiter status, a
// user's preferences and deletion, the error envelope and the small health
// answers, with the values of their enumerated fields.
//
// The server (worker/httpapi, and worker, whose Client returns the job
// types) encodes them and the Go client (client) decodes them, so the two
// cannot drift apart; each re-exports what its users name (worker.JobStatus
// and client.JobStatus are wire.JobStatus).
//
// It imports only the standard library, so that client, which a backend
// imports, stays free of Redis, Asynq and the provider SDKs; a test
// enforces this.
package wire
