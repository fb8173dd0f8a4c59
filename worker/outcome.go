package worker

import (
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker/internal/task"
)

// The values of JobStatus.Outcome: what a job with no recipient pending
// came to, whatever its state (done or cancelled).
const (
	OutcomeDelivered       = wire.OutcomeDelivered
	OutcomePartlyDelivered = wire.OutcomePartlyDelivered
	OutcomeUndelivered     = wire.OutcomeUndelivered
)

// jobOutcome is the Outcome of a job with recipients and counts (per
// final state, and "pending"): empty while a recipient is pending.
func jobOutcome(recipients int, counts map[string]int) string {
	delivered := counts[task.Delivered]
	switch {
	case counts["pending"] > 0:
		return ""
	case delivered >= recipients && recipients > 0:
		return OutcomeDelivered
	case delivered > 0:
		return OutcomePartlyDelivered
	}
	return OutcomeUndelivered
}
