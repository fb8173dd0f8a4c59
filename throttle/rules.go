package throttle

import (
	"slices"
	"sort"
	"time"
)

// rules is a validated Policy in integer milliseconds, the form both
// implementations decide with.
type rules struct {
	n, w    []int64
	gap     int64
	horizon int64    // max(longest window, gap): older entries cannot matter
	names   []string // DeniedBy per rule index; the gap is the last one
}

func newRules(p Policy) (rules, error) {
	if err := p.Validate(); err != nil {
		return rules{}, err
	}
	r := rules{gap: p.MinGap.Milliseconds(), horizon: p.MinGap.Milliseconds()}
	for _, l := range p.Limits {
		w := l.Window.Milliseconds()
		r.n = append(r.n, int64(l.N))
		r.w = append(r.w, w)
		r.names = append(r.names, l.String())
		r.horizon = max(r.horizon, w)
	}
	r.names = append(r.names, gapName(p.MinGap))
	return r, nil
}

// copyPolicy returns p with its own Limits slice.
func copyPolicy(p Policy) Policy {
	p.Limits = slices.Clone(p.Limits)
	return p
}

// deniedName maps a rule index (-1: none) to Decision.DeniedBy.
func (r *rules) deniedName(i int) string {
	if i < 0 {
		return ""
	}
	return r.names[i]
}

// earliest returns the smallest feasible t >= now for the sorted entry
// times ts, and the rule that denies now (-1 when t == now; len(r.n) is the
// gap; only computed when blame is set or no entry lies after now).
// Entries at or before now-horizon may be present; they never matter.
//
// The common case (no entry after now) needs only counts and the N-th most
// recent entry per rule; with bookings after now the candidates now, e+W and
// e+gap are tested in ascending order.
func (r *rules) earliest(ts []int64, now int64, blame bool) (t int64, denied int) {
	if len(ts) == 0 || ts[len(ts)-1] <= now {
		return r.earliestPast(ts, now)
	}
	return r.earliestScan(ts, now, blame)
}

func (r *rules) earliestPast(ts []int64, now int64) (int64, int) {
	t, denied := now, -1
	for i := range r.n {
		c := int64(len(ts) - countUpTo(ts, now-r.w[i]))
		if c >= r.n[i] {
			if ti := ts[int64(len(ts))-r.n[i]] + r.w[i]; ti > t {
				t, denied = ti, i
			}
		}
	}
	if r.gap > 0 && len(ts) > 0 {
		if ti := ts[len(ts)-1] + r.gap; ti > t {
			t, denied = ti, len(r.n)
		}
	}
	return t, denied
}

func (r *rules) earliestScan(ts []int64, now int64, blame bool) (int64, int) {
	cand := []int64{now}
	for _, e := range ts {
		for _, w := range r.w {
			if e+w > now {
				cand = append(cand, e+w)
			}
		}
		if r.gap > 0 && e+r.gap > now {
			cand = append(cand, e+r.gap)
		}
	}
	slices.Sort(cand)
	cand = slices.Compact(cand)
	nrules := len(r.n) + 1
	first := func(rule int) int64 { // rule -1: all rules
		for _, c := range cand {
			if rule >= 0 {
				if r.ok(ts, c, rule) {
					return c
				}
				continue
			}
			ok := true
			for i := 0; i < nrules && ok; i++ {
				ok = r.ok(ts, c, i)
			}
			if ok {
				return c
			}
		}
		// Unreachable: the largest candidate (last entry + longest of the
		// windows and the gap) is always feasible.
		return cand[len(cand)-1]
	}
	t := first(-1)
	if t == now || !blame {
		return t, -1
	}
	denied, worst := -1, int64(0)
	for i := range nrules {
		if r.ok(ts, now, i) {
			continue
		}
		if ti := first(i); denied < 0 || ti > worst {
			denied, worst = i, ti
		}
	}
	return t, denied
}

// ok reports whether inserting t into ts keeps rule i (len(r.n): the gap).
func (r *rules) ok(ts []int64, t int64, i int) bool {
	m := len(ts)
	p := sort.Search(m, func(j int) bool { return ts[j] >= t }) // ts[:p] < t
	if i == len(r.n) {
		if r.gap == 0 {
			return true
		}
		return (p == 0 || t-ts[p-1] >= r.gap) && (p == m || ts[p]-t >= r.gap)
	}
	n, w := int(r.n[i]), r.w[i]
	if m < n {
		return true
	}
	// Quick answers from counts: every window containing t lies inside
	// (t-w, t+w); one of them is (t-w, t], another [t, t+w).
	from := countUpTo(ts, t-w)
	to := sort.Search(m, func(j int) bool { return ts[j] >= t+w }) // ts[:to] < t+w
	if to-from < n {
		return true
	}
	if countUpTo(ts, t)-from >= n || to-p >= n {
		return false
	}
	// L' = ts[:p] + [t] + ts[p:]; every N+1 consecutive entries of L' that
	// include index p must span at least w.
	at := func(j int) int64 {
		switch {
		case j < p:
			return ts[j]
		case j == p:
			return t
		default:
			return ts[j-1]
		}
	}
	for k := max(0, p+n-m); k <= min(n, p); k++ {
		if at(p-k+n)-at(p-k) < w {
			return false
		}
	}
	return true
}

// remaining is, per limit, N minus the entries in (now-W, now], floored at 0.
func (r *rules) remaining(ts []int64, now int64) []int {
	out := make([]int, len(r.n))
	upto := countUpTo(ts, now) // entries <= now
	for i := range r.n {
		c := int64(upto - countUpTo(ts, now-r.w[i]))
		out[i] = int(max(0, r.n[i]-c))
	}
	return out
}

// countUpTo returns the number of entries <= x in the sorted ts (the index of the
// first entry > x).
func countUpTo(ts []int64, x int64) int {
	return sort.Search(len(ts), func(j int) bool { return ts[j] > x })
}

func ms(t int64) time.Time { return time.UnixMilli(t) }
