package worker

import (
	"time"

	"github.com/hushpush/hush/worker/internal/task"
)

// Clock is the time a Worker decides by (task.Clock). Options.Clock
// injects it; the default is the system clock. Three reads stay on the
// system clock because another party measures them in real time: a
// handler's stop before its Asynq deadline (handling), the dequeue gate's
// idle spans, and the TTL of a job's keys (task.TTLFor).
type Clock = task.Clock

// now is the time on the worker's clock.
func (w *Worker) now() time.Time {
	if w.clock == nil {
		return time.Now()
	}
	return w.clock.Now()
}

// now is the time on the store's clock.
func (s jobStore) now() time.Time { return task.NowOf(s.clock) }
