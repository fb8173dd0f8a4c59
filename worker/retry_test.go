package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/worker/internal/decide"
)

func TestRetryPolicy(t *testing.T) {
	transient := errors.New("503")
	tests := []struct {
		name      string
		err       error
		failure   bool
		delayFrom time.Duration
		delayTo   time.Duration
	}{
		{"deferral", fmt.Errorf("wrapped: %w", &DeferError{Delay: 10 * time.Second}), false, 9 * time.Second, 9 * time.Second},
		{"short deferral waits at least 1s", &DeferError{Delay: 1500 * time.Millisecond}, false, time.Second, time.Second},
		{"provider Retry-After, plus a second for Asynq's rounding", &ThrottledError{RetryAfter: 2 * time.Second}, false, 3 * time.Second, 3 * time.Second},
		{"provider throttling without Retry-After backs off", &ThrottledError{}, false, 500 * time.Millisecond, time.Second},
		{"hand-back on shutdown", fmt.Errorf("waiting: %w", context.Canceled), false, time.Second, time.Second},
		{"transient failure backs off", transient, true, 500 * time.Millisecond, time.Second},
		{"task timeout is a failure", context.DeadlineExceeded, true, 500 * time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isFailure(tt.err); got != tt.failure {
				t.Errorf("isFailure = %v, want %v", got, tt.failure)
			}
			d := retryDelay(0, tt.err, asynq.NewTask("x", nil))
			if d < tt.delayFrom || d > tt.delayTo {
				t.Errorf("retryDelay = %s, want in [%s, %s]", d, tt.delayFrom, tt.delayTo)
			}
		})
	}
	if d := decide.Backoff(30); d < 150*time.Second || d > 5*time.Minute {
		t.Errorf("decide.Backoff(30) = %s, want capped at 5m (at least half of it)", d)
	}
}

// TestRetryResultWaitsTheDelay: a retry's task result makes Asynq wait at
// least its delay, throttled or not, also when recording the retry failed
// (carryOut), so a provider's Retry-After holds.
func TestRetryResultWaitsTheDelay(t *testing.T) {
	for _, throttled := range []bool{true, false} {
		err := retryResult(next{delay: 3 * time.Second, throttled: throttled, cause: errors.New("429 (recording the retry failed: redis down)")})
		if got := retryDelay(0, err, nil); got < 3*time.Second {
			t.Errorf("throttled %v: Asynq waits %s, want at least the 3 s delay", throttled, got)
		}
		if isFailure(err) == throttled {
			t.Errorf("throttled %v: isFailure %v", throttled, isFailure(err))
		}
	}
}
