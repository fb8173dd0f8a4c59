package demo

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/throttle"
)

func TestBlameRule(t *testing.T) {
	policy, err := throttle.ParsePolicy("3/10s", "2s")
	if err != nil {
		t.Fatal(err)
	}
	if policy.Categories, err = throttle.ParseCategories("marketing=1/10s@5s; transactional=none global=off; calm=none quiet=off"); err != nil {
		t.Fatal(err)
	}
	// Quiet from 12:00:03 to 12:00:06 UTC.
	policy.Quiet = throttle.Quiet{From: 12*time.Hour + 3*time.Second, To: 12*time.Hour + 6*time.Second}
	at := func(s float64) time.Time {
		return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC).Add(time.Duration(s * float64(time.Second)))
	}
	ats := func(ss ...float64) []time.Time {
		var ts []time.Time
		for _, s := range ss {
			ts = append(ts, at(s))
		}
		return ts
	}
	tests := []struct {
		name        string
		cat         string
		t           float64
		global, own []time.Time
		tol         time.Duration
		want        string
	}{
		{"where the quiet hours end", "", 6, ats(0, 2), nil, 0, "quiet hours"},
		{"quiet hours first on a tie", "", 6, ats(4), nil, 0, "quiet hours"},
		{"a send just after they end", "", 6.05, nil, nil, jitter, "quiet hours"},
		{"a send inside them is not held by them", "", 5.9, nil, nil, jitter, blameUnknown},
		{"a category without quiet hours", "calm", 6, ats(4), nil, 0, "min-gap 2s"},
		{"global window", "", 10.5, ats(0.5, 2.5, 6), nil, 0, "3/10s"},
		{"global gap", "", 8, ats(0, 6), nil, 0, "min-gap 2s"},
		{"category window before the global rules", "marketing", 10.5, ats(0.5, 2.5, 8.5), ats(0.5), 0, "marketing 1/10s"},
		{"category keeps the global rules", "marketing", 10.5, ats(2.5, 8.5), ats(2), 0, "min-gap 2s"},
		{"category gap", "marketing", 13, ats(0), ats(8), 0, "marketing min-gap 5s"},
		{"global=off ignores the global rules", "transactional", 8, ats(0, 6), nil, 0, blameUnknown},
		{"within the tolerance", "", 8.08, ats(6), nil, jitter, "min-gap 2s"},
		{"outside the tolerance", "", 8.2, ats(6), nil, jitter, blameUnknown},
		{"nothing lines up", "", 9, ats(0.2), nil, 0, blameUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := blameRule(policy, tt.cat, at(tt.t), tt.global, tt.own, tt.tol); got != tt.want {
				t.Errorf("blameRule(%q, +%gs) = %q, want %q", tt.cat, tt.t, got, tt.want)
			}
		})
	}
}

func TestPlanBurstCategories(t *testing.T) {
	cats, err := throttle.ParseCategories(CategoriesDefault)
	if err != nil {
		t.Fatal(err)
	}
	// What each push of u-1 and u-2 is: category, afterBooked, at.
	describe := func(plan []*burstPush) []string {
		var out []string
		for _, p := range plan {
			if p.user == "u-1" || p.user == "u-2" {
				out = append(out, fmt.Sprintf("%s #%d %q after %d at %s", p.user, p.n, p.category, p.afterBooked, p.at))
			}
		}
		return out
	}
	tests := []struct {
		name   string
		pushes int
		cats   map[string]throttle.Category
		at     time.Duration
		want   []string
	}{
		{"categories and quiet hours", 3, cats, 4 * time.Second, []string{
			`u-1 #1 "marketing" after 0 at 0s`, `u-1 #2 "marketing" after 0 at 0s`, `u-1 #3 "" after 2 at 0s`,
			`u-1 #4 "transactional" after 0 at 4s`,
			`u-2 #1 "" after 0 at 0s`, `u-2 #2 "" after 0 at 0s`, `u-2 #3 "" after 0 at 0s`}},
		{"one push", 1, cats, 4 * time.Second, []string{
			`u-1 #1 "marketing" after 0 at 0s`, `u-1 #2 "transactional" after 0 at 4s`, `u-2 #1 "" after 0 at 0s`}},
		{"no quiet hours: no transactional push", 2, cats, 0, []string{
			`u-1 #1 "marketing" after 0 at 0s`, `u-1 #2 "marketing" after 0 at 0s`,
			`u-2 #1 "" after 0 at 0s`, `u-2 #2 "" after 0 at 0s`}},
		{"no categories", 2, nil, 4 * time.Second, []string{
			`u-1 #1 "" after 0 at 0s`, `u-1 #2 "" after 0 at 0s`, `u-2 #1 "" after 0 at 0s`, `u-2 #2 "" after 0 at 0s`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, describe(planBurst(4, tt.pushes, tt.cats, tt.at))); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
