package throttle_test

import (
	"context"
	"flag"
	"fmt"
	"os"
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

// The benchmarks measure the Redis limiter against the two classic designs
// in baseline_test.go, on a real redis-server each benchmark starts for
// itself, so that Redis's own CPU accounting (INFO cpu, used_cpu_user +
// used_cpu_sys, read before and after the measured part only) sees nothing
// but that benchmark. They report
//
//	decisions/s            decisions made per second of wall time
//	redis-cpu-us/decision  Redis CPU spent per decision (user + system)
//
//	redis-cmd-us/decision  of which inside the design's top-level commands
//	                       (INFO commandstats usec of EVALSHA+EVAL, MULTI+EXEC
//	                       or GET+INCR; EXEC and EVALSHA include what they
//	                       run): the rest is network I/O and the event loop
//
// Every design enforces the same rule, 10/1m (the sliding counter with N=10,
// W=1m). The client side is fixed per scenario: g goroutines share one
// go-redis client whose pool has 2g connections.
//
//	go test -run '^$' -bench Spread -benchtime 5s ./throttle/
//	HUSH_BENCH_FLOOD=30s go test -run '^$' -bench HotUserFlood -benchtime 1x -v ./throttle/

const (
	benchUsers = 100_000
	batchSize  = 100
	benchN     = 10
	benchW     = time.Minute
)

func benchLimit() throttle.Limit { return throttle.Limit{N: benchN, Window: benchW} }

// benchRedis starts a private redis-server for one benchmark and returns a
// client sized for g goroutines.
func benchRedis(b *testing.B, g int) *redis.Client {
	b.Helper()
	srv := redistest.Start(b)
	if !srv.Real() {
		b.Skip("these benchmarks need a real redis-server: miniredis has no CPU accounting")
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 2 * g, MinIdleConns: g})
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// redisCPU is the Redis server's CPU time so far (INFO cpu, user + system).
func redisCPU(ctx context.Context, rdb redis.UniversalClient) (time.Duration, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO cpu: %w", err)
	}
	var total time.Duration
	found := 0
	for line := range strings.Lines(info) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "used_cpu_user" && name != "used_cpu_sys") {
			continue
		}
		secs, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu %s=%q: %w", name, value, err)
		}
		total += time.Duration(secs * float64(time.Second))
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("INFO cpu: used_cpu_user or used_cpu_sys missing in %q", info)
	}
	return total, nil
}

// redisCmdTime is the time Redis spent so far executing the named commands
// (INFO commandstats usec).
func redisCmdTime(ctx context.Context, rdb redis.UniversalClient, names []string) (time.Duration, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO commandstats: %w", err)
	}
	var total time.Duration
	for line := range strings.Lines(info) {
		name, stats, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		for field := range strings.SplitSeq(stats, ",") {
			if v, ok := strings.CutPrefix(field, "usec="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("INFO commandstats %s: %w", name, err)
				}
				total += time.Duration(us) * time.Microsecond
			}
		}
	}
	return total, nil
}

// redisCalls is the number of commands Redis executed so far, those its
// scripts called included (INFO commandstats calls), INFO itself aside: a
// count that does not depend on how busy the machine is.
func redisCalls(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	calls, err := commandCalls(ctx, rdb)
	if err != nil {
		return 0, err
	}
	var total int64
	for name, n := range calls {
		if name != "info" {
			total += n
		}
	}
	return total, nil
}

// commandCalls is how many times Redis ran each command so far (INFO
// commandstats calls), scripts' commands included.
func commandCalls(ctx context.Context, rdb redis.UniversalClient) (map[string]int64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats: %w", err)
	}
	calls := map[string]int64{}
	for line := range strings.Lines(info) {
		name, stats, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(stats, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("INFO commandstats %s: %w", name, err)
				}
				calls[name] = n
			}
		}
	}
	return calls, nil
}

// userNames returns n distinct user ids.
func userNames(n int) []string {
	users := make([]string, n)
	for i := range users {
		users[i] = "u-" + strconv.Itoa(i)
	}
	return users
}

// spreadPasses is how many passes over the users (the untimed one
// included) a spread run makes before it goes on with users of new names,
// so that no user is decided for more than benchN-1 times and reaches the
// rule, however long -benchtime makes the run. Left at the same names, a
// run of 10 timed passes (ReserveBatch100 at g=8) booked its last pass's
// users late and ran the limiter's capped path (waited/decision 0.10),
// which is not the spread case every design is compared on.
const spreadPasses = benchN - 1

// spreadUser is the user of decision k of a spread run over users.
func spreadUser(users []string, k int64) string {
	n := int64(len(users))
	if gen := k / (n * spreadPasses); gen > 0 {
		return users[k%n] + "/" + strconv.FormatInt(gen, 10)
	}
	return users[k%n]
}

// spreadBatch is the users of decisions from k to k+size-1 of a spread
// run (size divides len(users)).
func spreadBatch(users []string, k int64, size int) []string {
	n := int64(len(users))
	if k/(n*spreadPasses) == 0 {
		return users[k%n : k%n+int64(size)]
	}
	batch := make([]string, size)
	for j := range batch {
		batch[j] = spreadUser(users, k+int64(j))
	}
	return batch
}

// callFunc makes the decisions of call number i (one, or a batch).
type callFunc func(ctx context.Context, i int64) error

// pool runs calls on g goroutines sharing one client; the benchmark goroutine
// feeds it call numbers.
type pool struct {
	work chan int64
	wg   sync.WaitGroup
	errs chan error
}

func startPool(ctx context.Context, g int, call callFunc) *pool {
	p := &pool{work: make(chan int64, 4*g), errs: make(chan error, 1)}
	for range g {
		p.wg.Go(func() {
			for i := range p.work {
				if err := call(ctx, i); err != nil {
					select {
					case p.errs <- err:
					default:
					}
				}
			}
		})
	}
	return p
}

// stop waits for the calls already fed and returns the first error any
// call returned.
func (p *pool) stop() error {
	close(p.work)
	p.wg.Wait()
	select {
	case err := <-p.errs:
		return err
	default:
		return nil
	}
}

// measure runs a for b.Loop() benchmark whose every iteration is one call of
// perCall decisions, spread over g goroutines, after one untimed warm-up
// pass of warmCalls calls, and reports decisions/s, redis-cpu-us/decision,
// redis-cmd-us/decision (the time spent in the commands named cmds) and
// redis-calls/decision (every command Redis ran, scripts' included).
// It returns the number of timed calls.
func measure(b *testing.B, rdb redis.UniversalClient, g, perCall int, warmCalls int64, cmds []string, call callFunc) (timed int64) {
	b.Helper()
	ctx := b.Context()
	warm := startPool(ctx, g, call)
	for i := range warmCalls {
		warm.work <- i
	}
	if err := warm.stop(); err != nil {
		b.Fatalf("warm-up: %v", err)
	}

	p := startPool(ctx, g, call)
	cmd0, err := redisCmdTime(ctx, rdb, cmds)
	if err != nil {
		b.Fatal(err)
	}
	cpu0, err := redisCPU(ctx, rdb)
	if err != nil {
		b.Fatal(err)
	}
	calls0, err := redisCalls(ctx, rdb)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := time.Now()
	calls := warmCalls
	for b.Loop() {
		p.work <- calls
		calls++
	}
	err = p.stop()
	elapsed := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	cpu1, err := redisCPU(ctx, rdb)
	if err != nil {
		b.Fatal(err)
	}
	cmd1, err := redisCmdTime(ctx, rdb, cmds)
	if err != nil {
		b.Fatal(err)
	}
	calls1, err := redisCalls(ctx, rdb)
	if err != nil {
		b.Fatal(err)
	}
	decisions := float64(calls-warmCalls) * float64(perCall)
	b.ReportMetric(float64(calls1-calls0)/decisions, "redis-calls/decision")
	b.ReportMetric(decisions/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/decisions, "redis-cpu-us/decision")
	b.ReportMetric(float64((cmd1-cmd0).Microseconds())/decisions, "redis-cmd-us/decision")
	return calls - warmCalls
}

// design is one limiter under test: call makes the decisions of call number
// i, perCall of them, for the user(s) that number picks; cmds are the
// top-level Redis commands it sends.
type design struct {
	name    string
	perCall int
	cmds    []string
	build   func(b *testing.B, rdb redis.UniversalClient, users []string) callFunc
	// waited, when set, counts the timed decisions that did not book now
	// (the user's window was full: Wait > 0, or refused); a spread run
	// reports its share as waited/decision, which tells whether the run
	// still measured users under their limit.
	waited *atomic.Int64
}

func spreadDesigns() []design {
	one := func(allow func(ctx context.Context, user string) (bool, error), users []string) callFunc {
		return func(ctx context.Context, i int64) error {
			_, err := allow(ctx, spreadUser(users, i))
			return err
		}
	}
	return []design{
		{name: "Allow", perCall: 1, cmds: []string{"evalsha", "eval"}, build: func(b *testing.B, rdb redis.UniversalClient, users []string) callFunc {
			lim := newBenchLimiter(b, rdb)
			return one(func(ctx context.Context, user string) (bool, error) {
				d, err := lim.Allow(ctx, user)
				return d.Allowed, err
			}, users)
		}},
		{name: "AllowBatch100", perCall: batchSize, cmds: []string{"evalsha", "eval"}, build: func(b *testing.B, rdb redis.UniversalClient, users []string) callFunc {
			lim := newBenchLimiter(b, rdb)
			return func(ctx context.Context, i int64) error {
				_, err := lim.AllowBatch(ctx, spreadBatch(users, i*batchSize, batchSize))
				return err
			}
		}},
		// Reserve as the worker books (ReserveBatch, one request per call
		// or a batch of 100, with the default cap on held bookings),
		// without a category and with one whose own
		// rule (the same 10/1m) is decided over a second set.
		reserveDesign("Reserve", 1, ""),
		reserveDesign("ReserveCategory", 1, benchCategory),
		reserveDesign("ReserveBatch100", batchSize, ""),
		reserveDesign("ReserveBatch100Category", batchSize, benchCategory),
		{name: "MultiZSet", perCall: 1, cmds: []string{"multi", "exec"}, build: func(_ *testing.B, rdb redis.UniversalClient, users []string) callFunc {
			return one(newMultiZSet(rdb, "bench:multi:", benchLimit(), time.Now).allow, users)
		}},
		{name: "SlidingCounter", perCall: 1, cmds: []string{"get", "incr"}, build: func(_ *testing.B, rdb redis.UniversalClient, users []string) callFunc {
			return one(newSlidingCounter(rdb, "bench:counter:", benchLimit(), time.Now).allow, users)
		}},
		// The floors of a one-script-call decision (baseline_test.go).
		{name: "MinimalExact", perCall: 1, cmds: []string{"evalsha", "eval"}, build: func(_ *testing.B, rdb redis.UniversalClient, users []string) callFunc {
			return one(newMinimalExact(rdb, "bench:minimal:", benchLimit(), time.Now).allow, users)
		}},
		{name: "ScriptFloor", perCall: 1, cmds: []string{"evalsha", "eval"}, build: func(_ *testing.B, rdb redis.UniversalClient, users []string) callFunc {
			return one(newScriptFloor(rdb, "bench:floor:").allow, users)
		}},
	}
}

// benchCategory is the category of the Reserve designs that name one.
const benchCategory = "social"

// reserveDesign books n users per call (ReserveBatch), in category cat
// ("" none), each booking under a member of its own, and counts the timed
// bookings that were not for now.
func reserveDesign(name string, n int, cat string) design {
	waited := new(atomic.Int64)
	build := func(b *testing.B, rdb redis.UniversalClient, users []string) callFunc {
		waited.Store(0) // a run of its own, should the benchmark run again
		p := throttle.Policy{Limits: []throttle.Limit{benchLimit()},
			Categories: map[string]throttle.Category{benchCategory: {Limits: []throttle.Limit{benchLimit()}}}}
		// MaxPending as a deployment books: HUSH_THROTTLE_MAX_PENDING's
		// default.
		lim, err := throttle.NewRedis(rdb, p, throttle.Options{Prefix: "bench:reserve:", MaxPending: 100})
		if err != nil {
			b.Fatal(err)
		}
		return func(ctx context.Context, i int64) error {
			reqs := make([]throttle.Request, n)
			batch := spreadBatch(users, i*int64(n), n)
			for k := range reqs {
				reqs[k] = throttle.Request{User: batch[k], Member: "m" + strconv.FormatInt(i*int64(n)+int64(k), 36), Category: cat}
			}
			res, err := lim.ReserveBatch(ctx, reqs)
			if err != nil || i < int64(len(users)/n) {
				return err // the warm-up pass is not counted
			}
			for _, r := range res {
				if r.Refused != "" || r.Wait > 0 {
					waited.Add(1)
				}
			}
			return nil
		}
	}
	return design{name: name, perCall: n, cmds: []string{"evalsha", "eval"}, build: build, waited: waited}
}

func newBenchLimiter(b *testing.B, rdb redis.UniversalClient) *throttle.Redis {
	b.Helper()
	lim, err := throttle.NewRedis(rdb, throttle.Policy{Limits: []throttle.Limit{benchLimit()}}, throttle.Options{Prefix: "bench:allow:"})
	if err != nil {
		b.Fatal(err)
	}
	return lim
}

// BenchmarkSpread100k makes decisions for 100,000 users in turn (each user
// about once per pass, at most 9 times (spreadPasses), so every decision
// is allowed), after one untimed pass over all of them so every user
// already has state (users of a new name, after 9 passes, have none). g is the
// number of goroutines sharing the client; AllowBatch100 decides for 100
// users per call, in one round trip.
func BenchmarkSpread100k(b *testing.B) {
	users := userNames(benchUsers)
	for _, g := range []int{1, 8} {
		for _, d := range spreadDesigns() {
			b.Run(fmt.Sprintf("g=%d/%s", g, d.name), func(b *testing.B) {
				rdb := benchRedis(b, g)
				call := d.build(b, rdb, users)
				warm := int64(len(users) / d.perCall)
				calls := measure(b, rdb, g, d.perCall, warm, d.cmds, call)
				if d.waited != nil {
					b.ReportMetric(float64(d.waited.Load())/float64(calls*int64(d.perCall)), "waited/decision")
				}
			})
		}
	}
}

// floodDuration is how long each design is flooded: HUSH_BENCH_FLOOD (a Go
// duration), default 30s.
func floodDuration(b *testing.B) time.Duration {
	b.Helper()
	v := os.Getenv("HUSH_BENCH_FLOOD")
	if v == "" {
		return 30 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 2*time.Second {
		b.Fatalf("HUSH_BENCH_FLOOD=%q: want a duration of at least 2s", v)
	}
	return d
}

// floodSecond is one second of a flood.
type floodSecond struct {
	decisions int64
	cpu       time.Duration
}

// flood runs allow for one user on g goroutines for d (whole seconds) and
// returns what each second cost. Decisions still in flight when the last
// second ends are not counted.
func flood(b *testing.B, rdb redis.UniversalClient, g int, d time.Duration, allow func(ctx context.Context) error) []floodSecond {
	b.Helper()
	ctx := b.Context()
	var count atomic.Int64
	var stopped atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	cpuPrev, err := redisCPU(ctx, rdb)
	if err != nil {
		b.Fatal(err)
	}
	for range g {
		wg.Go(func() {
			for !stopped.Load() {
				if err := allow(ctx); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
				count.Add(1)
			}
		})
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	seconds := make([]floodSecond, 0, int(d/time.Second))
	var countPrev int64
	for len(seconds) < cap(seconds) {
		<-tick.C
		n := count.Load()
		cpu, err := redisCPU(ctx, rdb)
		if err != nil {
			stopped.Store(true)
			wg.Wait()
			b.Fatal(err)
		}
		seconds = append(seconds, floodSecond{decisions: n - countPrev, cpu: cpu - cpuPrev})
		countPrev, cpuPrev = n, cpu
	}
	stopped.Store(true)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	return seconds
}

// cpuPerDecision is the Redis CPU microseconds per decision over seconds.
func cpuPerDecision(seconds []floodSecond) float64 {
	var cpu time.Duration
	var n int64
	for _, s := range seconds {
		cpu += s.cpu
		n += s.decisions
	}
	if n == 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(n)
}

// BenchmarkHotUserFlood30s floods one user with Allow, then with baseline (a)
// (MultiZSet), on the same Redis with 8 goroutines each, for 30 s each
// (HUSH_BENCH_FLOOD overrides), and reports per design the Redis CPU per
// decision over the first and the last 5 s, and the end ratio (a)/Allow. It
// runs only when -bench names it, as it takes a minute whatever -benchtime
// says; run it with -benchtime 1x so the testing package does not repeat it.
func BenchmarkHotUserFlood30s(b *testing.B) {
	if !strings.Contains(flag.Lookup("test.bench").Value.String(), "Flood") {
		b.Skip("runs only when -bench names it: -bench HotUserFlood -benchtime 1x")
	}
	const g = 8
	d := floodDuration(b)
	rdb := benchRedis(b, g)
	lim := newBenchLimiter(b, rdb)
	multi := newMultiZSet(rdb, "bench:multi:", benchLimit(), time.Now)

	runs := []struct {
		name  string
		allow func(ctx context.Context) error
	}{
		{"Allow", func(ctx context.Context) error { _, err := lim.Allow(ctx, "hot"); return err }},
		{"MultiZSet", func(ctx context.Context) error { _, err := multi.allow(ctx, "hot"); return err }},
	}
	var last [2]float64
	for k, r := range runs {
		seconds := flood(b, rdb, g, d, r.allow)
		edge := min(5, len(seconds)/2)
		first, end := cpuPerDecision(seconds[:edge]), cpuPerDecision(seconds[len(seconds)-edge:])
		last[k] = end
		var t strings.Builder
		fmt.Fprintf(&t, "%s flooded for %v by %d goroutines:\n  second  decisions/s  redis-cpu-us/decision\n", r.name, d, g)
		for i, s := range seconds {
			fmt.Fprintf(&t, "  %6d  %11d  %21.2f\n", i+1, s.decisions, cpuPerDecision(seconds[i:i+1]))
		}
		b.Log(t.String())
		b.ReportMetric(first, r.name+"-first5s-cpu-us/decision")
		b.ReportMetric(end, r.name+"-last5s-cpu-us/decision")
		b.ReportMetric(float64(sumDecisions(seconds))/float64(len(seconds)), r.name+"-decisions/s")
	}
	if last[0] > 0 {
		b.ReportMetric(last[1]/last[0], "end-ratio-MultiZSet/Allow")
	}
}

func sumDecisions(seconds []floodSecond) int64 {
	var n int64
	for _, s := range seconds {
		n += s.decisions
	}
	return n
}

// TestSpreadRunsStayUnderTheRule: however many passes a spread run makes,
// no user is decided for as often as the rule allows, one by one or in
// batches, and every pass decides for every user of its generation.
func TestSpreadRunsStayUnderTheRule(t *testing.T) {
	users := userNames(1000)
	for _, size := range []int{1, batchSize} {
		seen := map[string]int{}
		const passes = 3*spreadPasses + 2
		for k := int64(0); k < passes*int64(len(users)); k += int64(size) {
			for _, u := range spreadBatch(users, k, size) {
				seen[u]++
			}
		}
		if len(seen) != 4*len(users) {
			t.Errorf("batches of %d: %d users over %d passes, want %d", size, len(seen), passes, 4*len(users))
		}
		for u, n := range seen {
			if n >= benchN || n != spreadPasses && !strings.HasSuffix(u, "/3") {
				t.Fatalf("batches of %d: %s decided for %d times, want %d (at most %d)", size, u, n, spreadPasses, benchN-1)
			}
		}
	}
}
