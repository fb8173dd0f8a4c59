package worker

import "testing"

// TestJobOutcome: a job with no recipient pending says whether its pushes
// reached every recipient, some or none; until then it says nothing.
func TestJobOutcome(t *testing.T) {
	for _, tc := range []struct {
		name       string
		recipients int
		counts     map[string]int
		want       string
	}{
		{"pending", 2, map[string]int{stateDelivered: 1, "pending": 1}, ""},
		{"every one delivered", 2, map[string]int{stateDelivered: 2, "pending": 0}, OutcomeDelivered},
		{"the only delivery expired", 1, map[string]int{stateExpired: 1, "pending": 0}, OutcomeUndelivered},
		{"some delivered, some expired", 3, map[string]int{stateDelivered: 1, stateExpired: 2, "pending": 0}, OutcomePartlyDelivered},
		{"cancelled before any was sent", 2, map[string]int{stateCancelled: 2, "pending": 0}, OutcomeUndelivered},
		{"every user opted out", 2, map[string]int{stateOptedOut: 2, "pending": 0}, OutcomeUndelivered},
		{"some delivered, some opted out", 2, map[string]int{stateDelivered: 1, stateOptedOut: 1, "pending": 0}, OutcomePartlyDelivered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := jobOutcome(tc.recipients, tc.counts); got != tc.want {
				t.Errorf("jobOutcome(%d, %v) = %q, want %q", tc.recipients, tc.counts, got, tc.want)
			}
		})
	}
}
