package throttle

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRuleCounts: per limit, what a status says was sent in the window
// ending now, what is booked after now, and how many more pushes now
// would fit once those bookings are kept.
func TestRuleCounts(t *testing.T) {
	const minute = 60_000
	perMinute := &rules{n: []int64{10}, w: []int64{minute}}
	for _, tc := range []struct {
		name string
		r    *rules
		ts   []int64
		now  int64
		want []RuleCount
	}{
		{"nothing", perMinute, nil, 5 * minute, []RuleCount{{Left: 10}}},
		{"sent only", perMinute, []int64{1, 2, 3}, 1000, []RuleCount{{Sent: 3, Left: 7}}},
		{"two booked in the minute", perMinute, []int64{minute + 10, minute + 20}, minute, []RuleCount{{Booked: 2, Left: 8}}},
		{"sent and booked", perMinute, []int64{100, 200, 300, 1100, 1200}, 1000, []RuleCount{{Sent: 3, Booked: 2, Left: 5}}},
		{"aged-out sends and far bookings do not count", perMinute, []int64{0, 3 * minute}, minute + 1, []RuleCount{{Left: 10}}},
		{"sends and bookings in no one window", &rules{n: []int64{2}, w: []int64{minute}},
			[]int64{1000, minute + 1100}, minute, []RuleCount{{Sent: 1, Booked: 1, Left: 1}}},
		{"full", &rules{n: []int64{2}, w: []int64{minute}},
			[]int64{1000, 2000, 3000}, 2500, []RuleCount{{Sent: 2, Booked: 1}}},
		{"two limits", &rules{n: []int64{3, 5}, w: []int64{1000, minute}},
			[]int64{100, 500, 1500, 2500}, 1000, []RuleCount{{Sent: 2, Booked: 1, Left: 1}, {Sent: 2, Booked: 2, Left: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.r.counts(tc.ts, tc.now)); d != "" {
				t.Errorf("counts (-want +got):\n%s", d)
			}
		})
	}
}
