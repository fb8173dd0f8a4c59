package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

// The two classic Redis rate-limiter designs the benchmarks compare the
// limiter against. They are written the way those designs are usually
// written, not improved: their costs are the point of the comparison.

// multiZSet is baseline (a), the classic sorted-set "sliding log" limiter.
// Every attempt, allowed or not, runs one MULTI/EXEC of
//
//	ZREMRANGEBYSCORE key 0 now-window   drop entries older than the window
//	ZRANGE key 0 -1                     read the whole log
//	ZADD key now member                 record this attempt
//	EXPIRE key window                   let an idle key go
//
// and the attempt is allowed when the log it read held fewer than N entries.
// Denied attempts are recorded too, so while a user is flooded their set, and
// the ZRANGE 0 -1 reply, grow with every attempt.
//
// The score is the client's clock in microseconds; the member adds a sequence
// number to it so two attempts in the same microsecond are two entries (the
// classic code uses the timestamp alone and silently merges them).
type multiZSet struct {
	rdb    redis.UniversalClient
	prefix string
	limit  throttle.Limit
	now    func() time.Time
	seq    atomic.Uint64
}

func newMultiZSet(rdb redis.UniversalClient, prefix string, limit throttle.Limit, now func() time.Time) *multiZSet {
	return &multiZSet{rdb: rdb, prefix: prefix, limit: limit, now: now}
}

func (l *multiZSet) allow(ctx context.Context, user string) (bool, error) {
	key := l.prefix + "{" + user + "}"
	us := l.now().UnixMicro()
	member := strconv.FormatInt(us, 10) + "-" + strconv.FormatUint(l.seq.Add(1), 10)
	var log *redis.StringSliceCmd
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, key, "0", strconv.FormatInt(us-l.limit.Window.Microseconds(), 10))
		log = p.ZRange(ctx, key, 0, -1)
		p.ZAdd(ctx, key, redis.Z{Score: float64(us), Member: member})
		p.Expire(ctx, key, l.limit.Window)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("multi zset baseline %s: %w", key, err)
	}
	return len(log.Val()) < l.limit.N, nil
}

// slidingCounter is baseline (b), the sliding-window counter (the approximate
// algorithm Cloudflare popularised). One pipelined round trip per attempt:
//
//	GET  key:<previous window index>
//	INCR key:<current window index>
//
// then, in the client, the weighted sum
//
//	estimate = previous * (W - elapsed in current window) / W + current
//
// allows the attempt when estimate <= N. Every attempt is counted. It sends no
// EXPIRE (a production version needs one, or a second round trip when INCR
// returns 1): leaving it out keeps this baseline as cheap as the design can be.
type slidingCounter struct {
	rdb    redis.UniversalClient
	prefix string
	limit  throttle.Limit
	now    func() time.Time
}

func newSlidingCounter(rdb redis.UniversalClient, prefix string, limit throttle.Limit, now func() time.Time) *slidingCounter {
	return &slidingCounter{rdb: rdb, prefix: prefix, limit: limit, now: now}
}

func (l *slidingCounter) allow(ctx context.Context, user string) (bool, error) {
	w := int64(l.limit.Window)
	now := l.now().UnixNano()
	idx := now / w
	elapsed := now - idx*w
	base := l.prefix + "{" + user + "}:"
	var prev *redis.StringCmd
	var cur *redis.IntCmd
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		prev = p.Get(ctx, base+strconv.FormatInt(idx-1, 10))
		cur = p.Incr(ctx, base+strconv.FormatInt(idx, 10))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("sliding counter baseline %s: %w", base, err)
	}
	if err := cur.Err(); err != nil {
		return false, fmt.Errorf("sliding counter baseline %s: incr: %w", base, err)
	}
	var before int64
	if err := prev.Err(); err == nil {
		if before, err = prev.Int64(); err != nil {
			return false, fmt.Errorf("sliding counter baseline %s: previous counter: %w", base, err)
		}
	} else if !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("sliding counter baseline %s: get: %w", base, err)
	}
	estimate := float64(before)*float64(w-elapsed)/float64(w) + float64(cur.Val())
	return estimate <= float64(l.limit.N), nil
}

// Two floors under any one-script-call limiter, to tell what a Reserve
// decision costs for being a script call from what it costs for its rules.

// scriptFloor calls a script that does nothing (return 1) on the user's
// key: the fixed cost of one script call, its round trip included. It
// decides nothing; no script-call limiter can cost less.
type scriptFloor struct {
	rdb    redis.UniversalClient
	prefix string
	script *redis.Script
}

func newScriptFloor(rdb redis.UniversalClient, prefix string) *scriptFloor {
	return &scriptFloor{rdb: rdb, prefix: prefix, script: redis.NewScript("return 1")}
}

func (l *scriptFloor) allow(ctx context.Context, user string) (bool, error) {
	key := l.prefix + "{" + user + "}"
	if err := l.script.Run(ctx, l.rdb, []string{key}).Err(); err != nil {
		return false, fmt.Errorf("script floor %s: %w", key, err)
	}
	return true, nil
}

// minimalExact is the smallest exact sorted-set limiter for one N/W rule
// in one script call: count the entries inside the window, and when there
// are fewer than N record this one and push the key's expiry out.
//
//	ZCOUNT  key now-W+1 +inf
//	ZADD    key now member
//	PEXPIRE key W
//
// It keeps no gap, books nothing ahead, never trims (entries leave with the
// key) and takes the client's clock: what hush's limiter does beyond it is
// what it costs beyond this.
type minimalExact struct {
	rdb    redis.UniversalClient
	prefix string
	limit  throttle.Limit
	now    func() time.Time
	seq    atomic.Uint64
	script *redis.Script
}

const minimalExactLua = `
local now, w, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('ZCOUNT', KEYS[1], now - w + 1, '+inf') >= n then return 0 end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], w)
return 1`

func newMinimalExact(rdb redis.UniversalClient, prefix string, limit throttle.Limit, now func() time.Time) *minimalExact {
	return &minimalExact{rdb: rdb, prefix: prefix, limit: limit, now: now, script: redis.NewScript(minimalExactLua)}
}

func (l *minimalExact) allow(ctx context.Context, user string) (bool, error) {
	key := l.prefix + "{" + user + "}"
	ms := l.now().UnixMilli()
	member := strconv.FormatInt(ms, 36) + "-" + strconv.FormatUint(l.seq.Add(1), 36)
	ok, err := l.script.Run(ctx, l.rdb, []string{key}, ms, l.limit.Window.Milliseconds(), l.limit.N, member).Int()
	if err != nil {
		return false, fmt.Errorf("minimal exact %s: %w", key, err)
	}
	return ok == 1, nil
}

// TestBaselines proves the benchmark baselines are real limiters: each
// allows N attempts in a window and then denies, and each counts what its
// design counts.
func TestBaselines(t *testing.T) {
	t.Parallel()
	limit := throttle.Limit{N: 10, Window: time.Minute}
	// A window start, so that the sliding counter's window index is exact.
	t0 := time.Unix(0, 0).Add(29_000_000 * time.Minute)

	type step struct {
		at   time.Duration // after t0
		n    int           // attempts at that instant
		want int           // how many of them must be allowed
	}
	type allowFunc func(ctx context.Context, user string) (bool, error)
	tests := []struct {
		name  string
		build func(rdb redis.UniversalClient, prefix string, now func() time.Time) allowFunc
		steps []step
	}{
		{
			name: "multi zset allows N then denies",
			build: func(rdb redis.UniversalClient, prefix string, now func() time.Time) allowFunc {
				return newMultiZSet(rdb, prefix, limit, now).allow
			},
			steps: []step{{at: 0, n: 15, want: 10}},
		},
		{
			// Denied attempts are recorded: the 5 denied at 30s still count
			// after the 10 allowed at 0s have left the window.
			name: "multi zset records denied attempts",
			build: func(rdb redis.UniversalClient, prefix string, now func() time.Time) allowFunc {
				return newMultiZSet(rdb, prefix, limit, now).allow
			},
			steps: []step{
				{at: 0, n: 10, want: 10},
				{at: 30 * time.Second, n: 5, want: 0},
				{at: 61 * time.Second, n: 8, want: 5},
			},
		},
		{
			name: "sliding counter allows N then denies",
			build: func(rdb redis.UniversalClient, prefix string, now func() time.Time) allowFunc {
				return newSlidingCounter(rdb, prefix, limit, now).allow
			},
			steps: []step{{at: 0, n: 15, want: 10}},
		},
		{
			// Half way through the next window the previous window's 15
			// attempts weigh 7.5: estimate = 7.5 + current <= 10 allows 2.
			name: "sliding counter weighs the previous window",
			build: func(rdb redis.UniversalClient, prefix string, now func() time.Time) allowFunc {
				return newSlidingCounter(rdb, prefix, limit, now).allow
			},
			steps: []step{
				{at: 0, n: 15, want: 10},
				{at: 90 * time.Second, n: 5, want: 2},
			},
		},
		{
			// Exact: the window rolls by the millisecond, and denied
			// attempts leave nothing behind.
			name: "minimal exact allows N in any window",
			build: func(rdb redis.UniversalClient, prefix string, now func() time.Time) allowFunc {
				return newMinimalExact(rdb, prefix, limit, now).allow
			},
			steps: []step{
				{at: 0, n: 6, want: 6},
				{at: 30 * time.Second, n: 6, want: 4},
				{at: 59_999 * time.Millisecond, n: 3, want: 0},
				{at: 60 * time.Second, n: 8, want: 6},
				{at: 90 * time.Second, n: 8, want: 4},
			},
		},
		{
			name: "script floor decides nothing",
			build: func(rdb redis.UniversalClient, prefix string, now func() time.Time) allowFunc {
				return newScriptFloor(rdb, prefix).allow
			},
			steps: []step{{at: 0, n: 15, want: 15}},
		},
	}
	rdb := redistest.Client(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var now atomic.Int64
			allow := tc.build(rdb, redistest.Prefix(t), func() time.Time { return time.Unix(0, now.Load()) })
			for _, s := range tc.steps {
				now.Store(t0.Add(s.at).UnixNano())
				got := 0
				for range s.n {
					ok, err := allow(t.Context(), "u-1")
					if err != nil {
						t.Fatalf("at %v: %v", s.at, err)
					}
					if ok {
						got++
					}
				}
				if got != s.want {
					t.Errorf("at %v, %d attempts: allowed %d, want %d", s.at, s.n, got, s.want)
				}
			}
		})
	}
}
