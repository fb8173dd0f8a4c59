package throttle_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones of the traces, whatever the machine has

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/throttle"
)

// model is the brute-force reference: plain lists of timestamps, checked
// by scanning t = start, start+1, ... and counting every window of every
// rule that contains t, with quiet hours read off the wall clock of each
// t. It shares nothing with the implementations' candidate search or
// their quiet intervals; only the public Policy and Options go in.
type model struct {
	global     ruleSet
	quiet      quietHours
	cats       map[string]catModel
	maxPending int   // the cap Options.MaxPending stands for, 0 for none
	margin     int64 // Options.CollapseMargin
	// sets: "" the global set, else a category's; At is absolute ms.
	sets map[string][]entry
	// collapse: "k:<cat>:<key>" -> the newest accepted member booked
	// with it, "x:<member>" -> its replacement; each record counts while
	// now is before its until.
	collapse map[string]collapseRec
}

// collapseRec is a collapse record of the model.
type collapseRec struct {
	member          string
	accepted, until int64
}

// ruleSet is one set's rules.
type ruleSet struct {
	n, w    []int64
	gap     int64
	horizon int64
	names   []string
}

type catModel struct {
	rules      ruleSet
	own        bool // rules of its own: its bookings have a set of their own
	skipGlobal bool
	quiet      quietHours
}

// quietHours is a wall-clock window [from, to) in ms of the day.
type quietHours struct {
	on       bool
	from, to int64
}

func newRuleSet(limits []throttle.Limit, gap time.Duration, prefix string) ruleSet {
	r := ruleSet{gap: gap.Milliseconds(), horizon: max(gap.Milliseconds(), 1)}
	for _, l := range limits {
		r.n = append(r.n, int64(l.N))
		r.w = append(r.w, l.Window.Milliseconds())
		r.names = append(r.names, prefix+l.String())
		r.horizon = max(r.horizon, l.Window.Milliseconds())
	}
	r.names = append(r.names, prefix+throttle.Policy{MinGap: gap}.String())
	return r
}

func newQuietHours(q throttle.Quiet) quietHours {
	return quietHours{on: q.From != q.To, from: q.From.Milliseconds(), to: q.To.Milliseconds()}
}

func newModel(p throttle.Policy, o throttle.Options) *model {
	switch o.MaxPending {
	case 0:
		o.MaxPending = throttle.DefaultMaxPending
	case throttle.NoMaxPending:
		o.MaxPending = 0
	}
	m := &model{global: newRuleSet(p.Limits, p.MinGap, ""), quiet: newQuietHours(p.Quiet), cats: map[string]catModel{},
		maxPending: o.MaxPending, margin: o.CollapseMargin.Milliseconds(), sets: map[string][]entry{}, collapse: map[string]collapseRec{}}
	for name, c := range p.Categories {
		k := catModel{rules: newRuleSet(c.Limits, c.MinGap, name+" "), own: len(c.Limits) > 0 || c.MinGap > 0, skipGlobal: c.SkipGlobal, quiet: m.quiet}
		if c.Quiet != nil {
			k.quiet = newQuietHours(*c.Quiet)
		}
		m.cats[name] = k
		if k.own && !k.skipGlobal {
			// The global set keeps the category's bookings as long as the
			// category's set does.
			m.global.horizon = max(m.global.horizon, k.rules.horizon)
		}
	}
	return m
}

// in reports whether instant t (ms) is quiet in loc, from its wall clock.
func (q quietHours) in(t int64, loc *time.Location) bool {
	if !q.on {
		return false
	}
	if loc == nil {
		loc = time.UTC
	}
	w := time.UnixMilli(t).In(loc)
	tod := ((int64(w.Hour())*60+int64(w.Minute()))*60+int64(w.Second()))*1000 + int64(w.Nanosecond()/1e6)
	if q.from < q.to {
		return q.from <= tod && tod < q.to
	}
	return tod >= q.from || tod < q.to
}

// inBy reports whether t is quiet in loc in a run of quiet instants that
// started at or before limit (limit < 0: any run): a refused-late slot
// ignores the quiet hours that begin after NotAfter.
func (q quietHours) inBy(t int64, loc *time.Location, limit int64) bool {
	if !q.in(t, loc) {
		return false
	}
	if limit < 0 {
		return true
	}
	s := t
	for s > limit && q.in(s-1, loc) {
		s--
	}
	return s <= limit
}

// plan names the sets a booking of category cat is kept in, home first,
// its quiet hours, and every set's rules.
func (m *model) plan(cat string) ([]string, quietHours) {
	if cat == "" {
		return []string{""}, m.quiet
	}
	k := m.cats[cat]
	var sets []string
	if !k.skipGlobal {
		sets = append(sets, "")
	}
	if k.own || k.skipGlobal {
		sets = append(sets, cat)
	}
	return sets, k.quiet
}

func (m *model) rules(set string) *ruleSet {
	if set == "" {
		return &m.global
	}
	r := m.cats[set].rules
	return &r
}

// allSets are the global set and every category's own.
func (m *model) allSets() []string {
	out := []string{""}
	for _, name := range slices.Sorted(maps.Keys(m.cats)) {
		if k := m.cats[name]; k.own || k.skipGlobal {
			out = append(out, name)
		}
	}
	return out
}

// violates reports whether adding t to the sorted times ts breaks rule i
// (len(r.n): the gap).
func (r *ruleSet) violates(ts []int64, t int64, i int) bool {
	if i == len(r.n) {
		if r.gap == 0 {
			return false
		}
		for _, e := range near(ts, t-r.gap+1, t+r.gap) {
			if d := t - e; d < r.gap && -d < r.gap {
				return true
			}
		}
		return false
	}
	// Every window [x, x+W) that contains t must hold fewer than N entries.
	w := r.w[i]
	local := near(ts, t-w+1, t+w)
	for x := t - w + 1; x <= t; x++ {
		c := int64(0)
		for _, e := range local {
			if e >= x && e < x+w {
				c++
			}
		}
		if c >= r.n[i] {
			return true
		}
	}
	return false
}

// near returns the entries of the sorted ts in [from, to): only those can
// fall into a window the model checks, and skipping the rest keeps long
// traces fast.
func near(ts []int64, from, to int64) []int64 {
	lo, _ := slices.BinarySearch(ts, from)
	hi, _ := slices.BinarySearch(ts, to)
	return ts[lo:hi]
}

func (m *model) times(set string) []int64 {
	ts := make([]int64, 0, len(m.sets[set]))
	for _, e := range m.sets[set] {
		ts = append(ts, e.At)
	}
	slices.Sort(ts)
	return ts
}

// earliest scans for the first t >= start keeping every rule of sets and
// outside q in loc (its runs that start after quietBy ignored, unless
// quietBy < 0); with only >= 0 it keeps rule only of the global set alone
// (Allow's blame).
func (m *model) earliest(sets []string, q quietHours, loc *time.Location, start, quietBy int64, only int) int64 {
	ts := map[string][]int64{}
	for _, s := range sets {
		ts[s] = m.times(s)
	}
	for t := start; ; t++ {
		ok := only >= 0 || !q.inBy(t, loc, quietBy)
		for _, s := range sets {
			r := m.rules(s)
			for j := 0; j <= len(r.n) && ok; j++ {
				if only < 0 || only == j {
					ok = !r.violates(ts[s], t, j)
				}
			}
		}
		if ok {
			return t
		}
	}
}

func (r *ruleSet) remaining(es []entry, now int64) []int {
	out := make([]int, len(r.n))
	for i := range r.n {
		c := int64(0)
		for _, e := range es {
			if e.At > now-r.w[i] && e.At <= now {
				c++
			}
		}
		out[i] = int(max(0, r.n[i]-c))
	}
	return out
}

// decide is Allow (record) or Peek: the global rules alone, no quiet hours.
func (m *model) decide(now int64, record bool) throttle.Decision {
	global := []string{""}
	t := m.earliest(global, quietHours{}, nil, now, -1, -1)
	d := throttle.Decision{Now: time.UnixMilli(now)}
	if t == now {
		d.Allowed = true
		saved := m.sets[""]
		m.sets[""] = append(slices.Clone(saved), entry{"allow", now})
		d.Remaining = m.global.remaining(m.sets[""], now)
		if record {
			m.live("", now)
		} else {
			m.sets[""] = saved
		}
		return d
	}
	d.RetryAfter = time.Duration(t-now) * time.Millisecond
	d.Remaining = m.global.remaining(m.sets[""], now)
	worst := now
	for i := 0; i <= len(m.global.n); i++ {
		if ti := m.earliest(global, quietHours{}, nil, now, -1, i); ti > worst { // rule i rules out now
			worst, d.DeniedBy = ti, m.global.names[i]
		}
	}
	return d
}

// live drops set's entries that aged out (at or before now - horizon), as
// the implementations do before they write a set.
func (m *model) live(set string, now int64) {
	h := m.rules(set).horizon
	m.sets[set] = slices.DeleteFunc(m.sets[set], func(e entry) bool { return e.At <= now-h })
}

// request is a reserve of the model: Request's fields in ms (notBefore 0:
// none; by: notAfter applies).
type request struct {
	member, cat, collapse string
	accepted              int64
	loc                   *time.Location
	notBefore             int64
	by                    bool
	notAfter              int64
}

func find(es []entry, member string) (int64, bool) {
	for _, e := range es {
		if e.Member == member {
			return e.At, true
		}
	}
	return 0, false
}

// reserve books q at now, in the documented order: trim the request's
// sets, an existing member, a collapsed member, the held booking with the
// same collapse key taken out, the cap (counting entries after now), the
// search from max(now, notBefore) outside the quiet hours, notAfter (with
// quiet hours and none given: 62 days after the search's start; the quiet
// hours that begin after it do not move a refused slot), the booking.
func (m *model) reserve(now int64, q request) throttle.Reservation {
	answer := func(at int64, existing bool, refused throttle.Refusal) throttle.Reservation {
		return throttle.Reservation{At: time.UnixMilli(at), Wait: time.Duration(max(0, at-now)) * time.Millisecond,
			Existing: existing, Refused: refused, Now: time.UnixMilli(now)}
	}
	sets, quiet := m.plan(q.cat)
	for _, s := range sets {
		m.live(s, now)
	}
	if at, ok := find(m.sets[sets[0]], q.member); ok {
		return answer(at, true, "")
	}
	old, oldAt := "", int64(0)
	field := "k:" + q.cat + ":" + q.collapse
	record := func(f string) (collapseRec, bool) {
		r, ok := m.collapse[f]
		return r, ok && now < r.until
	}
	if q.collapse != "" {
		if x, ok := record("x:" + q.member); ok {
			r := answer(now, false, throttle.RefusedCollapsed)
			r.ReplacedBy = x.member
			return r
		}
		if k, ok := record(field); ok && k.member != q.member {
			if q.accepted < k.accepted {
				r := answer(now, false, throttle.RefusedCollapsed)
				r.ReplacedBy = k.member
				return r
			}
			if at, ok := find(m.sets[sets[0]], k.member); ok && at > now+m.margin {
				old, oldAt = k.member, at
				for _, s := range sets {
					m.sets[s] = slices.DeleteFunc(m.sets[s], func(e entry) bool { return e.Member == old })
				}
			}
		}
	}
	putBack := func() {
		if old != "" {
			for _, s := range sets {
				m.sets[s] = append(m.sets[s], entry{old, oldAt})
			}
		}
	}
	if m.maxPending > 0 {
		for _, s := range sets {
			var pending []int64
			for _, e := range m.sets[s] {
				if e.At > now {
					pending = append(pending, e.At)
				}
			}
			if len(pending) >= m.maxPending {
				putBack()
				return answer(slices.Min(pending), false, throttle.RefusedFull)
			}
		}
	}
	start := max(now, q.notBefore)
	by, notAfter := q.by, q.notAfter
	if !by && quiet.on {
		by, notAfter = true, start+(62*24*time.Hour).Milliseconds()
	}
	quietBy := int64(-1)
	if by {
		quietBy = notAfter
	}
	t := m.earliest(sets, quiet, q.loc, start, quietBy, -1)
	heldBy := m.heldBy(sets, quiet, q.loc, now, start, t, quietBy)
	if by && t > notAfter {
		putBack()
		r := answer(t, false, throttle.RefusedLate)
		r.HeldBy = heldBy
		return r
	}
	for _, s := range sets {
		m.sets[s] = append(m.sets[s], entry{q.member, t})
	}
	if q.collapse != "" {
		h := m.rules(sets[0]).horizon
		m.collapse[field] = collapseRec{q.member, q.accepted, t + h}
		if old != "" {
			m.collapse["x:"+old] = collapseRec{q.member, q.accepted, oldAt + h}
		}
	}
	r := answer(t, false, "")
	r.Collapsed, r.HeldBy = old, heldBy
	return r
}

// heldBy names what holds slot t searched from start, by its definition
// (Reservation.HeldBy): nothing at now, send_at at start, else the first
// rule of sets, in order, that t-1 breaks, else the quiet hours.
func (m *model) heldBy(sets []string, q quietHours, loc *time.Location, now, start, t, quietBy int64) string {
	switch {
	case t <= now:
		return ""
	case t == start:
		return throttle.HeldBySendAt
	}
	for _, s := range sets {
		r := m.rules(s)
		ts := m.times(s)
		for j := 0; j <= len(r.n); j++ {
			if r.violates(ts, t-1, j) {
				return r.names[j]
			}
		}
	}
	if q.inBy(t-1, loc, quietBy) {
		return "quiet " + throttle.Quiet{From: time.Duration(q.from) * time.Millisecond, To: time.Duration(q.to) * time.Millisecond}.String()
	}
	return ""
}

func (m *model) release(now int64, member string) bool {
	found := false
	for _, s := range m.allSets() {
		m.live(s, now)
		n := len(m.sets[s])
		m.sets[s] = slices.DeleteFunc(m.sets[s], func(e entry) bool { return e.Member == member })
		found = found || len(m.sets[s]) < n
	}
	return found
}

// status is Status at now in loc, with entries' times made relative to
// base.
func (m *model) status(now int64, loc *time.Location, base int64) status {
	inside := func(set string) []entry {
		var out []entry
		h := m.rules(set).horizon
		for _, e := range m.sets[set] {
			if e.At > now-h {
				out = append(out, entry{e.Member, e.At - base})
			}
		}
		sortEntries(out)
		return out
	}
	sets, q := m.plan("")
	s := status{Entries: inside(""), Remaining: m.global.remaining(m.sets[""], now),
		Next: m.earliest(sets, q, loc, now, -1, -1) - base, Quiet: q.in(now, loc)}
	for _, name := range slices.Sorted(maps.Keys(m.cats)) {
		k := m.cats[name]
		sets, q := m.plan(name)
		c := catStatus{Name: name, Remaining: k.rules.remaining(m.sets[name], now), Next: m.earliest(sets, q, loc, now, -1, -1) - base, Quiet: q.in(now, loc)}
		if k.own || k.skipGlobal {
			c.Entries = inside(name)
		}
		s.Categories = append(s.Categories, c)
	}
	return s
}

// trace is a policy, a cap, a collapse margin and a sequence of operations
// at non-decreasing times from base.
type trace struct {
	policy     throttle.Policy
	maxPending int           // Options.MaxPending
	margin     time.Duration // Options.CollapseMargin
	base       int64         // Unix ms of the first op's clock (before its dt)
	ops        []traceOp
}

type traceOp struct {
	dt     int64 // ms after the previous op
	kind   string
	member string
	// by is set when a reserve carries a NotAfter, notAfter ms after the
	// op's instant (negative: before it).
	by       bool
	notAfter int64
	// ext: a reserve with the fields below, made through ReserveBatch; a
	// status with zone.
	ext       bool
	category  string
	zone      int // index into traceZones
	collapse  string
	notBefore int64 // ms after the op's instant; < 0: none
}

var opKinds = []string{"allow", "allow", "allow", "allow", "peek", "reserve", "reserve", "reserve", "release", "status"}

// traceZones are two zones that change their clocks at the same instant,
// an hour apart in wall-clock time: the extended traces start just before
// one of those instants.
var traceZones = func() []*time.Location {
	var out []*time.Location
	for _, name := range []string{"Europe/Berlin", "Europe/London"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			panic(err)
		}
		out = append(out, loc)
	}
	return out
}()

// dstChanges are instants both traceZones change their clocks: autumn
// 2026 (back an hour) and spring 2027 (forward).
var dstChanges = []int64{
	time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC).UnixMilli(),
	time.Date(2027, 3, 28, 1, 0, 0, 0, time.UTC).UnixMilli(),
}

// decodeTrace turns arbitrary bytes into a valid trace with small windows
// (1-60 ms), small caps (1-4) and a gap of 0-30 ms. The gap's byte, from 160
// on, also sets MaxPending 1-3; a reserve's member byte, from 150 on, gives
// it a NotAfter 3 ms before to 49 ms after its instant. Bytes below those
// (as in the seeds written before either existed) mean neither.
//
// A first byte from 3 on (the number of limits is that byte mod 3) makes
// an extended trace: after the gap byte come a collapse margin (0-20 ms),
// where the trace starts (0-240 ms before a clock change of both traceZones),
// the global quiet hours (off, or a window of 1-40 ms: see decodeQuiet),
// and 0-2
// categories, each with 0-2 limits, a gap, global=off or not and quiet
// hours of its own, none or inherited; and every reserve and status op
// takes two more bytes: a category (or none), a zone, a collapse key (or
// none) and a NotBefore (or none, 0-63 ms after its instant).
//
// A first byte from 128 on also makes the caps large (8-17), the windows
// longer (4-240 ms), the gap shorter (0-3 ms) and the members many
// (m0-m23): the Redis limiter reads only a user's newest 8 entries when
// it can, and counts past them another way.
func decodeTrace(b []byte) trace {
	next := func() int {
		if len(b) == 0 {
			return 0
		}
		v := int(b[0])
		b = b[1:]
		return v
	}
	var tr trace
	first := next()
	large := first >= 128
	limits := func(n int) []throttle.Limit {
		var out []throttle.Limit
		for range n {
			n, w := 1+next()%4, 1+next()%60
			if large {
				n, w = 5+n*3, 4*w
			}
			out = append(out, throttle.Limit{N: n, Window: time.Duration(w) * time.Millisecond})
		}
		return out
	}
	tr.policy.Limits = limits(first % 3)
	g := next()
	tr.policy.MinGap = time.Duration(g%31) * time.Millisecond
	if large {
		tr.policy.MinGap = tr.policy.MinGap / 10 / time.Millisecond * time.Millisecond
	}
	if g >= 160 {
		tr.maxPending = g/32 - 4
	}
	if len(tr.policy.Limits) == 0 && tr.policy.MinGap == 0 {
		tr.policy.MinGap = 7 * time.Millisecond
	}
	tr.base = t0
	ext := first >= 3
	var cats []string
	if ext {
		tr.margin = time.Duration(next()%21) * time.Millisecond
		tr.base = dstChanges[next()%2] - int64(next()%16)*16
		tr.policy.Quiet = decodeQuiet(next, tr.base)
		for i := range next() % 3 {
			name := fmt.Sprintf("c%d", i)
			k := throttle.Category{Limits: limits(next() % 3), MinGap: time.Duration(next()%31) * time.Millisecond}
			if large {
				k.MinGap = k.MinGap / 10 / time.Millisecond * time.Millisecond
			}
			flags := next()
			k.SkipGlobal = flags&1 != 0
			switch flags / 2 % 3 {
			case 1:
				k.Quiet = &throttle.Quiet{}
			case 2:
				q := decodeQuiet(next, tr.base)
				k.Quiet = &q
			}
			if tr.policy.Categories == nil {
				tr.policy.Categories = map[string]throttle.Category{}
			}
			tr.policy.Categories[name] = k
			cats = append(cats, name)
		}
	}
	for len(b) >= 3 && len(tr.ops) < 200 {
		k, dt, m := next(), next(), next()
		members := 5
		if large {
			members = 24
		}
		op := traceOp{kind: opKinds[k%len(opKinds)], member: fmt.Sprintf("m%d", m%members), notBefore: -1}
		if op.kind == "reserve" && m >= 150 {
			op.by, op.notAfter = true, int64((m-150)/2-3)
		}
		if dt%3 != 0 { // a third of the ops happen at the same instant
			op.dt = int64(dt % 25)
		}
		if ext && (op.kind == "reserve" || op.kind == "status") {
			x, y := next(), next()
			op.ext = true
			if c := x % (len(cats) + 1); c > 0 {
				op.category = cats[c-1]
			}
			op.zone = x / 3 % 2
			op.collapse = []string{"", "a", "b"}[x/6%3]
			if y >= 128 {
				op.notBefore = int64(y-128) / 2
			}
		}
		tr.ops = append(tr.ops, op)
	}
	return tr
}

// decodeQuiet reads quiet hours: off, or a window of 1-40 ms starting
// from 60 ms before to 20 ms after 01:00, 02:00 or 03:00 (where the zones'
// clocks jump), or one of 1-200 ms starting at the wall-clock time one of
// the zones shows 0-630 ms after base (so it falls inside the trace, on
// either side of the change).
func decodeQuiet(next func() int, base int64) throttle.Quiet {
	mode := next()
	var from time.Duration
	switch mode % 4 {
	case 0:
		return throttle.Quiet{}
	case 1:
		from = time.Duration(1+mode/4%3)*time.Hour + time.Duration(next()%81-60)*time.Millisecond
	default:
		w := time.UnixMilli(base + int64(next()%64)*10).In(traceZones[mode/4%2])
		from = time.Duration(w.Hour())*time.Hour + time.Duration(w.Minute())*time.Minute +
			time.Duration(w.Second())*time.Second + time.Duration(w.Nanosecond()/1e6)*time.Millisecond
	}
	return throttle.Quiet{From: from, To: from + time.Duration(1+next()%(40+160*(mode%4/2)))*time.Millisecond}
}

// request is op's reserve at now for the model.
func (op traceOp) request(now int64) request {
	q := request{member: op.member, cat: op.category, collapse: op.collapse, accepted: op.accepted(), by: op.by, notAfter: now + op.notAfter}
	if op.ext {
		q.loc = traceZones[op.zone]
	}
	if op.notBefore >= 0 {
		q.notBefore = now + op.notBefore
	}
	return q
}

// accepted is when op's push was accepted (ms), which orders the pushes
// of one collapse key: its member's number, so m3 is newer than m1.
func (op traceOp) accepted() int64 {
	n, _ := strconv.ParseInt(strings.TrimPrefix(op.member, "m"), 10, 64)
	return n
}

// Request is op's reserve at now for a limiter.
func (op traceOp) Request(now int64) throttle.Request {
	q := throttle.Request{User: "u", Member: op.member, Category: op.category, CollapseKey: op.collapse, Accepted: time.UnixMilli(op.accepted())}
	if op.by {
		q.NotAfter = time.UnixMilli(now + op.notAfter)
	}
	if op.ext {
		q.Location = traceZones[op.zone]
	}
	if op.notBefore >= 0 {
		q.NotBefore = time.UnixMilli(now + op.notBefore)
	}
	return q
}

// checkTrace runs tr on l (built with tr.maxPending and tr.margin) and the
// model in lockstep and fails at the first difference. Runs of two or more
// allows (or reserves) at the same instant go through AllowBatch
// (ReserveBatch) in one call, so the batch scripts face the model too; so
// does a lone reserve with a NotAfter or extended fields, which Reserve
// does not take.
func checkTrace(t *testing.T, l limiter, clock *fakeClock, tr trace) {
	t.Helper()
	ctx := context.Background()
	m := newModel(tr.policy, throttle.Options{MaxPending: tr.maxPending, CollapseMargin: tr.margin})
	now := tr.base
	fail := func(i int, format string, args ...any) {
		t.Helper()
		op := tr.ops[i]
		t.Fatalf("policy %s, max pending %d, margin %s, base %s, op %d (%s %s at +%d ms): "+format,
			append([]any{describePolicy(tr.policy), tr.maxPending, tr.margin, time.UnixMilli(tr.base).UTC().Format(time.RFC3339Nano), i, op.kind, op.member, now - tr.base}, args...)...)
	}
	for i := 0; i < len(tr.ops); i++ {
		op := tr.ops[i]
		now += op.dt
		clock.ms.Store(now)
		if end := batchEnd(tr.ops, i); end > i+1 {
			got, err := runBatch(ctx, l, now, tr.ops[i:end])
			if err != nil {
				fail(i, "batch of %d: %v", end-i, err)
			}
			for j := i; j < end; j++ {
				var want any
				if op.kind == "allow" {
					want = m.decide(now, true)
				} else {
					want = m.reserve(now, tr.ops[j].request(now))
				}
				if diff := cmp.Diff(want, got[j-i], equateEmpty); diff != "" {
					fail(i, "batch of %d, element %d: -model +limiter:\n%s\ntrace so far:\n%s", end-i, j-i, diff, describe(tr.ops[:end]))
				}
			}
			i = end - 1
			continue
		}
		var want, got any
		var err error
		switch op.kind {
		case "allow", "peek":
			want = m.decide(now, op.kind == "allow")
			if op.kind == "allow" {
				got, err = l.Allow(ctx, "u")
			} else {
				got, err = l.Peek(ctx, "u")
			}
		case "reserve":
			want = m.reserve(now, op.request(now))
			if op.by || op.ext {
				var rs []any
				rs, err = runBatch(ctx, l, now, tr.ops[i:i+1])
				if err == nil {
					got = rs[0]
				}
			} else {
				got, err = l.Reserve(ctx, "u", op.member)
			}
		case "release":
			want = m.release(now, op.member)
			got, err = l.Release(ctx, "u", op.member)
		case "status":
			var loc *time.Location
			if op.ext {
				loc = traceZones[op.zone]
			}
			want = m.status(now, loc, 0)
			var st throttle.Status
			st, err = l.Status(ctx, "u", loc)
			got = foldStatus(st, 0)
		}
		if err != nil {
			fail(i, "%v", err)
		}
		if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
			fail(i, "-model +limiter:\n%s\ntrace so far:\n%s", diff, describe(tr.ops[:i+1]))
		}
	}
}

// describePolicy writes p with its quiet hours and categories.
func describePolicy(p throttle.Policy) string {
	s := p.String() + " quiet=" + p.Quiet.String()
	for _, name := range slices.Sorted(maps.Keys(p.Categories)) {
		s += "; " + name + "=" + p.Categories[name].String()
	}
	return s
}

// batchEnd returns the end of the run of ops of ops[i]'s kind (allow or
// reserve) that all happen at ops[i]'s instant; i+1 for other kinds.
func batchEnd(ops []traceOp, i int) int {
	end := i + 1
	if k := ops[i].kind; k == "allow" || k == "reserve" {
		for end < len(ops) && ops[end].kind == k && ops[end].dt == 0 {
			end++
		}
	}
	return end
}

// runBatch runs ops (all allows or all reserves, for user "u") as one batch
// at now.
func runBatch(ctx context.Context, l limiter, now int64, ops []traceOp) ([]any, error) {
	var out []any
	if ops[0].kind == "allow" {
		ds, err := l.AllowBatch(ctx, slices.Repeat([]string{"u"}, len(ops)))
		for _, d := range ds {
			out = append(out, d)
		}
		return out, err
	}
	reqs := make([]throttle.Request, len(ops))
	for i, op := range ops {
		reqs[i] = op.Request(now)
	}
	rs, err := l.ReserveBatch(ctx, reqs)
	for _, r := range rs {
		out = append(out, r)
	}
	return out, err
}

func describe(ops []traceOp) string {
	var sb strings.Builder
	at := int64(0)
	for _, op := range ops {
		at += op.dt
		fmt.Fprintf(&sb, "  +%d %s %s", at, op.kind, op.member)
		if op.by {
			fmt.Fprintf(&sb, " not after +%d", at+op.notAfter)
		}
		if op.ext {
			fmt.Fprintf(&sb, " category %q zone %s collapse %q", op.category, traceZones[op.zone], op.collapse)
			if op.notBefore >= 0 {
				fmt.Fprintf(&sb, " not before +%d", at+op.notBefore)
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// randomSeeds is how many random traces of each kind (plain, extended,
// and extended with large caps) the generator's coverage check replays on
// the model, and each implementation replays in the slow tier (CI). The
// fast tier replays the first fastSeeds of each kind: the rest are the
// same check on more traces.
const (
	randomSeeds = 150
	fastSeeds   = 40
)

// replayedSeeds is how many random traces of each kind an implementation
// replays in this run.
func replayedSeeds() uint64 {
	if testkit.RunSlow() {
		return randomSeeds
	}
	return fastSeeds
}

func testRandomTraces(t *testing.T, newLimiter newLimiterFunc) {
	for _, kind := range []struct {
		name  string
		ext   bool
		large bool
	}{{"plain", false, false}, {"policies", true, false}, {"large", true, true}} {
		for seed := range replayedSeeds() {
			t.Run(fmt.Sprint(kind.name, "/", seed), func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(seed, 0x5eed))
				b := make([]byte, 40+4*(40+rng.IntN(80)))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				b[0] %= 3
				if kind.ext {
					b[0] += 3
				}
				if kind.large {
					b[0] += 128
				}
				tr := decodeTrace(b)
				clock := newFakeClock()
				checkTrace(t, newLimiter(t, tr.policy, throttle.Options{Clock: clock.Now, MaxPending: tr.maxPending, CollapseMargin: tr.margin}), clock, tr)
			})
		}
	}
}

// The extended random traces must keep exercising what they exist for: a
// generator change that stops producing categories, quiet hours on either
// side of a clock change in both zones, NotBefore or collapses would
// leave the model tests passing while testing nothing. This replays them
// on the model alone and counts.
func TestRandomTracesCoverPolicies(t *testing.T) {
	t.Parallel()
	counts := map[string]int{}
	for seed := range uint64(randomSeeds) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		b := make([]byte, 40+4*(40+rng.IntN(80)))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		b[0] = b[0]%3 + 3
		tr := decodeTrace(b)
		m := newModel(tr.policy, throttle.Options{MaxPending: tr.maxPending, CollapseMargin: tr.margin})
		now := tr.base
		for _, op := range tr.ops {
			now += op.dt
			switch op.kind {
			case "allow":
				m.decide(now, true)
			case "release":
				m.release(now, op.member)
			case "reserve":
				q := op.request(now)
				sets, quiet := m.plan(q.cat)
				before := m.earliest(sets, quietHours{}, nil, max(now, q.notBefore), -1, -1)
				r := m.reserve(now, q)
				at := r.At.UnixMilli()
				switch {
				case r.Refused == throttle.RefusedCollapsed:
					counts["refused collapsed"]++
				case r.Collapsed != "":
					counts["collapsed"]++
				}
				if r.Refused != "" {
					continue
				}
				if q.cat != "" {
					counts["category"]++
					if tr.policy.Categories[q.cat].SkipGlobal {
						counts["global=off"]++
					}
				}
				if q.notBefore > now && at == q.notBefore {
					counts["not before"]++
				}
				if quiet.on && at > before && quiet.in(at-1, q.loc) {
					// Moved by the quiet hours: to the end of a run that
					// ends before or after the trace's clock change.
					side := "before"
					if change := dstChanges[0]; at > change && at-change < dayMs || at > dstChanges[1] {
						side = "after"
					}
					counts["quiet "+side+" the change, "+q.loc.String()]++
				}
			}
		}
	}
	t.Logf("%v", counts)
	for _, k := range []string{"category", "global=off", "not before", "collapsed", "refused collapsed",
		"quiet before the change, Europe/Berlin", "quiet after the change, Europe/Berlin",
		"quiet before the change, Europe/London", "quiet after the change, Europe/London"} {
		if counts[k] < 3 {
			t.Errorf("%d traces' reservations show %q, want at least 3", counts[k], k)
		}
	}
}

const dayMs = 24 * 3600 * 1000 // ms
