// Package worker is hush's delivery pipeline: the only package that imports
// Asynq.
//
// It accepts jobs (Client.Enqueue and EnqueueBatch), fans each job out in
// chunks of up to 100 recipients, passes every delivery through the limiter
// (deferring it to the slot the limiter books), sends to every device through
// the Senders it is given, classifies the outcomes, records per-device and
// per-recipient progress so retries and re-runs are idempotent, emits events
// (the capped Redis stream hush:events and an optional webhook), and keeps
// Prometheus metrics (MetricsHandler) and its readiness (NotReady). The HTTP
// API in front of it is package worker/httpapi, which calls the Client,
// App, ResetThrottle, NotReady and MetricsHandler; the job answers
// (JobStatus, Accepted, CancelResult) are package wire's types. Process
// setup (configuration, the Redis connection, building senders, the HTTP
// listener) is package setup's; worker takes a Redis client and Options.
//
// It may import payload, wire, throttle, providers (the outcome taxonomy
// only, not the sender packages), its own parts under worker/internal
// (groupcommit: the one group commit), Asynq, go-redis and client_golang.
//
// Categories, quiet hours, send_at and collapse keys travel with each
// booking (requestOf in guard.go); cancellation and collapse reach a
// delivery through what it reads before it sends (guard.go explains how, and
// why no push leaves after a cancellation's answer).
//
// Where things are decided: what a booking means now (send, wait, defer,
// expire, drop, book again), what the path holding it does with that
// (routePlan) and what a recipient's device answers mean (done, retry,
// fail, stop) are plan, routePlan and judge in decide.go, used by every
// path; every slot is booked and given back in booking.go (book,
// release); device outcomes are recorded as the providers answer in
// outcomes.go; writes that arrive close together share one round trip
// through the one group commit, worker/internal/groupcommit (device
// outcomes, record.lua calls in scriptbatch.go, a Client's submissions in
// gather.go); task ids and limiter members are made in taskid.go.
//
// Redis keys besides Asynq's and the limiter's (each job's keys share the
// hash tag {<id>}, so they live on one Redis Cluster slot; an id starting
// with "}" gets a space before it, jobTag):
//
//	hush:job:{<id>}       hash: state, accepted_at, recipients, priority,
//	                      deadline, cursor (fan-out progress), deferrals,
//	                      one counter per final state (FinalStates),
//	                      cancelled_at once cancelled, app_wait once a
//	                      delivery waits for its app, and "h:<index>" ->
//	                      queue for each delivery held for its slot (so a
//	                      cancellation can wake it; gone once it is final)
//	hush:job:{<id>}:r     hash: recipient index -> final state
//	hush:job:{<id>}:dev   hash: "<recipient>/<device>" -> delivered |
//	                      token_invalid, "<recipient>/<device>/n" -> the
//	                      attempt a delivered device's push went out under
//	                      (a recipient of several devices), and per
//	                      recipient "<i>/a" (attempts made), "<i>/f"
//	                      (transient failures), "<i>/t" (when a provider
//	                      first throttled it, Unix ms), "<i>/p" (a paced
//	                      send time), "<i>/r" (provider refusals)
//	hush:done:{<tag>}:<width>:<bucket>
//	                      hash: job id -> a finished job's compact status;
//	                      a job's three keys above are deleted when it
//	                      finishes, and this entry answers for
//	                      HUSH_JOB_RETENTION (retire.go)
//	hush:events           stream of events (capped with MAXLEN ~)
//
// The limiter member of a delivery's first attempt is "<job id>/<index>",
// of attempt k > 0 "<job id>/<index>#<k>" (each retry books a slot of its
// own).
//
// # Tasks
//
// Task ids carry their kind, so no job id can take another task's id.
//
//	hush:job       a submitted job (task id "job:<id>"). It delivers the
//	               first chunk itself and creates a chunk task per further
//	               chunk: hush:grouping-chunk on the job's first run,
//	               hush:rereading-chunk on a re-run. A job of one recipient books its slot in
//	               start.lua's round trip (ReserveBatchWith), speculatively:
//	               a re-run that finds the recipient settled gives a new
//	               booking back.
//	hush:batch     up to 100 due jobs of one priority submitted together
//	               (task id "batch:<random id>"): EnqueueBatch, and Enqueue
//	               calls gathered while an earlier write was under way
//	               (gather.go). Each job runs as its own hush:job task would;
//	               its record names the batch task (start.lua's task), so a
//	               job carried by two batches runs in one only. Its
//	               single-recipient jobs start and book in groups of up to a
//	               wave (singleJobs: one round trip for all).
//	hush:grouping-chunk, hush:rereading-chunk
//	               recipients [k*100, (k+1)*100) of a job (task id
//	               "chunk:<id>/<k>"). Its run first marks the chunk started
//	               in the job record (chunk.lua). A hush:grouping-chunk task,
//	               made only by a job's first run, reads its recipients'
//	               states (and held markers) only when the mark was there (a
//	               re-run); a hush:rereading-chunk task (a job task's re-run
//	               made it) reads them always (the job task's own chunk:
//	               inside start.lua, and only when the job's task ran
//	               before). hush:marked-chunk and hush:chunk tasks, earlier
//	               builds' (legacy.go), run the same way but never hold
//	               back into hush:held tasks. Then, in waves of up to 25 recipients (each taking that
//	               many of the worker's Concurrency send permits), books a
//	               wave in one limiter round trip (ReserveBatch, Cluster
//	               safe) and sends those allowed now at once, concurrently;
//	               each send is checked right before the provider call and
//	               left to the delivery task (which rebooks) when more than
//	               100 ms after its slot. Each device's answer is recorded as
//	               it comes (outcomes.go); the recipients' final states are
//	               recorded in one script call (record.lua), pipelined with
//	               the calls of other chunks finishing within 2 ms
//	               (scriptbatch.go). Recipients
//	               the limiter holds back for longer than a wait in place
//	               go to hush:held tasks.
//	hush:held      recipients of chunk k the limiter held back, waking at
//	               Unix second s (task id "wait:<id>/<k>/<s>", scheduled
//	               for s: about a second before their slots), in the held
//	               queue beside its delivery queue (held-<queue>), which a
//	               second Asynq server with Options.HeldConcurrency slots
//	               serves ("held:<id>/<k>/<s>" tasks, made by processes
//	               without held queues, wait in the delivery queues). It finds
//	               their bookings, waits for each slot without holding a
//	               send permit, and sends; the job record's held marker of
//	               each recipient names the one task that owns it (held.go).
//	hush:waiting-second the groups of single-recipient jobs that runs of
//	               hush:batch (or hush:job) tasks held back to one held
//	               queue q and Unix second s (task id "second:<q>/<s>"):
//	               each run adds its group ("jobs:<task id>/<token>/<s>",
//	               the token new to each run) to the hash
//	               hush:jobs-at:{<q>/<s>}, which the task takes at s in
//	               one script call (waitingsecond.go). Each group's run marks
//	               itself (hush:held-run:{<id>}); the members' cancellation
//	               is read in one round trip, each job's slot taken from
//	               its group (or the booking of a job with a collapse key
//	               found), and each job sent and recorded as a hush:held
//	               task does (waitingjobs.go).
//	hush:waiting-jobs one such group in a task of its own (the task id is
//	               the group's): a group that joined its second after the
//	               second's task took it, one woken early by a
//	               cancellation or a collapse, or one a process without
//	               hush:waiting-second tasks made.
//	hush:delivery  one recipient (task id "delivery:<id>/<index>"), created
//	               by a chunk only for the recipients it does not settle:
//	               held back by the limiter by a hush:marked-chunk or
//	               hush:chunk task (scheduled shortly before the booked slot),
//	               due within a wait in place, booked by an earlier
//	               run, late for their slot, or not delivered to every
//	               device (provider throttling, transient or permanent
//	               failures), and those a held task gives up. It books
//	               again (the same slot, or a new one when late or for a
//	               retry), waits, sends to the devices not yet settled,
//	               retries, expires.
//
// With HUSH_DELIVERY_SHARDS above 1, hush:delivery tasks go to the queue
// "<priority>.<fnv32a(user id) mod shards>" and chunk tasks to
// "<priority>.<fnv32a(task id) mod shards>" (shards.go), as are
// hush:job and hush:batch tasks from a Client made WithShards.
package worker
