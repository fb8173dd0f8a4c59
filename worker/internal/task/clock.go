package task

import "time"

// Clock is the time the worker decides by: when a push is due, late or
// expired, when a cancellation's grace ends, how a limiter slot maps to a
// local instant. Tests and the fault simulation skew it per process.
//
// The limiter and pacer do not read it: they trust the Redis server's
// TIME, so skewing a process's clock moves only what it believes, never
// the slots every process agrees on.
type Clock interface {
	Now() time.Time
}

// SystemClock is the default Clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// NowOf is now's time, the system's when now is nil (a zero value built by
// a test).
func NowOf(now func() time.Time) time.Time {
	if now == nil {
		return time.Now()
	}
	return now()
}
