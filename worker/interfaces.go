package worker

import "github.com/hushpush/hush/worker/internal/task"

// The interfaces a Worker is built with (task's say what each does).
type (
	Limiter       = task.Limiter
	Pacer         = task.Pacer
	ThrottleAdmin = task.ThrottleAdmin
	Sender        = task.Sender
)
