package throttle_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

// A key of the wrong type is an error from every operation, never a panic.
func TestRedisWrongTypeKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	l, err := throttle.NewRedis(rdb, mustPolicy(t, "1/1m", "1s"), throttle.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, l.Key("u"), "not a sorted set", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), l.Key("u")) })
	calls := []struct {
		name string
		call func() error
	}{
		{"allow", func() error { _, err := l.Allow(ctx, "u"); return err }},
		{"peek", func() error { _, err := l.Peek(ctx, "u"); return err }},
		{"reserve", func() error { _, err := l.Reserve(ctx, "u", "m"); return err }},
		{"release", func() error { _, err := l.Release(ctx, "u", "m"); return err }},
		{"status", func() error { _, err := l.Status(ctx, "u", nil); return err }},
		{"allow batch", func() error { _, err := l.AllowBatch(ctx, []string{"u"}); return err }},
		{"reserve batch", func() error { _, err := l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: "m"}}); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if !redis.HasErrorPrefix(err, "WRONGTYPE") {
				t.Errorf("error = %v, want Redis's WRONGTYPE", err)
			}
		})
	}
	// The batch reports the failed user and still answers the others.
	ds, err := l.AllowBatch(ctx, []string{"ok", "u"})
	if err == nil || !ds[0].Allowed || !ds[1].Now.IsZero() {
		t.Errorf("AllowBatch(ok, u) = %+v, %v; want ok allowed, u failed", ds, err)
	}
	rdb.Del(ctx, l.Key("ok"))
}

func isScriptCall(cmd redis.Cmder) bool {
	name := cmd.Name()
	return name == "eval" || name == "evalsha"
}

// countingHook counts the script calls a client sends: single commands,
// pipelines holding them and the script calls inside those pipelines
// (connection set-up is not counted).
type countingHook struct{ cmds, pipelines, pipelined atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isScriptCall(cmd) {
			h.cmds.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, isScriptCall) {
			h.pipelines.Add(1)
		}
		for _, c := range cmds {
			if isScriptCall(c) {
				h.pipelined.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// Batches take one round trip once the scripts are cached, and recover from
// an empty script cache (a fresh or flushed server) by falling back to EVAL.
func TestRedisBatchRoundTripsAndNoScript(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil { // open the connection first
		t.Fatal(err)
	}
	hook := &countingHook{}
	rdb.AddHook(hook)
	clock := newFakeClock()
	l, err := throttle.NewRedis(rdb, mustPolicy(t, "2/1s", ""), throttle.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	users := []string{"a", "b", "c", "a", "a"}
	wantAllowed := []bool{true, true, true, true, false}
	check := func(name string, wantPipelines int64) {
		t.Helper()
		hook.cmds.Store(0)
		hook.pipelines.Store(0)
		hook.pipelined.Store(0)
		ds, err := l.AllowBatch(ctx, users)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got []bool
		for _, d := range ds {
			got = append(got, d.Allowed)
		}
		if !slices.Equal(got, wantAllowed) {
			t.Errorf("%s: allowed = %v, want %v", name, got, wantAllowed)
		}
		if c, p := hook.cmds.Load(), hook.pipelines.Load(); c != 0 || p != wantPipelines {
			t.Errorf("%s: %d single commands and %d pipelines, want 0 and %d", name, c, p, wantPipelines)
		}
		// On a standalone server the whole batch is one script call (one
		// more per pipeline when the cache was empty).
		if s := hook.pipelined.Load(); s != wantPipelines {
			t.Errorf("%s: %d script calls in the pipelines, want %d", name, s, wantPipelines)
		}
	}
	check("fresh server", 2) // EVALSHA misses, EVAL loads
	clock.Set(1000)
	check("cached scripts", 1)
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	clock.Set(2000)
	check("flushed cache", 2)

	// Reserve batches too.
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	rs, err := l.ReserveBatch(ctx, []throttle.Request{{User: "r", Member: "1"}, {User: "r", Member: "2"}, {User: "r", Member: "3"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := []int64{rs[0].At.UnixMilli() - t0, rs[1].At.UnixMilli() - t0, rs[2].At.UnixMilli() - t0}; !slices.Equal(got, []int64{2000, 2000, 3000}) {
		t.Errorf("reserved slots %v, want [2000 2000 3000]", got)
	}
}

// A batch larger than one script call's chunk is split into several calls
// of one pipeline, in order; a user whose key is broken fails alone.
func TestRedisBatchChunks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	hook := &countingHook{}
	rdb.AddHook(hook)
	clock := newFakeClock()
	l, err := throttle.NewRedis(rdb, mustPolicy(t, "2/1s", ""), throttle.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	const n = 700 // three chunks
	broken := []int{0, 255, 256, 699}
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i%(n/3)) // every user three times, far apart
	}
	for _, i := range broken {
		users[i] = fmt.Sprintf("broken%d", i)
		if err := rdb.Set(ctx, l.Key(users[i]), "not a sorted set", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.AllowBatch(ctx, []string{"warm"}); err != nil { // load the script
		t.Fatal(err)
	}
	hook.pipelines.Store(0)
	hook.pipelined.Store(0)
	ds, err := l.AllowBatch(ctx, users)
	if p, s := hook.pipelines.Load(), hook.pipelined.Load(); p != 1 || s != 3 {
		t.Errorf("%d pipelines holding %d script calls, want 1 holding 3", p, s)
	}
	if !redis.HasErrorPrefix(err, "WRONGTYPE") {
		t.Errorf("error = %v, want WRONGTYPE", err)
	}
	seen := map[string]int{}
	for i, d := range ds {
		if slices.Contains(broken, i) {
			if !d.Now.IsZero() || !strings.Contains(err.Error(), strconv.Quote(users[i])) {
				t.Errorf("user %d (%s): %+v, want a failure named in the error", i, users[i], d)
			}
			continue
		}
		// The first two calls of a user are allowed, the third is denied.
		seen[users[i]]++
		want := seen[users[i]] <= 2
		if d.Allowed != want || !d.Now.Equal(at(0)) {
			t.Errorf("user %d (%s), call %d: %+v, want allowed %v at +0", i, users[i], seen[users[i]], d, want)
		}
	}
}

// The whole suite passes on a (one-node) Redis Cluster through a
// ClusterClient, whose pipelines split by slot.
func TestRedisCluster(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{Cluster: true})
	ctx := context.Background()
	node := srv.Client(t)
	if err := node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", "0", "16383").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := node.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok after 10s: %q %v", info, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}})
	t.Cleanup(func() { _ = cc.Close() })
	testLimiter(t, redisLimiters(cc))
}

// Many processes (each goroutine has its own client and limiter) hammering a
// few users never break a rule: afterwards no window holds more than N
// recorded entries and no two are closer than the gap.
func TestRedisConcurrent(t *testing.T) {
	t.Parallel()
	const (
		goroutines = 64
		n          = 5
		window     = 200 * time.Millisecond
		gap        = 20 * time.Millisecond
		run        = 1200 * time.Millisecond
	)
	users := []string{"x", "y", "z"}
	shared := redistest.Client(t)
	prefix := redistest.Prefix(t)
	p := throttle.Policy{Limits: []throttle.Limit{{N: n, Window: window}}, MinGap: gap}
	t.Cleanup(func() { deleteKeys(t, shared, prefix) })

	var mu sync.Mutex
	recorded := map[string][]int64{} // user -> times of allowed actions and bookings
	var calls atomic.Int64
	errs := make(chan error, goroutines)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		opt := *shared.Options()
		rdb := redis.NewClient(&opt)
		t.Cleanup(func() { _ = rdb.Close() })
		l, err := throttle.NewRedis(rdb, p, throttle.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			ctx := context.Background()
			local := map[string][]int64{}
			<-start
			// One booking each first, so the deciding scripts also see
			// future entries, then Allow until the time is up.
			u := users[g%len(users)]
			r, err := l.Reserve(ctx, u, fmt.Sprintf("g%d", g))
			if err != nil {
				errs <- err
				return
			}
			local[u] = append(local[u], r.At.UnixMilli())
			end := time.Now().Add(run)
			for i := 0; time.Now().Before(end); i++ {
				u := users[(g+i)%len(users)]
				d, err := l.Allow(ctx, u)
				calls.Add(1)
				if err != nil {
					errs <- err
					return
				}
				if d.Allowed {
					local[u] = append(local[u], d.Now.UnixMilli())
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for u, ts := range local {
				recorded[u] = append(recorded[u], ts...)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for _, u := range users {
		ts := recorded[u]
		slices.Sort(ts)
		total += len(ts)
		// Bookings alone are 64/3 per user; the Allow calls must have got
		// some past them too, or the test proved nothing about Allow.
		if len(ts) < goroutines/len(users)+n {
			t.Errorf("user %s: only %d entries recorded", u, len(ts))
		}
		for i := 0; i+n < len(ts); i++ {
			if span := ts[i+n] - ts[i]; span < window.Milliseconds() {
				t.Errorf("user %s: %d entries within %d ms: %v", u, n+1, span, ts[i:i+n+1])
			}
		}
		for i := 0; i+1 < len(ts); i++ {
			if d := ts[i+1] - ts[i]; d < gap.Milliseconds() {
				t.Errorf("user %s: entries %d ms apart: %v", u, d, ts[i:i+2])
			}
		}
		// Whatever Redis still holds was recorded by a call we saw.
		st, err := throttle.NewRedis(shared, p, throttle.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		s, err := st.Status(context.Background(), u, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range s.Entries {
			if _, found := slices.BinarySearch(ts, e.At.UnixMilli()); !found {
				t.Errorf("user %s: Redis holds %v at %d, which no call reported", u, e.Member, e.At.UnixMilli())
			}
		}
	}
	t.Logf("%d goroutines, %d Allow calls, %d entries recorded for %d users", goroutines, calls.Load(), total, len(users))
}

// Allow skips ZREMRANGEBYSCORE only when nothing can be trimmed: a user
// acting once per horizon never holds more than the entries inside it, and
// one acting faster keeps every entry inside it.
func TestRedisTrimsAgedEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
	clock := newFakeClock()
	l, err := throttle.NewRedis(rdb, mustPolicy(t, "3/10ms", ""), throttle.Options{Prefix: prefix, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name  string
		allow func(user string) (throttle.Decision, error)
	}{
		{"allow", func(u string) (throttle.Decision, error) { return l.Allow(ctx, u) }},
		{"allow batch", func(u string) (throttle.Decision, error) {
			ds, err := l.AllowBatch(ctx, []string{u})
			if err != nil {
				return throttle.Decision{}, err
			}
			return ds[0], nil
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			for _, tc := range []struct {
				every, want int64 // ms between allows, entries the set holds
			}{{10, 1}, {4, 3}, {7, 2}} {
				user := fmt.Sprintf("%s-every-%d", c.name, tc.every)
				for i := range int64(12) {
					clock.Set(1000 + i*tc.every)
					d, err := c.allow(user)
					if err != nil || !d.Allowed {
						t.Fatalf("every %d ms, call %d: %+v, %v", tc.every, i, d, err)
					}
					n, err := rdb.ZCard(ctx, l.Key(user)).Result()
					if err != nil {
						t.Fatal(err)
					}
					if i >= 3 && n != tc.want {
						t.Fatalf("every %d ms, call %d: the set holds %d entries, want %d", tc.every, i, n, tc.want)
					}
				}
			}
		})
	}
}

// Reserve does not trim a set before reading it (it reads only entries in
// the horizon) but on about one booking in eight as it writes: a user
// booked again and again keeps a set of a few dozen entries at most, not
// one per booking.
func TestRedisReserveTrimsAgedEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
	clock := newFakeClock()
	l, err := throttle.NewRedis(rdb, mustPolicy(t, "3/10ms", ""), throttle.Options{Prefix: prefix, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, every := range []int64{10, 8, 16, 4} {
		user := fmt.Sprintf("every-%d", every)
		most := int64(0)
		for i := range int64(400) {
			clock.Set(1000 + i*every)
			r, err := l.Reserve(ctx, user, fmt.Sprintf("r%d", i))
			if err != nil || r.Existing || r.Refused != "" {
				t.Fatalf("every %d ms, booking %d: %+v, %v", every, i, r, err)
			}
			n, err := rdb.ZCard(ctx, l.Key(user)).Result()
			if err != nil {
				t.Fatal(err)
			}
			most = max(most, n)
		}
		if most > 50 {
			t.Errorf("every %d ms: the set held up to %d entries after 400 bookings, want at most 50", every, most)
		}
	}
}

// A booking's commands inside reserve.lua, counted by a private Redis: a
// user with nothing in the window costs ZCOUNT, ZADD NX and PEXPIRE; one
// with past entries, one ZCOUNT more; and a held push asking for its slot
// again among many bookings after now gets it from ZSCORE without reading
// them (what a woken delivery does under pressure). The same with a cap on
// held bookings (HUSH_THROTTLE_MAX_PENDING, 100 by default): the count
// that finds the window empty tells the cap there is nothing held.
func TestRedisReserveCommands(t *testing.T) {
	t.Parallel()
	for _, maxPending := range []int{throttle.NoMaxPending, 100} {
		t.Run(fmt.Sprintf("max-pending=%d", maxPending), func(t *testing.T) {
			t.Parallel()
			reserveCommands(t, maxPending)
		})
	}
}

func reserveCommands(t *testing.T, maxPending int) {
	srv := redistest.Start(t)
	if !srv.Real() {
		t.Skip("needs a real redis-server for INFO commandstats")
	}
	ctx := context.Background()
	rdb := srv.Client(t)
	clock := newFakeClock()
	l, err := throttle.NewRedis(rdb, mustPolicy(t, "10/1m", ""), throttle.Options{Clock: clock.Now, MaxPending: maxPending})
	if err != nil {
		t.Fatal(err)
	}
	// commands books member for user at ms and returns the commands the
	// script ran (trims left out: they come on about one booking in eight)
	// and which.
	commands := func(user, member string, at int64) (int64, map[string]int64, throttle.Reservation) {
		t.Helper()
		clock.Set(at)
		before, err := commandCalls(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Reserve(ctx, user, member)
		if err != nil {
			t.Fatal(err)
		}
		after, err := commandCalls(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		ran := map[string]int64{}
		var n int64
		for name, c := range after {
			switch {
			case name == "info" || name == "hello" || name == "evalsha" || name == "eval" || name == "zremrangebyscore",
				strings.HasPrefix(name, "client|"), strings.HasPrefix(name, "script|"):
				continue
			}
			if d := c - before[name]; d > 0 {
				ran[name] = d
				n += d
			}
		}
		return n, ran, r
	}
	if n, ran, _ := commands("fresh", "a", 0); n != 3 || ran["zadd"] != 1 || ran["pexpire"] != 1 || ran["zcount"] != 1 {
		t.Errorf("a fresh user's booking ran %d commands %v, want ZCOUNT, ZADD, PEXPIRE", n, ran)
	}
	if n, ran, _ := commands("fresh", "b", 1000); n != 4 || ran["zcount"] != 2 {
		t.Errorf("a booking after a past one ran %d commands %v, want 2 ZCOUNT, ZADD, PEXPIRE", n, ran)
	}
	// 40 bookings at once: 10 now, 30 held in the next minutes.
	for i := range 40 {
		if _, _, r := commands("busy", fmt.Sprint("m", i), 0); r.Existing || r.Refused != "" {
			t.Fatalf("booking %d: %+v", i, r)
		}
	}
	n, ran, r := commands("busy", "m35", 10)
	if !r.Existing || r.At.Before(at(3*60_000)) {
		t.Fatalf("m35 asked again: %+v, want its held slot back", r)
	}
	if n > 3 || ran["zrangebyscore"] != 0 || ran["zscore"] != 1 {
		t.Errorf("a held push asking for its slot again ran %d commands %v, want at most 2 ZCOUNT and a ZSCORE, no read of the bookings", n, ran)
	}
}

// A scope puts a user's keys under it: two limiters of different scopes
// (two apps) keep separate budgets for the same user id; the same scope
// shares one.
func TestScopeSeparatesBudgets(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
	p := mustPolicy(t, "1/1m", "")
	mk := func(scope string) *throttle.Redis {
		l, err := throttle.NewRedis(rdb, p, throttle.Options{Prefix: prefix, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b, a2, none := mk("consumer"), mk("courier"), mk("consumer"), mk("")
	ctx := context.Background()
	for _, c := range []struct {
		l    *throttle.Redis
		want bool
	}{{a, true}, {b, true}, {a2, false}, {none, true}} {
		d, err := c.l.Allow(ctx, "u")
		if err != nil || d.Allowed != c.want {
			t.Errorf("%s: allowed %v (%v), want %v", c.l.Key("u"), d.Allowed, err, c.want)
		}
	}
	if a.Key("u") != prefix+"{consumer:u}" || none.Key("u") != prefix+"{u}" {
		t.Errorf("keys %q and %q", a.Key("u"), none.Key("u"))
	}
	if _, err := throttle.NewRedis(rdb, p, throttle.Options{Scope: "a:b"}); err == nil {
		t.Error("a scope with a colon was accepted")
	}
}
