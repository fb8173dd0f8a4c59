// Package worker is hush's delivery pipeline: the only package that imports
// Asynq.
//
// It accepts jobs (Client.Enqueue, the HTTP API), fans each job out in
// chunks of up to 100 recipients, passes every delivery through the limiter
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
//
// # Tasks
//
//	hush:job       a submitted job (task id: the job id). It delivers the
//	               first chunk itself and creates a hush:chunk task per
//	               further chunk. A job of one recipient books its slot in
//	               start.lua's round trip (ReserveBatchWith), speculatively:
//	               a re-run that finds the recipient settled gives a new
//	               booking back.
//	hush:chunk     recipients [k*100, (k+1)*100) of a job (task id
//	               "<job id>/c<k>"). It reads its recipients' states in one
//	               round trip (the job task's own chunk: inside start.lua),
//	               then, in waves of up to 25 recipients (each taking that
//	               many of the worker's Concurrency send permits), books a
//	               wave in one limiter round trip (ReserveBatch, Cluster
//	               safe) and sends those allowed now at once, concurrently;
//	               each send is checked right before the provider call and
//	               left to the delivery task (which rebooks) when more than
//	               100 ms after its slot. The chunk's device and final
//	               states are recorded in one script call (record.lua).
//	hush:delivery  one recipient (task id "<job id>/<recipient index>"),
//	               created by a chunk only for the recipients it does not
//	               settle: held back by the limiter (scheduled shortly before
//	               the booked slot), booked by an earlier run, late for their
//	               slot, or not delivered to every device (provider
//	               throttling, transient or permanent failures). It books
//	               again (the same slot, or a new one when late), waits,
//	               sends to the devices not yet settled, retries, expires.
//
// With HUSH_DELIVERY_SHARDS above 1, hush:delivery tasks go to the queue
// "<priority>.<fnv32a(user id) mod shards>" and hush:chunk tasks to
// "<priority>.<fnv32a(task id) mod shards>" (shards.go); jobs stay on the
// priority's queue.
//
// With a limiter that cannot book in batches (a Limiter without
// ReserveBatch), the job task creates one hush:delivery task per recipient
// instead.
package worker
