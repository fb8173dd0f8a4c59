package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hushpush/hush/throttle"
)

// ruleSet is one policy to replay a trace against, named as the user wrote
// it.
type ruleSet struct {
	name   string
	policy throttle.Policy
}

// parseRuleSet reads "LIMITS[@GAP]": "10/1m,100/24h@3s", "3/10s", "@2s".
func parseRuleSet(s string) (ruleSet, error) {
	limits, gap, _ := strings.Cut(s, "@")
	p, err := throttle.ParsePolicy(limits, gap)
	if err != nil {
		return ruleSet{}, fmt.Errorf("rules %q: %w", s, err)
	}
	return ruleSet{name: p.String(), policy: p}, nil
}

// simResult is what one rule set did to a trace. Delays are in
// milliseconds.
type simResult struct {
	Rules    string `json:"rules"`
	Events   int    `json:"events"`
	Allowed  int    `json:"allowed_now"`
	Deferred int    `json:"deferred"`
	Dropped  int    `json:"dropped_expired"`
	// DeferredPct and DroppedPct are shares of Events.
	DeferredPct float64 `json:"deferred_pct"`
	DroppedPct  float64 `json:"dropped_pct"`
	// Delay percentiles over every push that was sent (allowed now counts
	// as 0), nearest rank.
	DelayP50 int64 `json:"delay_p50_ms"`
	DelayP90 int64 `json:"delay_p90_ms"`
	DelayP99 int64 `json:"delay_p99_ms"`
	DelayMax int64 `json:"delay_max_ms"`
	// HeldBy counts deferred and dropped pushes by the rule that held them
	// back most (the limiter's DeniedBy).
	HeldBy map[string]int `json:"held_back_by,omitempty"`
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
type outcomes struct{ Allowed, Deferred, Dropped int }

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
	// HeldBy asks the limiter (Peek) which rule holds each push back; it
	// costs about as much again as the booking.
	HeldBy bool
	// Step, when not nil, is called after every 1<<16 events with the
	// number of events done since the previous call.
	Step func(done int)
	// Detail keeps the delays and the timeline in simResult.Detail.
	Detail bool
}

// simulate replays events through an in-memory limiter with rs's rules, on a
// clock that reads each event's time. Each event is a push: Reserve books
// its slot (the wait is its delay) and, with HeldBy, Peek first says which
// rule would hold it back. With a TTL a push whose slot is at or after its
// time + TTL is dropped and its booking released, as the worker does.
func simulate(ctx context.Context, events []traceEvent, rs ruleSet, o simOptions) (simResult, error) {
	start := time.Now()
	var now time.Time
	lim, err := throttle.NewMemory(rs.policy, throttle.Options{Clock: func() time.Time { return now }})
	if err != nil {
		return simResult{}, fmt.Errorf("rules %s: %w", rs.name, err)
	}
	res := simResult{Rules: rs.name, Events: len(events), HeldBy: map[string]int{}}
	delays := make([]int64, 0, len(events))
	users := map[string]bool{} // user -> held back at least once
	ttlMs := o.TTL.Milliseconds()
	var member []byte
	var tl outcomeTimeline
	if o.Detail && len(events) > 0 {
		tl = newTimeline(events[0].at, events[len(events)-1].at)
	}
	for i, ev := range events {
		if i&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return simResult{}, err
			}
			if o.Step != nil && i > 0 {
				o.Step(0x10000)
			}
		}
		now = time.UnixMilli(ev.at)
		var deniedBy string
		if o.HeldBy {
			d, err := lim.Peek(ctx, ev.user)
			if err != nil {
				return simResult{}, fmt.Errorf("event %d: %w", i+1, err)
			}
			deniedBy = d.DeniedBy
		}
		if _, seen := users[ev.user]; !seen {
			users[ev.user] = false
		}
		member = strconv.AppendInt(member[:0], int64(i), 36)
		r, err := lim.Reserve(ctx, ev.user, string(member))
		if err != nil {
			return simResult{}, fmt.Errorf("event %d: %w", i+1, err)
		}
		wait := r.Wait.Milliseconds()
		if wait == 0 {
			res.Allowed++
			if tl.Bins != nil {
				tl.bin(ev.at).Allowed++
			}
			delays = append(delays, 0)
			continue
		}
		users[ev.user] = true
		if o.HeldBy {
			res.HeldBy[deniedBy]++
		}
		if ttlMs > 0 && wait >= ttlMs {
			res.Dropped++
			if tl.Bins != nil {
				tl.bin(ev.at).Dropped++
			}
			if _, err := lim.Release(ctx, ev.user, string(member)); err != nil {
				return simResult{}, fmt.Errorf("event %d: %w", i+1, err)
			}
			continue
		}
		res.Deferred++
		if tl.Bins != nil {
			tl.bin(ev.at).Deferred++
		}
		delays = append(delays, wait)
	}
	res.Users = len(users)
	for _, held := range users {
		if held {
			res.UsersDeferred++
		}
	}
	if res.Events > 0 {
		res.DeferredPct = 100 * float64(res.Deferred) / float64(res.Events)
		res.DroppedPct = 100 * float64(res.Dropped) / float64(res.Events)
	}
	slices.Sort(delays)
	res.DelayP50 = percentile(delays, 50)
	res.DelayP90 = percentile(delays, 90)
	res.DelayP99 = percentile(delays, 99)
	if len(delays) > 0 {
		res.DelayMax = delays[len(delays)-1]
	}
	if o.Detail {
		res.Detail = &simDetail{Rules: ruleNames(rs.policy), Delays: delays, Timeline: tl}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// ruleNames are p's rules named as Decision.DeniedBy names them: each
// limit, then the gap when there is one.
func ruleNames(p throttle.Policy) []string {
	var names []string
	for _, l := range p.Limits {
		names = append(names, l.String())
	}
	if p.MinGap > 0 {
		names = append(names, throttle.Policy{MinGap: p.MinGap}.String())
	}
	return names
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
