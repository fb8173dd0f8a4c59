package worker

// Task type names, as Asynq and its tools (asynq CLI, asynqmon) show them.
// None is a prefix of another: Asynq's ServeMux hands a task to the
// longest pattern its type starts with, so a process of an earlier version
// would run a new "hush:chunk..." type as a hush:chunk task
// (TestTaskTypesArePrefixFree).
const (
	// TypeJob is a submitted job, fanned out into deliveries.
	TypeJob = "hush:job"
	// TypeBatch is jobs submitted together (Client.EnqueueBatch), each
	// run as a hush:job task would run it.
	TypeBatch = "hush:batch"
	// TypeChunk is up to 100 recipients of a job, booked with one batched
	// limiter call and sent together. A job's first run makes these; each
	// run marks the chunk started in the job's record before it sends, so
	// a first run reads no states (chunk.lua).
	TypeChunk = "hush:marked-chunk"
	// typeChunkUnmarked is a chunk task that reads its states on every
	// run: what a job task's re-run makes, and what earlier versions made
	// (their runs did not mark).
	typeChunkUnmarked = "hush:chunk"
	// TypeDelivery is one recipient's delivery (all of its devices).
	TypeDelivery = "hush:delivery"
)
