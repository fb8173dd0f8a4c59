package demo

import (
	"cmp"
	"slices"
	"time"

	"github.com/hushpush/hush/throttle"
)

// The demo's reading of its worker's rules: which of them a push keeps,
// and which one put its slot where it is.

// keepsGlobal reports whether pushes of category cat ("" for none) keep
// the global rules.
func keepsGlobal(p throttle.Policy, cat string) bool {
	k, ok := p.Categories[cat]
	return !ok || !k.SkipGlobal
}

// quietOf is the quiet hours pushes of category cat keep: the category's
// own, else the global ones.
func quietOf(p throttle.Policy, cat string) throttle.Quiet {
	if k, ok := p.Categories[cat]; ok && k.Quiet != nil {
		return *k.Quiet
	}
	return p.Quiet
}

// inQuiet reports whether t is inside q, read in the demo's zone (UTC).
func inQuiet(q throttle.Quiet, t time.Time) bool { return q.Contains(t, time.UTC) }

// blameRule names what put a push of category cat at t, given the other
// entries of the sets it is counted in (global: the global rules', own:
// its category's): the quiet hours when they end at t, else a window rule
// when some entry is exactly one window before t, else a gap when some
// entry is exactly the gap before t (within tol). The category's rules
// come before the global ones, windows before gaps, as in the limiter's
// DeniedBy on a tie.
func blameRule(p throttle.Policy, cat string, t time.Time, global, own []time.Time, tol time.Duration) string {
	if q := quietOf(p, cat); !q.Off() && inQuiet(q, t.Add(-max(tol, time.Millisecond))) && !inQuiet(q, t) {
		return blameQuiet
	}
	near := func(others []time.Time, d time.Duration) bool {
		for _, o := range others {
			if diff := t.Sub(o.Add(d)); diff <= tol && diff >= -tol {
				return true
			}
		}
		return false
	}
	byWindow := func(ls []throttle.Limit) []throttle.Limit {
		ls = slices.Clone(ls)
		slices.SortStableFunc(ls, func(a, b throttle.Limit) int { return cmp.Compare(b.Window, a.Window) })
		return ls
	}
	k, isCat := p.Categories[cat]
	if isCat {
		for _, l := range byWindow(k.Limits) {
			if near(own, l.Window) {
				return cat + " " + l.String()
			}
		}
	}
	if keepsGlobal(p, cat) {
		for _, l := range byWindow(p.Limits) {
			if near(global, l.Window) {
				return l.String()
			}
		}
	}
	if isCat && k.MinGap > 0 && near(own, k.MinGap) {
		return cat + " " + throttle.Policy{MinGap: k.MinGap}.String()
	}
	if keepsGlobal(p, cat) && p.MinGap > 0 && near(global, p.MinGap) {
		return throttle.Policy{MinGap: p.MinGap}.String()
	}
	return blameUnknown
}

const (
	// blameQuiet is blameRule's answer for a slot where the quiet hours
	// end.
	blameQuiet = "quiet hours"
	// blameUnknown is blameRule's answer when no rule lines up.
	blameUnknown = "the limiter"
)
