package throttle

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPacerPrefix is the pace keys' prefix when Options.Prefix is empty.
const DefaultPacerPrefix = "hush:rate:"

// maxPaceSpan is the longest run of sends one request may ask for
// (N x interval), and the longest interval: about 52 days, so that every
// sum pacer.lua makes stays an integer below 2^53 nanoseconds, which its
// doubles hold exactly.
const maxPaceSpan = time.Duration(1 << 52)

// ErrInvalidPaceRequest is wrapped when a PaceRequest cannot be paced: an
// empty Key, a negative N, a Rate that is not a positive finite number, or
// N sends at Rate taking longer than about 52 days.
var ErrInvalidPaceRequest = errors.New("throttle: invalid pace request")

//go:embed pacer.lua
var pacerLua string

// PaceRequest asks for N consecutive send times on Key at Rate sends per
// second, none before NotBefore (zero: now) and, when Latest is set, the
// first no later than Latest: a request whose first time would come later
// is held, granted nothing, so a caller that cannot use a late time does
// not take it from the requests after it.
type PaceRequest struct {
	Key       string
	N         int
	Rate      float64
	NotBefore time.Time
	Latest    time.Time
}

// Pace is the send times granted: the i-th (0 <= i < N) at Now + Wait +
// i*Interval, on the limiter's clock.
type Pace struct {
	// Wait is from Now to the first granted time, never negative; 0 for a
	// request of no sends. Callers act on Wait rather than on an instant,
	// so their own clock skew is harmless. For a held request it is the
	// first time the key would have granted.
	Wait time.Duration
	// Interval is 1 s / Rate rounded up to a whole nanosecond, so the sends
	// never outrun Rate.
	Interval time.Duration
	// Now is the limiter's clock when it paced the request; zero marks a
	// request that failed.
	Now time.Time
	// Held marks a request whose first time would have come after its
	// Latest: it was granted nothing and the key did not move.
	Held bool
}

// paceInterval is the interval between two sends at rate, or false when
// rate is not a positive finite number or the interval is too long.
func paceInterval(rate float64) (time.Duration, bool) {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate <= 0 {
		return 0, false
	}
	ns := math.Ceil(float64(time.Second) / rate)
	if ns > float64(maxPaceSpan) {
		return 0, false
	}
	return time.Duration(ns), true
}

// checkPaceRequests validates every request and returns each one's
// interval.
func checkPaceRequests(reqs []PaceRequest) ([]time.Duration, error) {
	intervals := make([]time.Duration, len(reqs))
	for i, q := range reqs {
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%w: requests[%d] (key %q): %s", ErrInvalidPaceRequest, i, q.Key, fmt.Sprintf(format, a...))
		}
		iv, ok := paceInterval(q.Rate)
		switch {
		case q.Key == "":
			return nil, bad("empty key")
		case q.N < 0:
			return nil, bad("N %d: must not be negative", q.N)
		case !ok:
			return nil, bad("rate %v: want a positive finite number of sends per second, at least one per 52 days", q.Rate)
		case q.N > 0 && int64(q.N) > int64(maxPaceSpan/iv):
			return nil, bad("%d sends at %v/s take longer than 52 days", q.N, q.Rate)
		}
		intervals[i] = iv
	}
	return intervals, nil
}

// Pacer spreads sends on a key at a global rate, shared by every process
// through Redis: one TAT (the next free send time) per key, moved by one
// script call per batch of requests. It is safe for concurrent use.
type Pacer struct {
	rdb rediser
	// multiKey: one script call may touch any keys (rdb is a
	// *redis.Client); see Redis.multiKey.
	multiKey bool
	prefix   string
	clock    func() time.Time
	minTTL   int64
	script   *redis.Script
}

// NewPacer returns a pacer on rdb (a *redis.Client, a *redis.ClusterClient
// or any redis.UniversalClient); the caller owns rdb. Of the options it
// uses Prefix (default DefaultPacerPrefix) and Clock (default: the Redis
// server's TIME); the others are ignored.
func NewPacer(rdb rediser, o Options) (*Pacer, error) {
	if rdb == nil {
		return nil, errors.New("throttle: nil Redis client")
	}
	p := &Pacer{rdb: rdb, prefix: o.Prefix, clock: o.Clock, script: redis.NewScript(libLua + pacerLua)}
	_, p.multiKey = rdb.(*redis.Client)
	if p.prefix == "" {
		p.prefix = DefaultPacerPrefix
	}
	if p.clock != nil {
		p.minTTL = explicitClockMinTTL.Milliseconds()
	}
	return p, nil
}

// Key returns the Redis key holding the pace key name's TAT.
func (p *Pacer) Key(name string) string { return p.prefix + "{" + name + "}" }

// Pace grants each request its send times, in order: requests for one key
// get consecutive times that overlap no other request's on that key,
// whichever process asked. It makes one network round trip for all of
// them (two when the server has not cached the script yet).
//
// Invalid requests are an error before any I/O (ErrInvalidPaceRequest).
// When Redis fails, some requests may still have been granted: a Pace whose
// Now is zero marks a request that failed, and err joins one error per
// failed request.
func (p *Pacer) Pace(ctx context.Context, reqs []PaceRequest) ([]Pace, error) {
	reqs = mutantPace(reqs)
	intervals, err := checkPaceRequests(reqs)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]Pace, len(reqs))
	if len(reqs) == 0 {
		return out, nil
	}
	now := "" // the server's TIME
	if p.clock != nil {
		now = formatPaceTime(p.clock())
	}
	groups := paceGroups(reqs, p.multiKey)
	calls := make([]scriptCall, len(groups))
	for c, g := range groups {
		calls[c] = p.call(now, reqs, intervals, g)
	}
	var failed []error
	for c, cmd := range pipelineScript(ctx, p.rdb, nil, p.script, calls) {
		v, err := cmd.Result()
		g := groups[c]
		now, starts, err := parsePaceReply(v, err, len(g))
		for j, i := range g {
			e := err
			if e == nil {
				e = starts[j].err
			}
			if e != nil {
				failed = append(failed, fmt.Errorf("throttle: pace %q: %w", reqs[i].Key, e))
				continue
			}
			out[i] = Pace{Wait: starts[j].at.Sub(now), Interval: intervals[i], Now: now, Held: starts[j].held}
		}
	}
	return out, errors.Join(failed...)
}

// paceGroups splits the requests (their indexes, in order) into script
// calls: with multiKey, chunks of up to batchChunk requests; otherwise one
// group per key, in chunks, so each call touches one key and thus one
// slot. Either way a key's requests keep their order.
func paceGroups(reqs []PaceRequest, multiKey bool) [][]int {
	var groups [][]int
	if multiKey {
		for from := 0; from < len(reqs); from += batchChunk {
			g := make([]int, 0, min(batchChunk, len(reqs)-from))
			for i := from; i < min(from+batchChunk, len(reqs)); i++ {
				g = append(g, i)
			}
			groups = append(groups, g)
		}
		return groups
	}
	byKey := map[string][]int{}
	var keys []string
	for i, q := range reqs {
		if _, ok := byKey[q.Key]; !ok {
			keys = append(keys, q.Key)
		}
		byKey[q.Key] = append(byKey[q.Key], i)
	}
	for _, k := range keys {
		g := byKey[k]
		for from := 0; from < len(g); from += batchChunk {
			groups = append(groups, g[from:min(from+batchChunk, len(g))])
		}
	}
	return groups
}

// call builds pacer.lua's keys and arguments for the requests g at now.
func (p *Pacer) call(now string, reqs []PaceRequest, intervals []time.Duration, g []int) scriptCall {
	c := scriptCall{args: make([]any, 0, 2+5*len(g))}
	c.args = append(c.args, now, p.minTTL)
	index := map[string]int{}
	for _, i := range g {
		q := reqs[i]
		k, ok := index[q.Key]
		if !ok {
			c.keys = append(c.keys, p.Key(q.Key))
			k = len(c.keys) // Lua counts from 1
			index[q.Key] = k
		}
		span := time.Duration(q.N) * intervals[i]
		notBefore := ""
		if q.N > 0 && !q.NotBefore.IsZero() {
			notBefore = formatPaceTime(q.NotBefore)
		}
		latest := ""
		if q.N > 0 && !q.Latest.IsZero() {
			latest = formatPaceTime(q.Latest)
		}
		c.args = append(c.args, k, int64(span/time.Second), int64(span%time.Second), notBefore, latest)
	}
	return c
}

// formatPaceTime is a time as pacer.lua reads and stores it: Unix seconds,
// a dot, nine digits of nanoseconds.
func formatPaceTime(t time.Time) string {
	ns := strconv.Itoa(t.Nanosecond())
	return strconv.FormatInt(t.Unix(), 10) + "." + "000000000"[len(ns):] + ns
}

// paceStart is one request's answer in pacer.lua's reply: its first send
// time (held: the one it would have had), or why it failed.
type paceStart struct {
	at   time.Time
	held bool
	err  error
}

// parsePaceReply reads pacer.lua's reply for n requests: now and each
// request's start. err is the whole call's error.
func parsePaceReply(v any, err error, n int) (time.Time, []paceStart, error) {
	if err != nil {
		return time.Time{}, nil, err
	}
	a, ok := v.([]any)
	if !ok || len(a) != 2+n {
		return time.Time{}, nil, fmt.Errorf("%w: pace: want an array of %d, got %#v", ErrUnexpectedReply, 2+n, v)
	}
	now, ok := paceTime(a[0], a[1])
	if !ok {
		return time.Time{}, nil, fmt.Errorf("%w: pace: now %#v %#v", ErrUnexpectedReply, a[0], a[1])
	}
	starts := make([]paceStart, n)
	for j, e := range a[2:] {
		if err, isErr := e.(error); isErr {
			starts[j].err = err
			continue
		}
		st, ok := e.([]any)
		var t time.Time
		held := false
		if ok && (len(st) == 2 || len(st) == 3) {
			t, ok = paceTime(st[0], st[1])
		}
		if ok && len(st) == 3 {
			held = st[2] == int64(1)
			ok = held
		}
		if !ok || t.Before(now) {
			starts[j].err = fmt.Errorf("%w: pace: start %#v", ErrUnexpectedReply, e)
			continue
		}
		starts[j].at, starts[j].held = t, held
	}
	return now, starts, nil
}

// paceTime reads a time replied as seconds and nanoseconds.
func paceTime(s, ns any) (time.Time, bool) {
	sec, ok1 := s.(int64)
	nsec, ok2 := ns.(int64)
	if !ok1 || !ok2 || nsec < 0 || nsec >= int64(time.Second) {
		return time.Time{}, false
	}
	return time.Unix(sec, nsec), true
}

// MemoryPacer is the in-process pacer: the same semantics as Pacer, for a
// single process (the demo, `hush simulate`, tests). It is safe for
// concurrent use.
type MemoryPacer struct {
	clock func() time.Time

	mu     sync.Mutex
	tat    map[string]time.Time
	writes int
}

// NewMemoryPacer returns an in-memory pacer. Options.Clock defaults to
// time.Now; the other options are ignored.
func NewMemoryPacer(o Options) *MemoryPacer {
	clock := o.Clock
	if clock == nil {
		clock = time.Now
	}
	return &MemoryPacer{clock: clock, tat: map[string]time.Time{}}
}

// Pace grants each request its send times, in order, as Pacer.Pace does.
func (p *MemoryPacer) Pace(ctx context.Context, reqs []PaceRequest) ([]Pace, error) {
	intervals, err := checkPaceRequests(reqs)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]Pace, len(reqs))
	if len(reqs) == 0 {
		return out, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock().Round(0) // wall clock only, as Redis keeps it
	for i, q := range reqs {
		out[i] = Pace{Interval: intervals[i], Now: now}
		if q.N == 0 {
			continue
		}
		start := now
		if t, ok := p.tat[q.Key]; ok && t.After(start) {
			start = t
		}
		if q.NotBefore.After(start) {
			start = q.NotBefore.Round(0)
		}
		out[i].Wait = start.Sub(now)
		if !q.Latest.IsZero() && start.After(q.Latest) {
			out[i].Held = true
			continue
		}
		p.tat[q.Key] = start.Add(time.Duration(q.N) * intervals[i])
		p.writes++
	}
	if p.writes >= sweepEvery {
		p.writes = 0
		for k, t := range p.tat {
			if !t.After(now) {
				delete(p.tat, k) // free now, as an absent key is
			}
		}
	}
	return out, nil
}
