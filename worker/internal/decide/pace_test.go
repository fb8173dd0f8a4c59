package decide

import (
	"testing"
	"time"
)

// TestPaceVerdict: a recipient is held when its earliest turn is more than
// PaceSlack after its slot, or at or after its deadline.
func TestPaceVerdict(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for _, tc := range []struct {
		name               string
		turn, deadline     time.Time
		slotless, wantHold bool
	}{
		{name: "turn at the slot", turn: at},
		{name: "turn within the slack", turn: at.Add(PaceSlack)},
		{name: "turn past the slack", turn: at.Add(PaceSlack + ms), wantHold: true},
		{name: "no slot: any turn", turn: at.Add(time.Hour), slotless: true},
		{name: "turn before the deadline", turn: at.Add(20 * ms), deadline: at.Add(25 * ms)},
		{name: "turn at the deadline", turn: at.Add(25 * ms), deadline: at.Add(25 * ms), wantHold: true},
		{name: "turn after the deadline, within the slack", turn: at.Add(60 * ms), deadline: at.Add(25 * ms), wantHold: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slot := at
			if tc.slotless {
				slot = time.Time{}
			}
			if got := PaceVerdict(slot, tc.turn, tc.turn, tc.deadline); got != tc.wantHold {
				t.Errorf("hold: want %v, got %v", tc.wantHold, got)
			}
		})
	}
}
