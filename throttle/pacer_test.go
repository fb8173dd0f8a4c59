package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

// pacer is what the tests need of Pacer and MemoryPacer.
type pacer interface {
	Pace(ctx context.Context, reqs []throttle.PaceRequest) ([]throttle.Pace, error)
}

// paceBase is where the explicit clocks start: a fraction of a second, so
// that nanoseconds must survive the trip through Redis.
var paceBase = time.Unix(1_800_000_000, 123_456_789)

// paceClock is an explicit clock with nanoseconds the test moves.
type paceClock struct{ ns atomic.Int64 }

func newPaceClock() *paceClock {
	c := &paceClock{}
	c.ns.Store(paceBase.UnixNano())
	return c
}

func (c *paceClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *paceClock) Set(d time.Duration)     { c.ns.Store(paceBase.Add(d).UnixNano()) }
func (c *paceClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// newPacerFunc makes a fresh pacer with options o, isolated from every
// other test's.
type newPacerFunc func(t *testing.T, o throttle.Options) pacer

func memoryPacers(t *testing.T, o throttle.Options) pacer { return throttle.NewMemoryPacer(o) }

func redisPacers(rdb redis.UniversalClient) newPacerFunc {
	return func(t *testing.T, o throttle.Options) pacer {
		t.Helper()
		o.Prefix = redistest.Prefix(t)
		p, err := throttle.NewPacer(rdb, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteKeys(t, rdb, o.Prefix) })
		return p
	}
}

func miniredisClient(t *testing.T) *redis.Client {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// oneNodeCluster returns a client of a Redis Cluster of one node: the
// pacer takes its path for clients whose keys may live on other nodes.
func oneNodeCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
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
	return cc
}

// pacerImpls are the implementations every semantic test runs on: memory,
// the shared real Redis (one script call per batch), a one-node cluster
// (one call per key) and miniredis (gopher-lua).
func pacerImpls(t *testing.T) map[string]newPacerFunc {
	return map[string]newPacerFunc{
		"memory":    memoryPacers,
		"redis":     redisPacers(redistest.Client(t)),
		"cluster":   redisPacers(oneNodeCluster(t)),
		"miniredis": redisPacers(miniredisClient(t)),
	}
}

// paceStep is one Pace call at base + at; want's Now is filled in.
type paceStep struct {
	at   time.Duration
	reqs []throttle.PaceRequest
	want []throttle.Pace
}

func wantPace(wait, interval time.Duration) throttle.Pace {
	return throttle.Pace{Wait: wait, Interval: interval}
}

// heldPace is the answer to a request held by its Latest: the wait it
// would have had.
func heldPace(wait, interval time.Duration) throttle.Pace {
	return throttle.Pace{Wait: wait, Interval: interval, Held: true}
}

// The intervals of the rates the table uses: 1 s / rate, rounded up to a
// nanosecond.
const (
	i600  = 1_666_667 * time.Nanosecond
	i1000 = time.Millisecond
	i3    = 333_333_334 * time.Nanosecond
)

func TestPacerSemantics(t *testing.T) {
	t.Parallel()
	nb := func(d time.Duration) time.Time { return paceBase.Add(d) }
	many := func(n int, q throttle.PaceRequest) []throttle.PaceRequest {
		out := make([]throttle.PaceRequest, n)
		for i := range out {
			out[i] = q
		}
		return out
	}
	manyWant := func(n int, interval time.Duration) []throttle.Pace {
		out := make([]throttle.Pace, n)
		for i := range out {
			out[i] = wantPace(time.Duration(i)*interval, interval)
		}
		return out
	}
	cases := []struct {
		name  string
		steps []paceStep
	}{
		{"the first send is now, the next call waits for the first's sends", []paceStep{
			{0, []throttle.PaceRequest{{Key: "k", N: 3, Rate: 600}}, []throttle.Pace{wantPace(0, i600)}},
			{0, []throttle.PaceRequest{{Key: "k", N: 2, Rate: 600}}, []throttle.Pace{wantPace(3*i600, i600)}},
			{time.Millisecond, []throttle.PaceRequest{{Key: "k", N: 1, Rate: 600}}, []throttle.Pace{wantPace(5*i600-time.Millisecond, i600)}},
		}},
		{"a batch's requests on one key follow each other; other keys are apart", []paceStep{
			{0, []throttle.PaceRequest{
				{Key: "k", N: 2, Rate: 600}, {Key: "k", N: 1, Rate: 600}, {Key: "other", N: 1, Rate: 10},
				{Key: "k", N: 0, Rate: 600}, {Key: "k", N: 1, Rate: 600}, {Key: "other", N: 1, Rate: 10},
			}, []throttle.Pace{
				wantPace(0, i600), wantPace(2*i600, i600), wantPace(0, 100*time.Millisecond),
				wantPace(0, i600), wantPace(3*i600, i600), wantPace(100*time.Millisecond, 100*time.Millisecond),
			}},
		}},
		{"no sends change nothing, whatever NotBefore says", []paceStep{
			{0, []throttle.PaceRequest{{Key: "k", N: 0, Rate: 1, NotBefore: nb(time.Hour)}}, []throttle.Pace{wantPace(0, time.Second)}},
			{0, []throttle.PaceRequest{{Key: "k", N: 1, Rate: 1}}, []throttle.Pace{wantPace(0, time.Second)}},
		}},
		{"time passing frees the key", []paceStep{
			{0, []throttle.PaceRequest{{Key: "k", N: 10, Rate: 1000}}, []throttle.Pace{wantPace(0, i1000)}},
			{4 * time.Millisecond, []throttle.PaceRequest{{Key: "k", N: 1, Rate: 1000}}, []throttle.Pace{wantPace(6*time.Millisecond, i1000)}},
			{time.Hour, []throttle.PaceRequest{{Key: "k", N: 1, Rate: 1000}}, []throttle.Pace{wantPace(0, i1000)}},
		}},
		{"NotBefore holds the first send back; a past one does nothing", []paceStep{
			{0, []throttle.PaceRequest{{Key: "k", N: 2, Rate: 1000, NotBefore: nb(5*time.Millisecond + 1)}}, []throttle.Pace{wantPace(5*time.Millisecond+1, i1000)}},
			{0, []throttle.PaceRequest{{Key: "k", N: 1, Rate: 1000}}, []throttle.Pace{wantPace(7*time.Millisecond+1, i1000)}},
			{0, []throttle.PaceRequest{{Key: "k", N: 1, Rate: 1000, NotBefore: nb(-time.Second)}}, []throttle.Pace{wantPace(8*time.Millisecond+1, i1000)}},
			{0, []throttle.PaceRequest{{Key: "k", N: 1, Rate: 1000, NotBefore: nb(time.Second)}}, []throttle.Pace{wantPace(time.Second, i1000)}},
		}},
		{"a request that would start after its Latest is held and moves nothing", []paceStep{
			{0, []throttle.PaceRequest{{Key: "k", N: 5, Rate: 1000}}, []throttle.Pace{wantPace(0, i1000)}},
			{0, []throttle.PaceRequest{
				{Key: "k", N: 1, Rate: 1000, Latest: nb(5*time.Millisecond - 1)},
				{Key: "k", N: 1, Rate: 1000, NotBefore: nb(time.Second), Latest: nb(time.Second - 1)},
				{Key: "k", N: 1, Rate: 1000, Latest: nb(5 * time.Millisecond)},
				{Key: "k", N: 1, Rate: 1000, Latest: nb(5 * time.Millisecond)},
				{Key: "k", N: 0, Rate: 1000, Latest: nb(-time.Second)},
			}, []throttle.Pace{
				heldPace(5*time.Millisecond, i1000), heldPace(time.Second, i1000),
				wantPace(5*time.Millisecond, i1000), heldPace(6*time.Millisecond, i1000), wantPace(0, i1000),
			}},
			{0, []throttle.PaceRequest{{Key: "k", N: 1, Rate: 1000}}, []throttle.Pace{wantPace(6*time.Millisecond, i1000)}},
		}},
		{"a new rate starts after the old rate's sends", []paceStep{
			{0, []throttle.PaceRequest{{Key: "k", N: 1, Rate: 1}, {Key: "k", N: 1, Rate: 1000}, {Key: "k", N: 1, Rate: 1}},
				[]throttle.Pace{wantPace(0, time.Second), wantPace(time.Second, i1000), wantPace(time.Second+i1000, time.Second)}},
		}},
		{"intervals round up to the nanosecond and do not drift", []paceStep{
			{0, many(600, throttle.PaceRequest{Key: "k", N: 1, Rate: 600}), manyWant(600, i600)},
			{0, []throttle.PaceRequest{{Key: "k", N: 600, Rate: 600}, {Key: "k", N: 1, Rate: 3}, {Key: "k", N: 1, Rate: 3}},
				[]throttle.Pace{wantPace(600*i600, i600), wantPace(1200*i600, i3), wantPace(1200*i600+i3, i3)}},
		}},
		{"a batch longer than one script call's chunk stays in order", []paceStep{
			{0, many(700, throttle.PaceRequest{Key: "k", N: 1, Rate: 1000}), manyWant(700, i1000)},
		}},
	}
	for name, newPacer := range pacerImpls(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					clock := newPaceClock()
					p := newPacer(t, throttle.Options{Clock: clock.Now})
					for i, s := range c.steps {
						clock.Set(s.at)
						got, err := p.Pace(context.Background(), s.reqs)
						if err != nil {
							t.Fatalf("step %d: %v", i, err)
						}
						want := slices.Clone(s.want)
						for j := range want {
							want[j].Now = paceBase.Add(s.at)
						}
						if diff := cmp.Diff(want, got); diff != "" {
							t.Errorf("step %d (-want +got):\n%s", i, diff)
						}
					}
				})
			}
		})
	}
}

// paceModel is the brute-force reference: per key, the list of every time
// granted with its interval. A request's first time is the earliest at or
// after now and NotBefore that is at least one interval after every time
// granted on its key (the interval of the request that got it); when that
// is after its Latest, it is held and granted nothing.
type paceModel struct {
	granted map[string][]paceGrant
}

type paceGrant struct {
	at       time.Time
	interval time.Duration
}

func (m *paceModel) pace(now time.Time, reqs []throttle.PaceRequest) []throttle.Pace {
	out := make([]throttle.Pace, len(reqs))
	for i, q := range reqs {
		interval := time.Duration(math.Ceil(1e9 / q.Rate))
		out[i] = throttle.Pace{Interval: interval, Now: now}
		if q.N == 0 {
			continue
		}
		start := now
		if q.NotBefore.After(start) {
			start = q.NotBefore
		}
		for _, g := range m.granted[q.Key] {
			if free := g.at.Add(g.interval); free.After(start) {
				start = free
			}
		}
		out[i].Wait = start.Sub(now)
		if !q.Latest.IsZero() && start.After(q.Latest) {
			out[i].Held = true
			continue
		}
		for k := range q.N {
			m.granted[q.Key] = append(m.granted[q.Key], paceGrant{start.Add(time.Duration(k) * interval), interval})
		}
	}
	return out
}

// randomPaceRequests is one random batch on a few keys: mostly small N
// (sometimes 0), rates from slow to fast (with fractions, and ones whose
// interval is no whole number of nanoseconds), NotBefore mostly zero,
// else in the past or up to 300 ms ahead to the nanosecond, and Latest
// mostly zero, else up to 300 ms from now either way.
func randomPaceRequests(r *rand.Rand, now time.Time, keys []string) []throttle.PaceRequest {
	rates := []float64{600, 1000, 7.5, 0.5, 3, 1e6, 123.456, 50}
	reqs := make([]throttle.PaceRequest, 1+r.IntN(6))
	for i := range reqs {
		q := throttle.PaceRequest{Key: keys[r.IntN(len(keys))], Rate: rates[r.IntN(len(rates))]}
		switch x := r.IntN(10); {
		case x == 0:
			q.N = 0
		case x < 8:
			q.N = 1 + r.IntN(5)
		default:
			q.N = 1 + r.IntN(40)
		}
		switch r.IntN(6) {
		case 0:
			q.NotBefore = now.Add(-time.Duration(r.Int64N(int64(time.Second))))
		case 1:
			q.NotBefore = now.Add(time.Duration(r.Int64N(int64(300 * time.Millisecond))))
		}
		if r.IntN(3) == 0 {
			q.Latest = now.Add(time.Duration(r.Int64N(int64(600*time.Millisecond))) - 300*time.Millisecond)
		}
		reqs[i] = q
	}
	return reqs
}

// Each implementation agrees with the brute-force model on random
// sequences of batches at an explicit clock moving in random steps (none,
// sub-millisecond, milliseconds, seconds).
func TestPacerModel(t *testing.T) {
	t.Parallel()
	const steps = 300
	for name, newPacer := range pacerImpls(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(3) {
				t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
					r := rand.New(rand.NewPCG(seed, 42))
					clock := newPaceClock()
					p := newPacer(t, throttle.Options{Clock: clock.Now})
					m := &paceModel{granted: map[string][]paceGrant{}}
					keys := []string{"a", "b", "app:fcm:x"}
					for i := range steps {
						switch x := r.IntN(10); {
						case x < 3:
						case x < 6:
							clock.Advance(time.Duration(r.Int64N(int64(time.Millisecond))))
						case x < 9:
							clock.Advance(time.Duration(r.Int64N(int64(50 * time.Millisecond))))
						default:
							clock.Advance(time.Duration(r.Int64N(int64(3 * time.Second))))
						}
						now := clock.Now()
						reqs := randomPaceRequests(r, now, keys)
						got, err := p.Pace(context.Background(), reqs)
						if err != nil {
							t.Fatalf("step %d: %v", i, err)
						}
						if diff := cmp.Diff(m.pace(now, reqs), got); diff != "" {
							t.Fatalf("step %d, requests %+v (-model +got):\n%s", i, reqs, diff)
						}
					}
				})
			}
		})
	}
}

// paceGranted is one request's grant, as the concurrent test records it.
type paceGranted struct {
	start    time.Time
	n        int
	interval time.Duration
}

// checkPaced checks what several processes were granted on each key: no
// two requests' runs of sends overlap (so every two sends are at least
// the earlier one's interval apart), and on a key with one rate no closed
// 1 s window holds more than ceil(rate)+1 sends.
func checkPaced(t *testing.T, granted map[string][]paceGranted, rates map[string]float64) {
	t.Helper()
	total := 0
	for key, gs := range granted {
		slices.SortFunc(gs, func(a, b paceGranted) int { return a.start.Compare(b.start) })
		var times []time.Time
		for j, g := range gs {
			if j > 0 {
				prev := gs[j-1]
				if end := prev.start.Add(time.Duration(prev.n) * prev.interval); g.start.Before(end) {
					t.Errorf("key %s: a run of %d sends at %v overlaps the run of %d at %v (to %v)",
						key, g.n, g.start, prev.n, prev.start, end)
				}
			}
			for k := range g.n {
				times = append(times, g.start.Add(time.Duration(k)*g.interval))
			}
		}
		total += len(times)
		rate, ok := rates[key]
		if !ok {
			continue
		}
		most := int(math.Ceil(rate)) + 1
		for lo, hi := 0, 0; lo < len(times); lo++ {
			for hi < len(times) && !times[hi].After(times[lo].Add(time.Second)) {
				hi++
			}
			if hi-lo > most {
				t.Fatalf("key %s at %v/s: %d sends in [%v, +1s], want at most %d", key, rate, hi-lo, times[lo], most)
			}
		}
	}
	if total == 0 {
		t.Fatal("nothing was granted: the test checks nothing")
	}
}

// Several goroutines of two processes (two Redis pacers, each with its own
// client, on one Redis; one memory pacer shared) pace random batches on
// the same keys at the real clock: the grants never overlap and never
// outrun the rate.
func TestPacerConcurrent(t *testing.T) {
	t.Parallel()
	const (
		goroutines = 8
		calls      = 60
	)
	rates := map[string]float64{"fast": 600, "slow": 50.5} // "mixed" takes any rate
	shared := redistest.Client(t)
	prefix := redistest.Prefix(t)
	t.Cleanup(func() { deleteKeys(t, shared, prefix) })
	twoProcesses := make([]pacer, 2)
	for i := range twoProcesses {
		opt := *shared.Options()
		rdb := redis.NewClient(&opt)
		t.Cleanup(func() { _ = rdb.Close() })
		p, err := throttle.NewPacer(rdb, throttle.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		twoProcesses[i] = p
	}
	mem := throttle.NewMemoryPacer(throttle.Options{})
	impls := map[string][]pacer{"redis": twoProcesses, "memory": {mem, mem}}
	for name, pacers := range impls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			granted := map[string][]paceGranted{}
			waited := false
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := range goroutines {
				p := pacers[g%len(pacers)]
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(g), 7))
					for range calls {
						reqs := randomPaceRequests(r, time.Now(), []string{"fast", "slow", "mixed"})
						for i := range reqs {
							if rate, ok := rates[reqs[i].Key]; ok {
								reqs[i].Rate = rate
							}
						}
						got, err := p.Pace(context.Background(), reqs)
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						for i, q := range reqs {
							pc := got[i]
							start := pc.Now.Add(pc.Wait)
							if pc.Wait < 0 || (q.N > 0 && start.Before(q.NotBefore)) {
								t.Errorf("request %+v: %+v starts before now or NotBefore", q, pc)
							}
							if late := !q.Latest.IsZero() && start.After(q.Latest); q.N > 0 && pc.Held != late {
								t.Errorf("request %+v: %+v: held %v, want %v", q, pc, pc.Held, late)
							}
							if q.N > 0 && !pc.Held {
								granted[q.Key] = append(granted[q.Key], paceGranted{start, q.N, pc.Interval})
								waited = waited || (pc.Wait > 0 && q.NotBefore.IsZero())
							}
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if !waited {
				t.Error("no request waited for another: the requests did not contend")
			}
			checkPaced(t, granted, rates)
		})
	}
}

// Invalid requests fail before any I/O and change nothing.
func TestPacerInvalidRequests(t *testing.T) {
	t.Parallel()
	ok := throttle.PaceRequest{Key: "k", N: 1, Rate: 10}
	cases := []struct {
		name string
		bad  throttle.PaceRequest
		msg  string
	}{
		{"empty key", throttle.PaceRequest{N: 1, Rate: 10}, "empty key"},
		{"negative N", throttle.PaceRequest{Key: "k", N: -1, Rate: 10}, "N -1"},
		{"zero rate", throttle.PaceRequest{Key: "k", N: 1}, "rate 0"},
		{"zero rate, no sends", throttle.PaceRequest{Key: "k"}, "rate 0"},
		{"negative rate", throttle.PaceRequest{Key: "k", N: 1, Rate: -5}, "rate -5"},
		{"NaN rate", throttle.PaceRequest{Key: "k", N: 1, Rate: math.NaN()}, "rate NaN"},
		{"infinite rate", throttle.PaceRequest{Key: "k", N: 1, Rate: math.Inf(1)}, "rate +Inf"},
		{"rate too slow", throttle.PaceRequest{Key: "k", N: 1, Rate: 1e-9}, "rate 1e-09"},
		{"run too long", throttle.PaceRequest{Key: "k", N: 5_000_000, Rate: 1}, "5000000 sends"},
	}
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	trips := &redistest.RoundTrips{}
	rdb.AddHook(trips)
	clock := newPaceClock()
	rp, err := throttle.NewPacer(rdb, throttle.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	impls := map[string]pacer{"redis": rp, "memory": throttle.NewMemoryPacer(throttle.Options{Clock: clock.Now})}
	for name, p := range impls {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				before := trips.Count()
				got, err := p.Pace(ctx, []throttle.PaceRequest{ok, c.bad})
				if !errors.Is(err, throttle.ErrInvalidPaceRequest) || got != nil {
					t.Fatalf("Pace = %v, %v; want nil and ErrInvalidPaceRequest", got, err)
				}
				if !strings.Contains(err.Error(), "requests[1]") || !strings.Contains(err.Error(), c.msg) {
					t.Errorf("error %q names neither requests[1] nor %q", err, c.msg)
				}
				if n := trips.Count() - before; n != 0 {
					t.Errorf("%d round trips to Redis, want none", n)
				}
			})
		}
		// Nothing was granted: the valid request's key is still free.
		got, err := p.Pace(ctx, []throttle.PaceRequest{ok})
		if err != nil || got[0].Wait != 0 {
			t.Errorf("%s: after the invalid calls, Pace = %+v, %v; want no wait", name, got, err)
		}
	}
	if _, err := throttle.NewPacer(nil, throttle.Options{}); err == nil {
		t.Error("NewPacer(nil) returned no error")
	}
}

// A batch is one pipeline holding one script call on a standalone server,
// whatever its keys; the script cache being empty costs one EVAL more.
// On a cluster client it is one script call per key.
func TestPacerRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reqs := []throttle.PaceRequest{
		{Key: "a", N: 3, Rate: 10}, {Key: "b", N: 1, Rate: 10}, {Key: "a", N: 1, Rate: 10},
		{Key: "c", N: 0, Rate: 10}, {Key: "b", N: 2, Rate: 10},
	}
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	cluster := oneNodeCluster(t)
	for _, c := range []struct {
		name        string
		rdb         redis.UniversalClient
		scriptCalls int64
	}{{"standalone", rdb, 1}, {"cluster", cluster, 3}} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.rdb.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			hook := &countingHook{}
			c.rdb.AddHook(hook)
			p, err := throttle.NewPacer(c.rdb, throttle.Options{Prefix: redistest.Prefix(t)})
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				name      string
				pipelines int64
			}{{"empty script cache", 2}, {"cached script", 1}} {
				hook.cmds.Store(0)
				hook.pipelines.Store(0)
				hook.pipelined.Store(0)
				if _, err := p.Pace(ctx, reqs); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				if cmds, pipes := hook.cmds.Load(), hook.pipelines.Load(); cmds != 0 || pipes != step.pipelines {
					t.Errorf("%s: %d single commands and %d pipelines, want 0 and %d", step.name, cmds, pipes, step.pipelines)
				}
				if s := hook.pipelined.Load(); s != step.pipelines*c.scriptCalls {
					t.Errorf("%s: %d script calls, want %d", step.name, s, step.pipelines*c.scriptCalls)
				}
			}
		})
	}
}

// A key that holds something else fails its own requests, with Redis's
// error, and no other key's; a request for no sends does not read it.
// Real Redis's error is a redis.Error that errors.As finds.
func TestPacerBrokenKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, rdb := range map[string]redis.UniversalClient{
		"redis": redistest.Client(t), "cluster": oneNodeCluster(t), "miniredis": miniredisClient(t),
	} {
		t.Run(name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
			p, err := throttle.NewPacer(rdb, throttle.Options{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			if err := rdb.HSet(ctx, p.Key("hash"), "f", "v").Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Set(ctx, p.Key("junk"), "12.5", 0).Err(); err != nil {
				t.Fatal(err)
			}
			got, err := p.Pace(ctx, []throttle.PaceRequest{
				{Key: "ok", N: 2, Rate: 10}, {Key: "hash", N: 1, Rate: 10}, {Key: "junk", N: 1, Rate: 10},
				{Key: "ok", N: 1, Rate: 10}, {Key: "hash", N: 0, Rate: 10},
			})
			// gopher-lua (miniredis) prefixes Redis's error with a line number.
			if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") || !strings.Contains(err.Error(), `"hash"`) ||
				!strings.Contains(err.Error(), `"junk"`) || !strings.Contains(err.Error(), "holds no time") {
				t.Errorf("error = %v, want WRONGTYPE for hash and no time for junk", err)
			}
			if name != "miniredis" && !redis.HasErrorPrefix(err, "WRONGTYPE") {
				t.Errorf("error = %v, want a redis.Error", err)
			}
			if !got[1].Now.IsZero() || !got[2].Now.IsZero() {
				t.Errorf("broken keys' paces %+v %+v, want failures (zero Now)", got[1], got[2])
			}
			if got[0].Now.IsZero() || got[3].Wait != 200*time.Millisecond || got[4].Now.IsZero() {
				t.Errorf("other paces %+v %+v %+v, want the ok key paced and the no-sends request answered", got[0], got[3], got[4])
			}
		})
	}
}

// A key lives a little longer than its last granted time (or, with an
// explicit clock, whose time need not follow the server's, at least an
// hour), and holds that time to the nanosecond.
func TestPacerKeyTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
	p, err := throttle.NewPacer(rdb, throttle.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Key("fcm:proj"), prefix+"{fcm:proj}"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	got, err := p.Pace(ctx, []throttle.PaceRequest{{Key: "k", N: 10, Rate: 10}}) // free again in 1 s
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := rdb.PTTL(ctx, p.Key("k")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= time.Second || ttl > 2*time.Second {
		t.Errorf("TTL %v, want between 1 s (the time left) and 2 s", ttl)
	}
	v, err := rdb.Get(ctx, p.Key("k")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if end := got[0].Now.Add(got[0].Wait + time.Second); v != fmt.Sprintf("%d.%09d", end.Unix(), end.Nanosecond()) {
		t.Errorf("key holds %q, want the time %v as <s>.<ns>", v, end)
	}

	clock := newPaceClock()
	o := throttle.Options{Prefix: prefix + "clock:", Clock: clock.Now}
	pc, err := throttle.NewPacer(rdb, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pc.Pace(ctx, []throttle.PaceRequest{{Key: "k", N: 1, Rate: 10}}); err != nil {
		t.Fatal(err)
	}
	if ttl, err := rdb.PTTL(ctx, pc.Key("k")).Result(); err != nil || ttl < 59*time.Minute {
		t.Errorf("TTL with an explicit clock %v, %v; want about an hour", ttl, err)
	}
	if def, err := throttle.NewPacer(rdb, throttle.Options{}); err != nil || def.Key("x") != "hush:rate:{x}" {
		t.Errorf("default key %q, %v; want hush:rate:{x}", def.Key("x"), err)
	}
}

// A canceled context is an error before any I/O.
func TestPacerCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rp, err := throttle.NewPacer(redistest.Client(t), throttle.Options{Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]pacer{"redis": rp, "memory": throttle.NewMemoryPacer(throttle.Options{})} {
		if _, err := p.Pace(ctx, []throttle.PaceRequest{{Key: "k", N: 1, Rate: 1}}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Pace with a canceled context: %v, want context.Canceled", name, err)
		}
	}
}

// A fan-out of 60 pushes to one FCM project limited to 600/s, in two
// batches from two workers, paces itself over 100 ms; another app is not
// held up.
func ExampleMemoryPacer() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pacer := throttle.NewMemoryPacer(throttle.Options{Clock: func() time.Time { return now }})
	paces, err := pacer.Pace(context.Background(), []throttle.PaceRequest{
		{Key: "fcm:my-project", N: 25, Rate: 600},
		{Key: "fcm:my-project", N: 35, Rate: 600},
		{Key: "fcm:other-project", N: 1, Rate: 600},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range paces {
		fmt.Println(p.Wait, p.Interval)
	}
	// Output:
	// 0s 1.666667ms
	// 41.666675ms 1.666667ms
	// 0s 1.666667ms
}
