package task

// Task type names, as Asynq and its tools (asynq CLI, asynqmon) show them.
// None is a prefix of another: Asynq's ServeMux hands a task to the
// longest pattern its type starts with, so a process without a type's
// handler would run a "hush:chunk..." type as a hush:chunk task. The
// types only earlier builds make are the worker's legacy.go.
const (
	// TypeJob is a submitted job, fanned out into deliveries.
	TypeJob = "hush:job"
	// TypeBatch is jobs submitted together, each run as a hush:job task
	// would run it.
	TypeBatch = "hush:batch"
	// TypeGroupingChunk is up to ChunkSize recipients of a job, booked
	// together and sent together. A job's first run makes these; each run
	// marks the chunk started in the job's record before it sends, so a
	// first run reads no states.
	TypeGroupingChunk = "hush:grouping-chunk"
	// TypeRereadingChunk is a chunk task that reads its states on every
	// run: what a job task's re-run makes.
	TypeRereadingChunk = "hush:rereading-chunk"
	// TypeDelivery is one recipient's delivery (all of its devices).
	TypeDelivery = "hush:delivery"
	// TypeHeld is recipients of a chunk the limiter held back, woken
	// together at one second, in a held queue.
	TypeHeld = "hush:held"
	// TypeWaitingJobs is single-recipient jobs of one batch (or job) task
	// the limiter held back, woken together at one second. It does not
	// start with "hush:job" or "hush:held".
	TypeWaitingJobs = "hush:waiting-jobs"
	// TypeWaitingSecond is the hush:waiting-jobs groups of one held queue
	// and second, woken together. It starts with no other type's name.
	TypeWaitingSecond = "hush:waiting-second"
)
