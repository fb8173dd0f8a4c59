package worker

// Task type names, as Asynq and its tools (asynq CLI, asynqmon) show them.
const (
	// TypeJob is a submitted job, fanned out into deliveries.
	TypeJob = "hush:job"
	// TypeBatch is jobs submitted together (Client.EnqueueBatch), each
	// run as a hush:job task would run it.
	TypeBatch = "hush:batch"
	// TypeChunk is up to 100 recipients of a job, booked with one batched
	// limiter call and sent together.
	TypeChunk = "hush:chunk"
	// TypeDelivery is one recipient's delivery (all of its devices).
	TypeDelivery = "hush:delivery"
)
