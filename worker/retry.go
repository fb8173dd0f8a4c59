package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/worker/internal/decide"
)

// DeferError is returned by the delivery handler when the limiter booked a
// slot further away than the handler waits in place: the task goes back to
// Asynq and wakes shortly before the slot. It is not a failure.
type DeferError struct {
	Delay time.Duration
}

func (e *DeferError) Error() string { return fmt.Sprintf("deferred by the limiter for %s", e.Delay) }

// ThrottledError is returned when a provider asked hush to slow down. It is
// not a failure; the task is retried after RetryAfter: the provider's
// Retry-After, else the backoff for the provider refusals the delivery
// met.
type ThrottledError struct {
	RetryAfter time.Duration
	Reason     string
}

func (e *ThrottledError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("throttled by the provider (%s), retry after %s", e.Reason, e.RetryAfter)
	}
	return fmt.Sprintf("throttled by the provider (%s)", e.Reason)
}

// retryError hands a delivery back to be tried again after delay, which
// the worker computed from its own attempt count (Asynq's count stays 0 for
// non-failures, and hush counts attempts across chunks and tasks). It is a
// failure (a transient provider error): Asynq's stats count it.
type retryError struct {
	delay time.Duration
	cause error
}

func (e *retryError) Error() string {
	return fmt.Sprintf("%v, retry in %s", e.cause, e.delay.Round(time.Millisecond))
}

func (e *retryError) Unwrap() error { return e.cause }

// delayedCheck is Asynq's DelayedTaskCheckInterval.
const delayedCheck = 500 * time.Millisecond

// taskCheckInterval is Asynq's TaskCheckInterval: a worker that found every
// queue empty waits half of it to one and a half times it before asking
// again.
const taskCheckInterval = 250 * time.Millisecond

// isFailure tells Asynq which errors count as failures (consume a retry,
// count in the failed stats).
func isFailure(err error) bool {
	var d *DeferError
	var t *ThrottledError
	switch {
	case errors.As(err, &d), errors.As(err, &t):
		return false
	case errors.Is(err, context.Canceled):
		// The handler's context was cancelled: shutdown handing the task
		// back, or an operator's cancel. Not the delivery's fault.
		return false
	}
	return err != nil
}

// retryDelay is the Asynq RetryDelayFunc.
func retryDelay(n int, err error, _ *asynq.Task) time.Duration {
	var d *DeferError
	var t *ThrottledError
	var r *retryError
	switch {
	case errors.As(err, &d):
		return decide.DeferDelay(d.Delay)
	case errors.As(err, &t) && t.RetryAfter > 0:
		return retryWake(t.RetryAfter)
	case errors.As(err, &r):
		return retryWake(r.delay)
	case errors.Is(err, context.Canceled):
		return time.Second
	}
	return decide.Backoff(n)
}

// retryWake turns a retry's delay into the Asynq retry delay: Asynq
// truncates the wake-up time to whole seconds, so a second more makes sure
// the provider is not asked again before its Retry-After (or hush's
// backoff) has passed.
func retryWake(delay time.Duration) time.Duration { return delay + time.Second }
