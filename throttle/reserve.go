package throttle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReserveBatchWith is ReserveBatch sharing its round trip with the caller's
// own commands: queue (when not nil) adds them to the pipeline, on the
// limiter's client, before the bookings, and the caller reads their results
// from the commands it queued once ReserveBatchWith returns. The limiter
// does not look at them; a command of theirs that fails does not fail the
// bookings.
func (l *Redis) ReserveBatchWith(ctx context.Context, reqs []Request, queue func(redis.Pipeliner)) ([]Reservation, error) {
	if err := checkRequests(reqs); err != nil {
		return nil, err
	}
	out := make([]Reservation, len(reqs))
	var failed []error
	fail := func(i int, err error) {
		failed = append(failed, fmt.Errorf("throttle: reserve %q: %w", reqs[i].User, err))
	}
	// A request with an unknown category fails alone; the rest are booked.
	var bs []booking
	for i, q := range reqs {
		b, err := l.plan(i, q)
		if err != nil {
			fail(i, err)
			continue
		}
		bs = append(bs, b)
	}
	// One call per chunk of requests where one script may touch any keys,
	// one per node's chunk on Redis Cluster, else one per request (its
	// keys share the user's hash tag).
	parts := l.reserveParts(ctx, bs)
	calls := make([]scriptCall, len(parts))
	for c, part := range parts {
		calls[c] = l.reserveCall(part)
		if l.cluster != nil && len(part) > 1 {
			calls[c] = nodeForm(calls[c])
		}
	}
	again := l.takeReservations(l.pipeline(ctx, queue, l.scripts.reserve, calls), parts, out, fail)
	if mutant("noTTL") {
		mutantPersist(ctx, l.rdb, calls)
	}
	// Requests of a node's call whose keys that node did not serve (the
	// client's slot map was behind a resharding) were not booked there:
	// each is booked on its own, where the cluster client's redirections
	// lead.
	if len(again) > 0 {
		parts, calls = make([][]booking, len(again)), make([]scriptCall, len(again))
		for k, b := range again {
			parts[k] = []booking{b}
			calls[k] = l.reserveCall(parts[k])
		}
		_ = l.takeReservations(l.pipeline(ctx, nil, l.scripts.reserve, calls), parts, out, fail)
	}
	return out, errors.Join(failed...)
}

// takeReservations reads each call's replies into out (fail reports a
// failed request) and returns the requests a node's call found on another
// node ("NOTHERE"), which it neither fails nor fills.
func (l *Redis) takeReservations(cmds []*redis.Cmd, parts [][]booking, out []Reservation, fail func(int, error)) (again []booking) {
	for c, cmd := range cmds {
		part := parts[c]
		v, err := cmd.Result()
		a, ok := v.([]any)
		var now int64
		if err == nil && ok && len(a) == len(part)+1 {
			now, ok = a[len(part)].(int64)
		}
		if err == nil && (!ok || len(a) != len(part)+1) {
			err = fmt.Errorf("%w: reserve: want an array of %d replies and now, got %#v", ErrUnexpectedReply, len(part), v)
		}
		for j, b := range part {
			switch {
			case err != nil:
				fail(b.i, err)
			case isError(a[j]):
				if redis.HasErrorPrefix(a[j].(error), "NOTHERE") {
					again = append(again, b)
				} else {
					fail(b.i, a[j].(error))
				}
			default:
				res, held, perr := parseReservation(a[j], now)
				if perr != nil {
					fail(b.i, perr)
					continue
				}
				res.HeldBy = heldName(b.sets, b.quietRule, held)
				out[b.i] = res
			}
		}
	}
	return again
}

// reserveParts splits bs into the requests of one script call each: on a
// *redis.Client chunks of batchChunk; on Redis Cluster, chunks of the
// requests whose keys the client's slot map places on one node (in order,
// so a user's requests stay in order); otherwise one request per call.
func (l *Redis) reserveParts(ctx context.Context, bs []booking) [][]booking {
	var parts [][]booking
	switch {
	case l.multiKey:
		for from := 0; from < len(bs); from += batchChunk {
			parts = append(parts, bs[from:min(from+batchChunk, len(bs))])
		}
	case l.cluster != nil:
		at := map[*redis.Client]int{} // node -> its part in parts being filled
		for _, b := range bs {
			node, err := l.cluster.MasterForKey(ctx, l.setKey(b.q.User, b.sets[0].cat))
			if err != nil { // a call of its own, which reports the error
				parts = append(parts, []booking{b})
				continue
			}
			p, ok := at[node]
			if !ok || len(parts[p]) == batchChunk {
				p = len(parts)
				at[node] = p
				parts = append(parts, nil)
			}
			parts[p] = append(parts[p], b)
		}
	default:
		for i := range bs {
			parts = append(parts, bs[i:i+1])
		}
	}
	return parts
}

// nodeForm is c in reserve.lua's node form: its first key routes the call
// and every key travels in ARGV, so that one call may book users of any
// slots its node serves.
func nodeForm(c scriptCall) scriptCall {
	args := make([]any, 0, 2+len(c.keys)+len(c.args))
	args = append(args, "node", len(c.keys))
	for _, k := range c.keys {
		args = append(args, k)
	}
	return scriptCall{keys: c.keys[:1], args: append(args, c.args...)}
}

func isError(v any) bool {
	_, ok := v.(error)
	return ok
}

// booking is one request ready for reserve.lua: its sets, quiet intervals
// and bounds in ms.
type booking struct {
	i                   int // the request's index
	q                   Request
	sets                []set
	quietRule           Quiet      // the request's quiet hours, for HeldBy
	quiet               []interval // quietRule's intervals the search may meet
	notAfter, notBefore int64      // ms, 0 none
	optOut              bool       // the user's opt-outs apply (optOutable)
}

// plan prepares request i. The quiet intervals start a day before the
// local clock's view of the earliest slot, so a server clock up to a day
// off still finds every interval that matters.
func (l *Redis) plan(i int, q Request) (booking, error) {
	sets, quiet, err := l.c.plan(q.Category)
	if err != nil {
		return booking{}, err
	}
	local := time.Now
	if l.clock != nil {
		local = l.clock
	}
	b := booking{i: i, q: q, sets: sets, quietRule: quiet, notBefore: notAfterMs(q.NotBefore), optOut: l.c.optOutable(q)}
	start := max(local().UnixMilli(), b.notBefore)
	b.quiet, b.notAfter = window(quiet, q.Location, start-dayMs, start, notAfterMs(q.NotAfter))
	return b, nil
}

// reserveCall is reserve.lua's call for bs: its keys and ARGV in the order
// the script's header names them.
func (l *Redis) reserveCall(bs []booking) scriptCall {
	index := map[*rules]int{} // rule set -> its number in ARGV, from 1
	var ruleArgs []any
	for _, b := range bs {
		for _, s := range b.sets {
			if _, ok := index[s.r]; ok {
				continue
			}
			index[s.r] = len(index) + 1
			ruleArgs = append(ruleArgs, s.r.gap, s.r.horizon, len(s.r.n))
			for k := range s.r.n {
				ruleArgs = append(ruleArgs, s.r.n[k], s.r.w[k])
			}
		}
	}
	args := []any{
		l.now(),      // ARGV[1] now
		l.minTTL,     // ARGV[2] minttl
		l.maxPending, // ARGV[3] max pending
		l.margin,     // ARGV[4] collapse margin
		len(index),   // ARGV[5] R, then the rule sets
	}
	args = append(args, ruleArgs...)
	var keys []string
	for _, b := range bs {
		q := b.q
		if len(b.sets) == 1 && b.notBefore == 0 && q.CollapseKey == "" && len(b.quiet) == 0 && !b.optOut {
			// The short form: its rule set, member, not-after. (A category
			// names the set, in its key; the script reads it only for a
			// collapse key.)
			keys = append(keys, l.setKey(q.User, b.sets[0].cat))
			args = append(args, index[b.sets[0].r], q.Member, msArg(b.notAfter))
			continue
		}
		args = append(args, 0, q.Member, msArg(b.notAfter), msArg(b.notBefore), q.Category, q.CollapseKey, notAfterMs(q.Accepted), len(b.sets))
		for _, s := range b.sets {
			keys = append(keys, l.setKey(q.User, s.cat))
			args = append(args, index[s.r])
		}
		if q.CollapseKey != "" {
			keys = append(keys, l.collapseKey(q.User))
		}
		if b.optOut {
			keys = append(keys, l.prefsKey(q.User))
			args = append(args, 1)
		} else {
			args = append(args, 0)
		}
		args = append(args, len(b.quiet))
		for _, iv := range b.quiet {
			args = append(args, iv.s, iv.e)
		}
	}
	return scriptCall{keys: keys, args: args}
}
