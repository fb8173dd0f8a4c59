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
			delays = append(delays, 0)
			continue
		}
		users[ev.user] = true
		if o.HeldBy {
			res.HeldBy[deniedBy]++
		}
		if ttlMs > 0 && wait >= ttlMs {
			res.Dropped++
			if _, err := lim.Release(ctx, ev.user, string(member)); err != nil {
				return simResult{}, fmt.Errorf("event %d: %w", i+1, err)
			}
			continue
		}
		res.Deferred++
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
	res.Seconds = time.Since(start).Seconds()
	return res, nil
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
