package worker

import (
	"testing"

	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// TestJobOutcome: a job with no recipient pending says whether its pushes
// reached every recipient, some or none; until then it says nothing.
func TestJobOutcome(t *testing.T) {
	for _, tc := range []struct {
		name       string
		recipients int
		counts     map[string]int
		want       string
	}{
		{"pending", 2, map[string]int{task.Delivered: 1, "pending": 1}, ""},
		{"every one delivered", 2, map[string]int{task.Delivered: 2, "pending": 0}, OutcomeDelivered},
		{"the only delivery expired", 1, map[string]int{task.Expired: 1, "pending": 0}, OutcomeUndelivered},
		{"some delivered, some expired", 3, map[string]int{task.Delivered: 1, task.Expired: 2, "pending": 0}, OutcomePartlyDelivered},
		{"cancelled before any was sent", 2, map[string]int{task.Cancelled: 2, "pending": 0}, OutcomeUndelivered},
		{"every user opted out", 2, map[string]int{task.OptedOut: 2, "pending": 0}, OutcomeUndelivered},
		{"some delivered, some opted out", 2, map[string]int{task.Delivered: 1, task.OptedOut: 1, "pending": 0}, OutcomePartlyDelivered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := store.JobOutcome(tc.recipients, tc.counts); got != tc.want {
				t.Errorf("store.JobOutcome(%d, %v) = %q, want %q", tc.recipients, tc.counts, got, tc.want)
			}
		})
	}
}
