package throttle

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// MaxCategoryLen is the longest category name.
const MaxCategoryLen = 32

// ValidCategory reports whether name is a category name: 1 to
// MaxCategoryLen characters of a-z, 0-9, _ and -. (It is also the rule for
// a job's category, so the two always agree; keys built from it cannot
// collide.)
func ValidCategory(name string) bool {
	if name == "" || len(name) > MaxCategoryLen {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// compiled is a validated Policy in the form both implementations decide
// with.
type compiled struct {
	global rules
	quiet  Quiet
	cats   map[string]*category
	names  []string // category names, sorted
}

// category is one compiled Category.
type category struct {
	name string
	// r are its own rules (none: count 0, gap 0, horizon 1).
	r rules
	// own: it has rules of its own, so its bookings are kept in a set of
	// its own.
	own        bool
	skipGlobal bool
	required   bool  // Category.Required: never opted out
	quiet      Quiet // its quiet hours: its own or the policy's
}

// set is one sorted set a booking is kept in: the user's global set (cat
// "") or a category's, with the rules decided over it.
type set struct {
	cat string
	r   *rules
}

func compile(p Policy) (compiled, error) {
	if err := p.Validate(); err != nil {
		return compiled{}, err
	}
	c := compiled{global: newRuleSet(p.Limits, p.MinGap, ""), quiet: p.Quiet, cats: map[string]*category{}}
	for _, name := range slices.Sorted(maps.Keys(p.Categories)) {
		pc := p.Categories[name]
		k := &category{name: name, r: newRuleSet(pc.Limits, pc.MinGap, name+" "), own: len(pc.Limits) > 0 || pc.MinGap > 0,
			skipGlobal: pc.SkipGlobal, required: pc.Required, quiet: p.Quiet}
		if pc.Quiet != nil {
			k.quiet = *pc.Quiet
		}
		c.cats[name] = k
		c.names = append(c.names, name)
		if k.own && !k.skipGlobal {
			// Its bookings are in the global set too, and Reserve looks
			// for an existing member there: the global set keeps them as
			// long as the category's does, so a member never lingers in
			// one set after leaving the other.
			c.global.horizon = max(c.global.horizon, k.r.horizon)
		}
	}
	return c, nil
}

// hasSet reports whether category k keeps a set of its own: it has rules
// of its own, or skips the global set (then its bookings live only there).
func (k *category) hasSet() bool { return k.own || k.skipGlobal }

// plan returns the sets a booking of category cat ("" none) is kept in,
// its home set first (where Reserve looks for an existing member), and
// the quiet hours it keeps.
func (c *compiled) plan(cat string) ([]set, Quiet, error) {
	if cat == "" {
		return []set{{cat: "", r: &c.global}}, c.quiet, nil
	}
	k, ok := c.cats[cat]
	if !ok {
		return nil, Quiet{}, fmt.Errorf("%w %q", ErrUnknownCategory, cat)
	}
	var sets []set
	if !k.skipGlobal {
		sets = append(sets, set{cat: "", r: &c.global})
	}
	if k.hasSet() {
		sets = append(sets, set{cat: cat, r: &k.r})
	}
	return sets, k.quiet, nil
}

// optOutable reports whether a request q's user's opt-outs apply to it:
// it names a category that is not Required, and is not Critical.
func (c *compiled) optOutable(q Request) bool {
	k := c.cats[q.Category]
	return k != nil && !k.required && !q.Critical
}

// allSets are every set a user may have, the global one first: what
// Release, Status and Reset touch.
func (c *compiled) allSets() []set {
	out := []set{{cat: "", r: &c.global}}
	for _, name := range c.names {
		if k := c.cats[name]; k.hasSet() {
			out = append(out, set{cat: name, r: &k.r})
		}
	}
	return out
}

// window returns the quiet intervals a booking starting at start (ms) may
// meet, and the latest slot it may get: notAfter (ms, 0 none), or, with
// quiet hours and no notAfter, start + quietLookahead (later slots fall
// outside the intervals computed). from is where the intervals begin (at
// most start).
func window(q Quiet, loc *time.Location, from, start, notAfter int64) ([]interval, int64) {
	if q.Off() {
		return nil, notAfter
	}
	to := notAfter
	if to == 0 {
		to = start + quietLookahead.Milliseconds()
	}
	return q.intervals(loc, from, to), to
}

// search is the slot search of the Go side (Memory's Reserve, and Status
// for both limiters): the earliest instant from start on that keeps every
// bound's rules and lies in none of q's quiet intervals from `from` to the
// latest slot a booking may get (window), and that latest slot (0: none).
// Past it the answer may fall in quiet hours that were not computed: a
// booking there is refused as late, and nextOpen goes on searching.
func search(bs []bound, q Quiet, loc *time.Location, now, from, start, notAfter int64) (t, last int64) {
	qs, last := window(q, loc, from, start, notAfter)
	return earliestAll(bs, qs, now, start), last
}

// nextOpen is the earliest instant from now on that keeps every bound's rules
// and is not quiet, however far ahead: what Status names. It searches one
// lookahead at a time; every instant before a search's answer breaks a
// rule or is quiet, so the next search starts there.
func nextOpen(bs []bound, q Quiet, loc *time.Location, now int64) int64 {
	start := now
	for {
		t, last := search(bs, q, loc, now, start, start, 0)
		if last == 0 || t <= last {
			return t
		}
		start = t
	}
}

// validate checks a category's own rules and quiet hours.
func (k Category) validate(name string) error {
	if !ValidCategory(name) {
		return fmt.Errorf("%w: category %q: want 1 to %d of a-z, 0-9, _ and -", ErrInvalidPolicy, name, MaxCategoryLen)
	}
	if err := validateRules(k.Limits, k.MinGap); err != nil {
		return fmt.Errorf("category %s: %w", name, err)
	}
	if k.Quiet != nil {
		if err := k.Quiet.validate(); err != nil {
			return fmt.Errorf("%w: category %s: %w", ErrInvalidPolicy, name, err)
		}
	}
	return nil
}

// String renders a category's rules as ParseCategories reads them:
// "2/1d,1/4h@1h", "none", then "global=off", "quiet=..." and
// "required=on" when set.
func (k Category) String() string {
	s := Policy{Limits: k.Limits}.String()
	if k.MinGap > 0 {
		s += "@" + formatDuration(k.MinGap)
	}
	if s == "" {
		s = "none"
	}
	if k.SkipGlobal {
		s += " global=off"
	}
	if k.Quiet != nil {
		s += " quiet=" + k.Quiet.String()
	}
	if k.Required {
		s += " required=on"
	}
	return s
}
