package worker

import "github.com/hushpush/hush/worker/internal/task"

// Task type names, as Asynq and its tools (asynq CLI, asynqmon) show them
// (task.TypeJob and its neighbours say what each is). The types only
// earlier builds make (hush:marked-chunk, hush:chunk) are in legacy.go.
const (
	TypeJob           = task.TypeJob
	TypeBatch         = task.TypeBatch
	TypeGroupingChunk = task.TypeGroupingChunk
	TypeDelivery      = task.TypeDelivery
	TypeHeld          = task.TypeHeld
	TypeWaitingJobs   = task.TypeWaitingJobs
	TypeWaitingSecond = task.TypeWaitingSecond
)
