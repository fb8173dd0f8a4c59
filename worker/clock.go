package worker

import "time"

// Clock is the time a Worker decides by: when a push is due, late or
// expired, when a cancellation's grace ends, how a limiter slot maps to
// a local instant. Options.Clock injects it (tests and the fault
// simulation skew it per process); the default is the system clock.
//
// The limiter and pacer do not read it: they trust the Redis server's
// TIME (throttle's doc), so skewing a Worker's clock moves only what this
// process believes, never the slots every process agrees on. Three reads
// stay on the system clock because another party measures them in real
// time: a handler's stop before its Asynq deadline (handling), the
// dequeue gate's idle spans, and the TTL of a job's keys (ttlFor).
type Clock interface {
	Now() time.Time
}

// systemClock is the default Clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// nowOf is now's time, the system's when now is nil (a zero store or
// Worker built by a test).
func nowOf(now func() time.Time) time.Time {
	if now == nil {
		return time.Now()
	}
	return now()
}

// now is the time on the worker's clock.
func (w *Worker) now() time.Time {
	if w.clock == nil {
		return time.Now()
	}
	return w.clock.Now()
}

// now is the time on the store's clock.
func (s store) now() time.Time { return nowOf(s.clock) }
