package throttle

import "time"

// status builds a Status from the entries of each of a user's sets ("" the
// global set, else a category's; each oldest first, aged-out ones
// dropped): both implementations read the sets and let this decide, so
// their Status agree by construction.
func (c *compiled) status(sets map[string][]Entry, now int64, loc *time.Location) Status {
	ts := func(cat string) []int64 {
		out := make([]int64, len(sets[cat]))
		for i, e := range sets[cat] {
			out[i] = e.At.UnixMilli()
		}
		return out
	}
	at := ms(now)
	heldEntries(sets[""], &c.global, now)
	for _, name := range c.names {
		if k := c.cats[name]; k.hasSet() {
			heldEntries(sets[name], &k.r, now)
		}
	}
	s := Status{Now: at, Entries: sets[""], Remaining: c.global.remaining(ts(""), now), Counts: c.global.counts(ts(""), now), Quiet: c.quiet.Contains(at, loc)}
	s.NextAllowed = ms(c.next("", ts, now, loc))
	for _, name := range c.names {
		k := c.cats[name]
		cs := CategoryStatus{Name: name, Remaining: k.r.remaining(ts(name), now), Counts: k.r.counts(ts(name), now), Quiet: k.quiet.Contains(at, loc)}
		if k.hasSet() {
			cs.Entries = sets[name]
		}
		cs.NextAllowed = ms(c.next(name, ts, now, loc))
		s.Categories = append(s.Categories, cs)
	}
	return s
}

// next is the slot a new booking of category cat would get at now.
func (c *compiled) next(cat string, ts func(string) []int64, now int64, loc *time.Location) int64 {
	sets, quiet, err := c.plan(cat)
	if err != nil {
		return now // cat comes from c itself
	}
	bs := make([]bound, len(sets))
	for i, s := range sets {
		bs[i] = bound{r: s.r, ts: ts(s.cat)}
	}
	return nextOpen(bs, quiet, loc, now)
}

// heldEntries sets HeldBy on each of es (one set's entries, oldest first)
// after now: the first of r's rules that rules out the instant just before
// it among the other entries.
func heldEntries(es []Entry, r *rules, now int64) {
	ts := make([]int64, len(es))
	for k, e := range es {
		ts[k] = e.At.UnixMilli()
	}
	others := make([]int64, 0, len(ts))
	for k, t := range ts {
		if t <= now {
			continue
		}
		others = append(append(others[:0], ts[:k]...), ts[k+1:]...)
		for i := range len(r.n) + 1 {
			if !r.ok(others, t-1, i) {
				es[k].HeldBy = r.names[i]
				break
			}
		}
	}
}
