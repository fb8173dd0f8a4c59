package worker

// Task type names, as Asynq and its tools (asynq CLI, asynqmon) show them.
// None is a prefix of another: Asynq's ServeMux hands a task to the
// longest pattern its type starts with, so a process without a type's
// handler would run a "hush:chunk..." type as a hush:chunk task
// (TestTaskTypesArePrefixFree). The types only earlier builds make
// (hush:marked-chunk, hush:chunk) are in legacy.go.
const (
	// TypeJob is a submitted job, fanned out into deliveries.
	TypeJob = "hush:job"
	// TypeBatch is jobs submitted together (Client.EnqueueBatch), each
	// run as a hush:job task would run it.
	TypeBatch = "hush:batch"
	// TypeGroupingChunk is up to 100 recipients of a job, booked with one batched
	// limiter call and sent together. A job's first run makes these; each
	// run marks the chunk started in the job's record before it sends, so
	// a first run reads no states (chunk.lua), and it holds the recipients
	// the limiter defers back in hush:held tasks (held.go).
	TypeGroupingChunk = "hush:grouping-chunk"
	// typeRereadingChunk is a chunk task that reads its states on every
	// run and holds back into hush:held tasks: what a job task's re-run
	// makes.
	typeRereadingChunk = "hush:rereading-chunk"
	// TypeDelivery is one recipient's delivery (all of its devices).
	TypeDelivery = "hush:delivery"
	// TypeHeld is recipients of a chunk that the limiter held back, woken
	// together at one second, shortly before their slots (held.go), in a
	// held queue ("wait:" task ids; "held:" ones in delivery queues are
	// an earlier build's: legacy.go).
	TypeHeld = "hush:held"
	// TypeWaitingJobs is single-recipient jobs of one batch (or job) task
	// that the limiter held back, woken together at one second
	// (waitingjobs.go). It does not start with "hush:job" or "hush:held", so a
	// process without its handler does not run it as one of those.
	TypeWaitingJobs = "hush:waiting-jobs"
	// TypeWaitingSecond is the hush:waiting-jobs groups of one held queue and
	// second, woken together (waitingsecond.go). It starts with no other
	// type's name: a process without its handler finds none and retries
	// it, leaving it to the processes that have one.
	TypeWaitingSecond = "hush:waiting-second"
)
