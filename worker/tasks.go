package worker

// Task type names, as Asynq and its tools (asynq CLI, asynqmon) show them.
const (
	// TypeJob is a submitted job, fanned out into deliveries.
	TypeJob = "hush:job"
	// TypeChunk is up to 100 recipients of a job, booked with one batched
	// limiter call and sent together.
	TypeChunk = "hush:chunk"
	// TypeDelivery is one recipient's delivery (all of its devices).
	TypeDelivery = "hush:delivery"
)
