package simulate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hushpush/hush/throttle"
)

// Result is what one rule set did to a trace. Delays are in
// milliseconds.
type Result struct {
	Rules string `json:"rules"`
	// QuietHours are the rule set's quiet hours ("off" for none), and
	// CategoryRules its categories' rules as --categories writes them;
	// Timezone is the zone of the lines that name none.
	QuietHours    string            `json:"quiet_hours"`
	CategoryRules map[string]string `json:"category_rules,omitempty"`
	Timezone      string            `json:"timezone"`
	Events        int               `json:"events"`
	Allowed       int               `json:"allowed_now"`
	Deferred      int               `json:"deferred"`
	Dropped       int               `json:"dropped_expired"`
	// OptedOut counts the pushes dropped unsent because their user had
	// opted out of their category (the trace's opted_out column).
	OptedOut int `json:"opted_out"`
	// DeferredPct and DroppedPct are shares of Events.
	DeferredPct float64 `json:"deferred_pct"`
	DroppedPct  float64 `json:"dropped_pct"`
	// Delay percentiles over every push that was sent (allowed now counts
	// as 0), nearest rank, and their sum.
	DelayP50   int64 `json:"delay_p50_ms"`
	DelayP90   int64 `json:"delay_p90_ms"`
	DelayP99   int64 `json:"delay_p99_ms"`
	DelayMax   int64 `json:"delay_max_ms"`
	DelayTotal int64 `json:"delay_total_ms"`
	// HeldBy counts deferred and dropped pushes by what held them back
	// most: a rule (throttle.Explanation.HeldBy) or, when they held it
	// back longer than the rules did, the quiet hours (heldByQuiet).
	HeldBy map[string]int `json:"held_back_by,omitempty"`
	// Quiet is what the quiet hours did; nil when the rule set has none.
	Quiet *quietResult `json:"quiet,omitempty"`
	// Categories break the figures down by category (the trace's lines
	// without one under ""), sorted by name; nil when no line names one.
	Categories []categoryResult `json:"categories,omitempty"`
	// Users is how many distinct users the trace has; UsersDeferred how many
	// had at least one push deferred or dropped.
	Users         int `json:"users"`
	UsersDeferred int `json:"users_deferred"`
	// Seconds is the wall time the replay took.
	Seconds float64 `json:"seconds"`
	// Detail is what the HTML report draws beyond these figures; set only
	// when simOptions.Detail asks for it.
	Detail *simDetail `json:"-"`
}

// quietResult is the time quiet hours held pushes beyond the slot the
// rules alone would give (throttle.Explanation: At - WithoutQuiet, their
// extra delay).
type quietResult struct {
	// Deferred counts the pushes sent whose slot the quiet hours moved;
	// DeferredPct is them as a share of all events.
	Deferred    int     `json:"deferred"`
	DeferredPct float64 `json:"deferred_pct"`
	// Dropped counts the pushes dropped that the rules alone would have
	// sent in time (before the ttl).
	Dropped int `json:"dropped"`
	// The extra delay of the Deferred pushes: median, longest and sum, and
	// the sum's share of all the delay of the pushes sent (DelayTotal).
	DelayP50   int64   `json:"extra_delay_p50_ms"`
	DelayMax   int64   `json:"extra_delay_max_ms"`
	DelayTotal int64   `json:"extra_delay_total_ms"`
	DelayPct   float64 `json:"delay_pct"`
}

// categoryResult is one category's part of a Result.
type categoryResult struct {
	Category    string  `json:"category"` // "" for the lines without one
	Events      int     `json:"events"`
	Allowed     int     `json:"allowed_now"`
	Deferred    int     `json:"deferred"`
	Dropped     int     `json:"dropped_expired"`
	DeferredPct float64 `json:"deferred_pct"`
	DroppedPct  float64 `json:"dropped_pct"`
	OptedOut    int     `json:"opted_out"`
	DelayP50    int64   `json:"delay_p50_ms"`
	DelayP99    int64   `json:"delay_p99_ms"`
	DelayMax    int64   `json:"delay_max_ms"`
	// QuietDeferred counts its pushes sent whose slot the quiet hours
	// moved.
	QuietDeferred int `json:"quiet_deferred"`
}

// simDetail is a replay's distributions: every delay and the outcomes over
// the trace's time.
type simDetail struct {
	// Rules names every rule of the set as DeniedBy does: the limits in
	// order, then the gap (when there is one).
	Rules []string
	// Delays are the delays of the pushes sent (allowed now as 0), sorted,
	// in milliseconds: the percentiles above are read from them.
	Delays []int64
	// Timeline counts outcomes by the push's own time.
	Timeline outcomeTimeline
}

// outcomeTimeline counts what happened to the pushes of each bin of trace
// time: bin i covers [Start + i*Width, Start + (i+1)*Width), Unix ms.
type outcomeTimeline struct {
	Start, Width int64
	Bins         []outcomes
}

// outcomes counts pushes by what the limiter did to them.
type outcomes struct{ Allowed, Deferred, Dropped, OptedOut int }

// timelineMaxBins caps how many bins an outcomeTimeline has.
const timelineMaxBins = 100

// binWidths are the bin widths an outcomeTimeline may use, in
// milliseconds: the smallest that fits the trace in timelineMaxBins is
// chosen; past the last, whole multiples of a week.
var binWidths = []int64{
	1e3, 2e3, 5e3, 10e3, 15e3, 30e3, // seconds
	60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, // minutes
	3600e3, 2 * 3600e3, 3 * 3600e3, 6 * 3600e3, 12 * 3600e3, // hours
	24 * 3600e3, 2 * 24 * 3600e3, 7 * 24 * 3600e3, // days
}

// newTimeline returns empty bins covering first..last (Unix ms), aligned
// to a whole bin width.
func newTimeline(first, last int64) outcomeTimeline {
	span := last - first
	width := int64(0)
	for _, w := range binWidths {
		if span/w < timelineMaxBins {
			width = w
			break
		}
	}
	if width == 0 {
		week := binWidths[len(binWidths)-1]
		width = week * (span/(week*timelineMaxBins) + 1)
	}
	start := floorDiv(first, width) * width
	return outcomeTimeline{Start: start, Width: width, Bins: make([]outcomes, (last-start)/width+1)}
}

// bin returns the counts of the bin holding at (Unix ms, first..last).
func (tl *outcomeTimeline) bin(at int64) *outcomes {
	return &tl.Bins[(at-tl.Start)/tl.Width]
}

// floorDiv is a/b rounded down, for negative a too (times before 1970).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// simOptions tune a replay.
type simOptions struct {
	// TTL > 0 drops a push whose slot is at or after its time + TTL.
	TTL time.Duration
	// Zone is the time zone of the events that name none (nil: UTC).
	Zone *time.Location
	// HeldBy counts what held each push back (Result.HeldBy). It asks
	// the limiter to explain every booking, which costs about as much
	// again as the booking; a rule set with quiet hours is explained
	// anyway, for Result.Quiet.
	HeldBy bool
	// Step, when not nil, is called after every 1<<16 events with the
	// number of events done since the previous call.
	Step func(done int)
	// Detail keeps the delays and the timeline in Result.Detail.
	Detail bool
}

// tally accumulates the outcomes of a replay, or of one category's part
// of it.
type tally struct {
	events, allowed, deferred, dropped, optedOut int
	quietDeferred, quietDropped                  int
	delays, quietDelays                          []int64 // of the pushes sent; quiet hours' extra delay
}

// simulate replays tr's events through an in-memory limiter with rs's
// rules, on a clock that reads each event's time. Each event is a push
// booked as the worker books a delivery: ReserveBatch books its slot (the
// wait is its delay), refusing one at or after its time + TTL, which is
// then dropped. Explain first says, booking nothing, what the rules alone
// would give and which rule holds the push back most, when o.HeldBy asks
// or rs has quiet hours. A user's opt-outs (the trace's opted_out column)
// are put to the limiter when they change, before the push's booking,
// which refuses a push of a category opted out of. The figures are broken
// down by category when tr's lines name categories.
func simulate(ctx context.Context, tr trace, rs ruleSet, o simOptions) (Result, error) {
	events := tr.events
	start := time.Now()
	var now time.Time
	lim, err := throttle.NewMemory(rs.policy, throttle.Options{Clock: func() time.Time { return now }})
	if err != nil {
		return Result{}, fmt.Errorf("rules %s: %w", rs.name, err)
	}
	zone := cmp.Or(o.Zone, time.UTC)
	res := Result{Rules: rs.name, QuietHours: rs.policy.Quiet.String(), Timezone: zone.String(), Events: len(events)}
	for c, k := range rs.policy.Categories {
		if res.CategoryRules == nil {
			res.CategoryRules = map[string]string{}
		}
		res.CategoryRules[c] = k.String()
	}
	quiet := hasQuiet(rs.policy)
	explain := o.HeldBy || quiet
	if o.HeldBy {
		res.HeldBy = map[string]int{}
	}
	all := tally{delays: make([]int64, 0, len(events))}
	var cats []tally // by trace.categories
	if len(tr.categories) > 1 {
		cats = make([]tally, len(tr.categories))
	}
	held := make([]bool, len(tr.users))    // by trace.users: held back at least once
	prefs := make([]uint16, len(tr.users)) // by trace.users: the opt-outs the limiter holds
	ttlMs := o.TTL.Milliseconds()
	var member []byte
	var tl outcomeTimeline
	if o.Detail && len(events) > 0 {
		tl = newTimeline(events[0].at, events[len(events)-1].at)
	}
	reqs := make([]throttle.Request, 1)
	for i, ev := range events {
		if i&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return Result{}, err
			}
			if o.Step != nil && i > 0 {
				o.Step(0x10000)
			}
		}
		now = time.UnixMilli(ev.at)
		if ev.opt != prefs[ev.user] {
			// The user's opt-outs changed since their last push: the
			// limiter reads them at the booking, as the worker's does.
			if err := lim.PutPreferences(ctx, tr.users[ev.user], throttle.Preferences{OptOut: tr.optOuts[ev.opt]}); err != nil {
				return Result{}, fmt.Errorf("event %d: %w", i+1, err)
			}
			prefs[ev.user] = ev.opt
		}
		member = strconv.AppendInt(member[:0], int64(i), 36)
		q := throttle.Request{User: tr.users[ev.user], Member: string(member), Category: tr.categories[ev.cat],
			Location: cmp.Or(tr.zones[ev.zone], zone)}
		if ttlMs > 0 {
			// Refused when the slot is at or after the push's time + TTL,
			// as the worker books: its deadline less a millisecond.
			q.NotAfter = time.UnixMilli(ev.at + ttlMs - 1)
		}
		var ex throttle.Explanation
		if explain {
			if ex, err = lim.Explain(ctx, q); err != nil {
				return Result{}, fmt.Errorf("event %d: %w", i+1, err)
			}
		}
		reqs[0] = q
		booked, err := lim.ReserveBatch(ctx, reqs)
		if err != nil {
			return Result{}, fmt.Errorf("event %d: %w", i+1, err)
		}
		var deadline time.Time
		if ttlMs > 0 {
			deadline = now.Add(o.TTL)
		}
		oc := outcomeOf(booked[0], ex, explain, deadline)
		all.add(oc)
		if cats != nil {
			cats[ev.cat].add(oc)
		}
		if tl.Bins != nil {
			tl.bin(ev.at).add(oc.kind)
		}
		if oc.kind == outcomeAllowed || oc.kind == outcomeOptedOut {
			continue
		}
		held[ev.user] = true
		if res.HeldBy != nil {
			res.HeldBy[oc.heldBy]++
		}
	}
	res.Users = len(held)
	for _, h := range held {
		if h {
			res.UsersDeferred++
		}
	}
	res.Allowed, res.Deferred, res.Dropped, res.OptedOut = all.allowed, all.deferred, all.dropped, all.optedOut
	res.DeferredPct, res.DroppedPct = pct(all.deferred, all.events), pct(all.dropped, all.events)
	slices.Sort(all.delays)
	res.DelayP50 = percentile(all.delays, 50)
	res.DelayP90 = percentile(all.delays, 90)
	res.DelayP99 = percentile(all.delays, 99)
	res.DelayMax = percentile(all.delays, 100)
	res.DelayTotal = sum(all.delays)
	if quiet {
		slices.Sort(all.quietDelays)
		q := &quietResult{Deferred: all.quietDeferred, DeferredPct: pct(all.quietDeferred, all.events), Dropped: all.quietDropped,
			DelayP50: percentile(all.quietDelays, 50), DelayMax: percentile(all.quietDelays, 100), DelayTotal: sum(all.quietDelays)}
		if res.DelayTotal > 0 {
			q.DelayPct = 100 * float64(q.DelayTotal) / float64(res.DelayTotal)
		}
		res.Quiet = q
	}
	for _, c := range catOrder(tr.categories, cats) {
		t := &cats[c]
		slices.Sort(t.delays)
		res.Categories = append(res.Categories, categoryResult{Category: tr.categories[c], Events: t.events, Allowed: t.allowed,
			Deferred: t.deferred, Dropped: t.dropped, OptedOut: t.optedOut, DeferredPct: pct(t.deferred, t.events), DroppedPct: pct(t.dropped, t.events),
			DelayP50: percentile(t.delays, 50), DelayP99: percentile(t.delays, 99), DelayMax: percentile(t.delays, 100),
			QuietDeferred: t.quietDeferred})
	}
	if o.Detail {
		res.Detail = &simDetail{Rules: ruleNames(rs.policy), Delays: all.delays, Timeline: tl}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// catOrder are the indexes of the categories with events, by name.
func catOrder(names []string, cats []tally) []int {
	var out []int
	for i := range cats {
		if cats[i].events > 0 {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b int) int { return cmp.Compare(names[a], names[b]) })
	return out
}

// outcomeKind is what happened to a push.
type outcomeKind int

const (
	outcomeAllowed  outcomeKind = iota // sent at its own time
	outcomeDeferred                    // sent later, in its booked slot
	outcomeDropped                     // refused: its slot came too late
	outcomeOptedOut                    // refused: its user opted out of its category
)

// outcome is what the replay makes of one push's booking.
type outcome struct {
	kind outcomeKind
	// delay is the push's wait until its slot (deferred; 0 otherwise).
	delay int64
	// quietExtra is the part of delay the quiet hours added (deferred).
	quietExtra int64
	// quietDropped: dropped, though the rules alone would have given it
	// a slot before its deadline.
	quietDropped bool
	// heldBy is what held it back most (deferred or dropped): the rule
	// the limiter names, or heldByQuiet when the quiet hours held it back
	// longer than the rules did.
	heldBy string
}

// outcomeOf decides what booking r means for a push: allowed when its
// slot is now, opted out when its user opted out of its category, dropped
// when the limiter refused it otherwise (its slot at or after deadline,
// or, under quiet hours, too far ahead), else deferred. With
// explained, ex is the limiter's explanation of the same request just
// before: At - WithoutQuiet is the quiet hours' share of the wait,
// WithoutQuiet - Now the rules', and the larger names what held the push
// back (the rules on a tie). deadline is the push's time + --ttl (zero:
// none).
func outcomeOf(r throttle.Reservation, ex throttle.Explanation, explained bool, deadline time.Time) outcome {
	wait := r.Wait.Milliseconds()
	switch {
	case r.Refused == "" && wait == 0:
		return outcome{kind: outcomeAllowed}
	case r.Refused == throttle.RefusedOptedOut:
		return outcome{kind: outcomeOptedOut}
	}
	o := outcome{kind: outcomeDeferred, delay: wait}
	if r.Refused != "" {
		o = outcome{kind: outcomeDropped}
	}
	if !explained {
		return o
	}
	rules := max(0, ex.WithoutQuiet.Sub(ex.Now).Milliseconds())
	extra := max(0, ex.At.Sub(ex.WithoutQuiet).Milliseconds())
	o.heldBy = ex.HeldBy
	if extra > rules {
		o.heldBy = heldByQuiet
	}
	switch o.kind {
	case outcomeDeferred:
		o.quietExtra = min(extra, wait)
	case outcomeDropped:
		o.quietDropped = extra > 0 && (deadline.IsZero() || ex.WithoutQuiet.Before(deadline))
	}
	return o
}

// add counts o.
func (t *tally) add(o outcome) {
	t.events++
	switch o.kind {
	case outcomeAllowed:
		t.allowed++
		t.delays = append(t.delays, 0)
	case outcomeDeferred:
		t.deferred++
		t.delays = append(t.delays, o.delay)
		if o.quietExtra > 0 {
			t.quietDeferred++
			t.quietDelays = append(t.quietDelays, o.quietExtra)
		}
	case outcomeDropped:
		t.dropped++
		if o.quietDropped {
			t.quietDropped++
		}
	case outcomeOptedOut:
		t.optedOut++
	}
}

// add counts one push of kind k.
func (b *outcomes) add(k outcomeKind) {
	switch k {
	case outcomeAllowed:
		b.Allowed++
	case outcomeDeferred:
		b.Deferred++
	case outcomeDropped:
		b.Dropped++
	case outcomeOptedOut:
		b.OptedOut++
	}
}

// pct is n as a percentage of of (0 when of is 0).
func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

// percentile is the nearest-rank p-th percentile of sorted xs (0 when
// empty).
func percentile(xs []int64, p int) int64 {
	if len(xs) == 0 {
		return 0
	}
	k := (len(xs)*p + 99) / 100 // ceil(p% of n)
	return xs[max(k, 1)-1]
}
