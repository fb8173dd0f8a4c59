package task

import (
	"time"

	"github.com/hushpush/hush/payload"
)

// RecordTTL is how long a job's records outlive its acceptance (or its
// deadline, when that is later) when the job never finishes; a finished
// job's records are retired at once.
const RecordTTL = 7 * 24 * time.Hour

// RetainFrom is when a job's records start their RecordTTL: its
// acceptance, or its send_at when that is later.
func RetainFrom(accepted time.Time, c *payload.Content) time.Time {
	if at := c.NotBefore(); at.After(accepted) {
		return at
	}
	return accepted
}

// TTLFor is the TTL of a job's keys; accepted is RetainFrom's answer.
func TTLFor(accepted, deadline time.Time) time.Duration {
	end := accepted.Add(RecordTTL)
	if d := deadline.Add(24 * time.Hour); !deadline.IsZero() && d.After(end) {
		end = d
	}
	return max(time.Until(end), time.Minute)
}

// RetryMargin is how long before its records' end a delivery's last retry
// runs, so it still finds them (Asynq may start it seconds late).
const RetryMargin = time.Hour

// RetryUntil is the latest instant a retry of a delivery may run: its
// deadline (its records outlive it: TTLFor), or, without one, the end of
// its records' life (RecordTTL from retained, RetainFrom's answer) less
// RetryMargin.
func RetryUntil(retained, deadline time.Time) time.Time {
	if !deadline.IsZero() {
		return deadline
	}
	return retained.Add(RecordTTL - RetryMargin)
}
