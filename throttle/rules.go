package throttle

import (
	"slices"
	"sort"
	"time"
)

// rules is one validated rule set (the global rules, or a category's own)
// in integer milliseconds, the form both implementations decide with.
type rules struct {
	n, w    []int64
	gap     int64
	horizon int64    // max(longest window, gap, 1): older entries cannot matter
	names   []string // DeniedBy per rule index; the gap is the last one
}

// newRuleSet compiles limits and gap; prefix goes before every rule's
// name (a category's "marketing ").
func newRuleSet(limits []Limit, gap time.Duration, prefix string) rules {
	r := rules{gap: gap.Milliseconds(), horizon: max(gap.Milliseconds(), 1)}
	for _, l := range limits {
		w := l.Window.Milliseconds()
		r.n = append(r.n, int64(l.N))
		r.w = append(r.w, w)
		r.names = append(r.names, prefix+l.String())
		r.horizon = max(r.horizon, w)
	}
	r.names = append(r.names, prefix+gapName(gap))
	return r
}

// copyPolicy returns p with its own Limits slice and Categories map.
func copyPolicy(p Policy) Policy {
	p.Limits = slices.Clone(p.Limits)
	if p.Categories != nil {
		cats := make(map[string]Category, len(p.Categories))
		for name, k := range p.Categories {
			k.Limits = slices.Clone(k.Limits)
			if k.Quiet != nil {
				q := *k.Quiet
				k.Quiet = &q
			}
			cats[name] = k
		}
		p.Categories = cats
	}
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

// earliestScan handles bookings after now. The answer is now or a
// candidate e+d (an entry plus a window or the gap); candidates are visited
// in ascending order without listing them, and a candidate that breaks a
// rule skips the whole run of times that rule rules out (skip), so a user
// booked days ahead costs a walk over the bookings, not a search per
// candidate.
func (r *rules) earliestScan(ts []int64, now int64, blame bool) (int64, int) {
	t := r.firstFeasible(ts, now, -1)
	if t == now || !blame {
		return t, -1
	}
	denied, worst := -1, int64(0)
	for i := range len(r.n) + 1 {
		if r.ok(ts, now, i) {
			continue
		}
		if ti := r.firstFeasible(ts, now, i); denied < 0 || ti > worst {
			denied, worst = i, ti
		}
	}
	return t, denied
}

// firstFeasible returns the smallest of now and the candidates after it at
// which rule holds (rule -1: every rule).
func (r *rules) firstFeasible(ts []int64, now int64, rule int) int64 {
	c := now
	for {
		lo := c // every t in [c, lo) breaks a rule
		for i := range len(r.n) + 1 {
			if (rule < 0 || rule == i) && !r.ok(ts, c, i) {
				lo = max(lo, r.skip(ts, c, i))
			}
		}
		if lo == c {
			return c
		}
		next, found := r.nextCandidate(ts, lo)
		if !found {
			// Unreachable: the largest candidate (last entry + longest of
			// the windows and the gap) is always feasible, and skip never
			// passes a feasible time.
			return lo
		}
		c = next
	}
}

// skip returns the end of the run of times from c on that break rule i,
// given that c breaks it: every t in [c, skip) breaks it too.
//
// Inserting t breaks the gap when some entry e has t in (e-gap, e+gap). It
// breaks n/w when some n consecutive entries ts[k..k+n-1] spanning less
// than w would hold t within w as well: t in (ts[k+n-1]-w, ts[k]+w). Both
// kinds of intervals start and end in entry order, so the run is found by
// walking them from the first that can hold c, extending the end while the
// next interval starts before it.
func (r *rules) skip(ts []int64, c int64, i int) int64 {
	end := c + 1
	if i == len(r.n) {
		for _, e := range ts[countUpTo(ts, c-r.gap):] {
			if e-r.gap >= end {
				break
			}
			end = max(end, e+r.gap)
		}
		return end
	}
	n, w := int(r.n[i]), r.w[i]
	for k := countUpTo(ts, c-w); k+n-1 < len(ts); k++ {
		last := ts[k+n-1]
		if last-w >= end {
			break
		}
		if last-ts[k] < w {
			end = max(end, ts[k]+w)
		}
	}
	return end
}

// nextCandidate returns the smallest candidate e+d >= lo (d a window or the
// gap).
func (r *rules) nextCandidate(ts []int64, lo int64) (int64, bool) {
	best, found := int64(0), false
	try := func(d int64) {
		k := sort.Search(len(ts), func(j int) bool { return ts[j]+d >= lo })
		if k < len(ts) && (!found || ts[k]+d < best) {
			best, found = ts[k]+d, true
		}
	}
	for _, w := range r.w {
		try(w)
	}
	if r.gap > 0 {
		try(r.gap)
	}
	return best, found
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

// bound is one set's entries (sorted times) and the rules decided over
// them.
type bound struct {
	r  *rules
	ts []int64
}

// earliestAll returns the smallest t >= start (start >= now) at which
// every bound keeps its rules and that lies in none of the quiet
// intervals (sorted, disjoint). This is Reserve's search.
//
// With no entry after now in any set, every rule's feasible instants form
// a ray, so the answer is the latest of start and each set's
// earliestPast, moved past the quiet interval it lands in. Otherwise the
// candidates are tested in ascending order: at c, each broken rule's run
// of broken instants [c, skip) and the quiet interval holding c are
// skipped at once; their farthest end is the next candidate, and the
// first candidate nothing skips is the answer.
func earliestAll(bs []bound, quiet []interval, now, start int64) int64 {
	past := true
	for _, b := range bs {
		if n := len(b.ts); n > 0 && b.ts[n-1] > now {
			past = false
		}
	}
	if past {
		t := start
		for _, b := range bs {
			ti, _ := b.r.earliestPast(b.ts, now)
			t = max(t, ti)
		}
		for _, q := range quiet {
			if q.s <= t && t < q.e {
				t = q.e
			}
		}
		return t
	}
	c := start
	for {
		lo := c // every t in [c, lo) breaks a rule or is quiet
		for _, b := range bs {
			for i := range len(b.r.n) + 1 {
				if !b.r.ok(b.ts, c, i) {
					lo = max(lo, b.r.skip(b.ts, c, i))
				}
			}
		}
		k := sort.Search(len(quiet), func(j int) bool { return quiet[j].e > c })
		if k < len(quiet) && quiet[k].s <= c {
			lo = max(lo, quiet[k].e)
		}
		if lo == c {
			return c
		}
		c = lo
	}
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

// counts is, per limit, the entries in the window ending now (sent), those
// after now inside the window starting now (booked), and how many more
// pushes now would fit with every entry kept: N minus the fullest window
// (t-W, t] that contains now, floored at 0.
func (r *rules) counts(ts []int64, now int64) []RuleCount {
	out := make([]RuleCount, len(r.n))
	upto := countUpTo(ts, now) // entries <= now
	for i := range r.n {
		w := r.w[i]
		sent := upto - countUpTo(ts, now-w)
		ahead := countUpTo(ts, now+w-1) // entries < now+w
		fullest := sent                 // the window ending now
		for _, e := range ts[upto:ahead] {
			fullest = max(fullest, countUpTo(ts, e)-countUpTo(ts, e-w)) // the window ending at e
		}
		out[i] = RuleCount{Sent: sent, Booked: ahead - upto, Left: int(max(0, r.n[i]-int64(fullest)))}
	}
	return out
}

// countUpTo returns the number of entries <= x in the sorted ts (the index of the
// first entry > x).
func countUpTo(ts []int64, x int64) int {
	return sort.Search(len(ts), func(j int) bool { return ts[j] > x })
}

func ms(t int64) time.Time { return time.UnixMilli(t) }
