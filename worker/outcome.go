package worker

// The values of JobStatus.Outcome: what a job with no recipient pending
// came to, whatever its state (done or cancelled).
const (
	// OutcomeDelivered: every recipient was delivered.
	OutcomeDelivered = "delivered"
	// OutcomePartlyDelivered: some recipients were delivered, the others
	// ended in another final state (expired, failed, collapsed, ...).
	OutcomePartlyDelivered = "partly_delivered"
	// OutcomeUndelivered: no recipient was delivered.
	OutcomeUndelivered = "undelivered"
)

// jobOutcome is the Outcome of a job with recipients and counts (per
// final state, and "pending"): empty while a recipient is pending.
func jobOutcome(recipients int, counts map[string]int) string {
	delivered := counts[stateDelivered]
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
