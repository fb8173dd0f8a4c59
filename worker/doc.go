// Package worker is hush's delivery pipeline: the only package that imports
// Asynq.
//
// It accepts jobs (Client.Enqueue, Client.EnqueueBatch), fans each job out
// in chunks of recipients, books every delivery with its app's limiter and
// sends it at its slot through the Senders it is given, records per-device
// and per-recipient progress so that retries and re-runs are idempotent,
// emits events (the hush:events stream and an optional webhook), and keeps
// Prometheus metrics (MetricsHandler) and its readiness (NotReady). The
// HTTP API in front of it is worker/httpapi; the job answers are package
// wire's types. Process setup (configuration, the Redis connection,
// senders) is package setup's: worker takes a Redis client and Options.
//
// It may import payload, wire, webhook, throttle, providers (the outcome
// taxonomy, not the sender packages), its parts under worker/internal,
// Asynq, go-redis, golang.org/x/sync and client_golang.
//
// # Where to look
//
// docs/internals.md walks one push, and one held push, through the files
// of this package, naming at each step the function that decides it. The
// decisions every path shares are the part worker/internal/decide
// (decide.Plan: what a booking means now; decide.RoutePlan: what the path
// holding it does; decide.Judge: what a device's answers mean;
// decide.GateOf: whether a cancellation allows a send), pure functions
// this package calls and carries out; the bookings they judge are made and
// given back in booking.go (book, release). The job store is store*.go
// (store.go lists them) and the part worker/internal/store (the keys, the
// scripts and the done buckets): every command on a job's keys is there
// (storedoor_test.go), and each script names its KEYS and ARGV in its
// header.
// What each promises is in docs/delivery.md.
//
// # Tasks
//
// The task types, ids, limiter members, queue names and final states are
// the vocabulary in worker/internal/task; the types are registered in
// worker.go (serveMuxes). The ids carry their kind, so no job id can take
// another task's id.
//
//	hush:job             "job:<id>"                 job.go, jobTask
//	hush:batch           "batch:<random id>"        batch.go, batchTask
//	hush:grouping-chunk  "chunk:<id>/<k>"           chunk.go, chunkTask
//	hush:rereading-chunk "chunk:<id>/<k>"           chunk.go, chunkTask
//	hush:held            "wait:<id>/<k>/<second>"   chunk.go, chunkTask (held.go)
//	hush:waiting-jobs    "jobs:<task>/<token>/<s>"  waitingjobs.go, waitingJobsTask
//	hush:waiting-second  "second:<queue>/<s>"       waitingsecond.go, waitingSecondTask
//	hush:delivery        "delivery:<id>/<index>"    delivery.go, deliveryTask
//
// The held tasks wait in held queues (held-<queue>), served by a second
// Asynq server with Options.HeldConcurrency slots. The task types and ids
// only earlier builds make are in legacy.go.
//
// # Redis keys
//
// Besides Asynq's and the limiter's, a job's keys (its record, recipient
// and device states, exceptions, its done bucket's entry), the held
// groups, run marks and the reset mark are listed in
// worker/internal/store's doc.go, the part that builds them;
// hush:events is events.go's.
//
// The limiter member of a delivery's first attempt is "<job id>/<index>",
// of attempt k > 0 "<job id>/<index>#<k>" (task.Member), so each retry books a
// slot of its own. With HUSH_DELIVERY_SHARDS above 1 the tasks are spread
// over "<priority>.<n>" queues (task.ShardQueue).
package worker
