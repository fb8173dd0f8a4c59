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

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
	"github.com/redis/go-redis/v9"
)

// clusterPolicy: a gap of a minute, so a user's second booking waits it,
// and a category whose bookings are kept in a second set of the user's.
var clusterPolicy = throttle.Policy{Limits: []throttle.Limit{{N: 10, Window: time.Hour}}, MinGap: time.Minute,
	Categories: map[string]throttle.Category{"news": {Limits: []throttle.Limit{{N: 5, Window: time.Hour}}}}}

// scriptCalls counts EVAL and EVALSHA calls served by the nodes so far.
func scriptCalls(t *testing.T, c *redistest.Cluster) int64 {
	t.Helper()
	var n int64
	for _, node := range c.Nodes {
		stats, err := node.Client(t).Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		n += evalCalls(t, stats)
	}
	return n
}

// evalCalls is the EVAL and EVALSHA calls an INFO commandstats reply
// counts.
func evalCalls(tb testing.TB, stats string) int64 {
	tb.Helper()
	var n int64
	for line := range strings.SplitSeq(stats, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "cmdstat_eval:") && !strings.HasPrefix(line, "cmdstat_evalsha:") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(line[strings.Index(line, ":")+1:], "calls="), ",")
		v, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			tb.Fatalf("commandstats line %q: %v", line, err)
		}
		n += v
	}
	return n
}

// clusterLimiter is a limiter on a 3-master cluster of the test's own.
func clusterLimiter(t *testing.T) (*redistest.Cluster, *redis.ClusterClient, *throttle.Redis) {
	t.Helper()
	c := redistest.StartCluster(t, 3)
	rdb := c.Client(t)
	l, err := throttle.NewRedis(rdb, clusterPolicy, throttle.Options{Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c, rdb, l
}

// On a 3-master cluster a batch of bookings costs one script call per
// node (reserve.lua's node form), not one per user, and decides as one
// call per user would: a fresh user's booking is due now, its next waits
// the gap, a member booked again gets its slot back, and a user twice in
// one batch is booked in order.
func TestRedisClusterBooksOneNodeInOneCall(t *testing.T) {
	t.Parallel()
	c, rdb, l := clusterLimiter(t)
	ctx := context.Background()
	reqs := func(user, member string) []throttle.Request {
		var out []throttle.Request
		for i := range 60 {
			out = append(out, throttle.Request{User: fmt.Sprintf("%s%d", user, i), Member: member})
		}
		return out
	}
	// Other users first: every node loads the script (NOSCRIPT, then
	// EVAL) and the client learns the slot map.
	if _, err := l.ReserveBatch(ctx, reqs("warm", "w")); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, q := range reqs("u", "") {
		addr, err := redistest.MasterOf(ctx, rdb, l.Key(q.User))
		if err != nil {
			t.Fatal(err)
		}
		nodes[addr] = true
	}
	if len(nodes) != 3 {
		t.Fatalf("the 60 users live on %d nodes, want all 3", len(nodes))
	}
	check := func(name string, batch []throttle.Request, wantWait time.Duration, wantExisting bool) {
		t.Helper()
		before := scriptCalls(t, c)
		res, err := l.ReserveBatch(ctx, batch)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if calls := scriptCalls(t, c) - before; calls != 3 {
			t.Errorf("%s: %d script calls for %d bookings on 3 nodes, want 3", name, calls, len(batch))
		}
		for i, r := range res {
			if r.Existing != wantExisting || r.Refused != "" || r.Wait < wantWait-time.Second || r.Wait > wantWait {
				t.Errorf("%s: %s: wait %v existing %v refused %q, want wait %v existing %v", name, batch[i].User, r.Wait, r.Existing, r.Refused, wantWait, wantExisting)
			}
		}
	}
	check("first", reqs("u", "a"), 0, false)
	check("second", reqs("u", "b"), time.Minute, false)
	check("again", reqs("u", "a"), 0, true)

	// A node's call books at most 256 requests (a script call blocks its
	// node while it runs): 900 users, about 300 a node, take two calls a
	// node.
	var big []throttle.Request
	perNode := map[string]int{}
	for i := range 900 {
		q := throttle.Request{User: fmt.Sprintf("big%d", i), Member: "a"}
		addr, err := redistest.MasterOf(ctx, rdb, l.Key(q.User))
		if err != nil {
			t.Fatal(err)
		}
		perNode[addr]++
		big = append(big, q)
	}
	want := int64(0)
	for _, n := range perNode {
		want += int64((n + 255) / 256)
	}
	before := scriptCalls(t, c)
	if _, err := l.ReserveBatch(ctx, big); err != nil {
		t.Fatal(err)
	}
	if calls := scriptCalls(t, c) - before; calls != want {
		t.Errorf("900 bookings (%v a node): %d script calls, want %d", perNode, calls, want)
	}

	twice := []throttle.Request{{User: "x", Member: "1"}, {User: "y", Member: "1"}, {User: "x", Member: "2"}}
	res, err := l.ReserveBatch(ctx, twice)
	if err != nil {
		t.Fatal(err)
	}
	if gap := res[2].At.Sub(res[0].At); gap != time.Minute {
		t.Errorf("x booked twice in one batch: %v apart, want the gap (1m)", gap)
	}
}

// A client whose slot map is behind a resharding still books every
// request once, on the node that now serves it: the node's call finds the
// moved user's keys are not its own before writing anything ("NOTHERE"),
// and that request is booked again on its own, through the redirection.
func TestRedisClusterBooksUsersOfAMovedSlot(t *testing.T) {
	t.Parallel()
	c, rdb, l := clusterLimiter(t)
	ctx := context.Background()
	if _, err := l.ReserveBatch(ctx, []throttle.Request{{User: "warm", Member: "w"}}); err != nil {
		t.Fatal(err)
	}
	// Four users on one node A, whose slots hold nothing yet.
	byNode := map[string][]string{}
	for i := 0; len(byNode[c.Nodes[0].Addr]) < 4; i++ {
		u := fmt.Sprintf("m%d", i)
		addr, err := redistest.MasterOf(ctx, rdb, l.Key(u))
		if err != nil {
			t.Fatal(err)
		}
		byNode[addr] = append(byNode[addr], u)
	}
	users := byNode[c.Nodes[0].Addr]
	moved := users[1]
	slot, err := rdb.ClusterKeySlot(ctx, l.Key(moved)).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Move the moved user's (empty) slot from A to B behind the client's
	// back: every node learns it, the client's map does not.
	a, b := c.Nodes[0].Client(t), c.Nodes[1].Client(t)
	bID, err := b.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*redis.Client{b, a, c.Nodes[2].Client(t)} {
		if err := n.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", bID).Err(); err != nil {
			t.Fatalf("CLUSTER SETSLOT %d NODE B on %s: %v", slot, n.Options().Addr, err)
		}
	}
	if addr, _ := redistest.MasterOf(ctx, rdb, l.Key(moved)); addr != c.Nodes[0].Addr {
		t.Fatalf("the client already knows the slot moved (%s): the test needs a stale map", addr)
	}

	// The moved user books three times: with one key (its set), with a
	// category (two sets) and with a collapse key (its set and its
	// collapse hash), each a gap after the one before.
	var batch []throttle.Request
	var wait []time.Duration
	for _, u := range users {
		batch = append(batch, throttle.Request{User: u, Member: "a"})
		wait = append(wait, 0)
	}
	batch = append(batch, throttle.Request{User: moved, Member: "c", Category: "news"},
		throttle.Request{User: moved, Member: "k", CollapseKey: "x"})
	wait = append(wait, time.Minute, 2*time.Minute)
	res, err := l.ReserveBatch(ctx, batch)
	if err != nil {
		t.Fatalf("booking through a stale slot map: %v", err)
	}
	for i, r := range res {
		if r.Now.IsZero() || r.Wait > wait[i] || r.Wait < wait[i]-time.Second || r.Existing || r.Refused != "" {
			t.Errorf("%s %s: %+v, want a new booking due in %v", batch[i].User, batch[i].Member, r, wait[i])
		}
	}
	for _, k := range []string{l.Key(moved), l.Key(moved) + ":c:news", l.Key(moved) + ":k"} {
		onA, _ := a.Exists(ctx, k).Result()
		onB, _ := b.Exists(ctx, k).Result()
		if onA != 0 || onB != 1 {
			t.Errorf("the moved user's %s: %d on A, %d on B; want only on B, its slot's new node", k, onA, onB)
		}
	}
	// Booked once: the same members again are the existing bookings.
	res, err = l.ReserveBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Existing {
			t.Errorf("%s %s booked again: %+v, want its existing slot", batch[i].User, batch[i].Member, r)
		}
	}
}

// BenchmarkClusterWave books waves of 25 users (a fan-out wave) from
// 100,000 on a 3-master cluster, one user per script call (the code
// before node batches) and one call per node, and on one server beside
// them, and reports the Redis CPU per booking summed over the nodes
// (INFO cpu) and the script calls per booking. Run it with -benchtime
// 400x or more; compare the rows of one run.
func BenchmarkClusterWave(b *testing.B) {
	const wave, pool = 25, 100_000
	c := redistest.StartCluster(b, 3)
	cc := c.Client(b)
	srv := redistest.Start(b)
	if !srv.Real() {
		b.Skip("needs a real redis-server: miniredis has no CPU accounting")
	}
	one := srv.Client(b)
	nodes := make([]redis.UniversalClient, len(c.Nodes))
	for i, n := range c.Nodes {
		nodes[i] = n.Client(b)
	}
	for _, run := range []struct {
		name  string
		rdb   redis.UniversalClient
		nodes []redis.UniversalClient
		setup func(*throttle.Redis)
	}{
		{"cluster-per-user", cc, nodes, throttle.BookPerUser},
		{"cluster-per-node", cc, nodes, func(*throttle.Redis) {}},
		{"one-server", one, []redis.UniversalClient{one}, func(*throttle.Redis) {}},
	} {
		b.Run(run.name, func(b *testing.B) {
			ctx := b.Context()
			l, err := throttle.NewRedis(run.rdb, clusterPolicy, throttle.Options{Prefix: redistest.Prefix(b)})
			if err != nil {
				b.Fatal(err)
			}
			run.setup(l)
			next := 0
			reqs := func() []throttle.Request {
				out := make([]throttle.Request, wave)
				for i := range out {
					out[i] = throttle.Request{User: "u" + strconv.Itoa(next%pool), Member: strconv.Itoa(next)}
					next++
				}
				return out
			}
			for range 20 { // load the script on every node
				if _, err := l.ReserveBatch(ctx, reqs()); err != nil {
					b.Fatal(err)
				}
			}
			cpu := func() (total time.Duration, calls int64) {
				for _, n := range run.nodes {
					d, err := redisCPU(ctx, n)
					if err != nil {
						b.Fatal(err)
					}
					total += d
					stats, err := n.Info(ctx, "commandstats").Result()
					if err != nil {
						b.Fatal(err)
					}
					calls += evalCalls(b, stats)
				}
				return total, calls
			}
			cpu0, calls0 := cpu()
			b.ResetTimer()
			for b.Loop() {
				if _, err := l.ReserveBatch(ctx, reqs()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu1, calls1 := cpu()
			n := float64(b.N * wave)
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/n, "redis-us/booking")
			b.ReportMetric(float64(calls1-calls0)/n, "calls/booking")
		})
	}
}

// Processes booking batches of the same few users at once on a 3-master
// cluster (each with its own client, every batch mixing users of several
// nodes and repeating some) never break a rule, and what Redis holds is
// exactly what the calls reported: each node's call books its users
// atomically and in order, like one call per user.
func TestRedisClusterConcurrentBatches(t *testing.T) {
	t.Parallel()
	const (
		procs  = 8
		n      = 3
		window = 300 * time.Millisecond
		gap    = 30 * time.Millisecond
		run    = time.Second
	)
	p := throttle.Policy{Limits: []throttle.Limit{{N: n, Window: window}}, MinGap: gap}
	c := redistest.StartCluster(t, 3)
	prefix := redistest.Prefix(t)
	users := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
	ctx := context.Background()

	type booked struct {
		user, member string
		at           int64
	}
	var mu sync.Mutex
	var all []booked
	var batches atomic.Int64
	errs := make(chan error, procs)
	var wg sync.WaitGroup
	var l0 *throttle.Redis
	for g := range procs {
		rdb := c.Client(t)
		l, err := throttle.NewRedis(rdb, p, throttle.Options{Prefix: prefix, MaxPending: throttle.NoMaxPending})
		if err != nil {
			t.Fatal(err)
		}
		l0 = l
		wg.Go(func() {
			var mine []booked
			end := time.Now().Add(run)
			for b := 0; time.Now().Before(end); b++ {
				batch := make([]throttle.Request, 6)
				for j := range batch {
					batch[j] = throttle.Request{User: users[(g+b*7+j*j)%len(users)], Member: fmt.Sprintf("%d-%d-%d", g, b, j)}
				}
				res, err := l.ReserveBatch(ctx, batch)
				if err != nil {
					errs <- err
					return
				}
				for j, r := range res {
					if r.Existing || r.Refused != "" {
						errs <- fmt.Errorf("%s: %+v, want a new booking", batch[j].Member, r)
						return
					}
					mine = append(mine, booked{batch[j].User, batch[j].Member, r.At.UnixMilli()})
				}
				batches.Add(1)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	rdb := c.Client(t)
	for _, u := range users {
		addr, err := redistest.MasterOf(ctx, rdb, l0.Key(u))
		if err != nil {
			t.Fatal(err)
		}
		nodes[addr] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("the users live on %d node(s): the test needs batches spanning nodes", len(nodes))
	}
	byUser := map[string][]booked{}
	for _, b := range all {
		byUser[b.user] = append(byUser[b.user], b)
	}
	for _, u := range users {
		bs := byUser[u]
		ts := make([]int64, len(bs))
		for i, b := range bs {
			ts[i] = b.at
		}
		slices.Sort(ts)
		for i := 0; i+n < len(ts); i++ {
			if span := ts[i+n] - ts[i]; span < window.Milliseconds() {
				t.Errorf("user %s: %d bookings within %d ms", u, n+1, span)
			}
		}
		for i := 0; i+1 < len(ts); i++ {
			if d := ts[i+1] - ts[i]; d < gap.Milliseconds() {
				t.Errorf("user %s: bookings %d ms apart", u, d)
			}
		}
		// Redis holds each reported booking at its reported slot, and
		// nothing else; a booking older than the horizon (the window) may
		// have been trimmed since.
		aged := time.Now().Add(-window).UnixMilli()
		held, err := rdb.ZRangeWithScores(ctx, l0.Key(u), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{}
		for _, b := range bs {
			want[b.member] = b.at
		}
		for _, z := range held {
			at, ok := want[z.Member.(string)]
			if !ok || at != int64(z.Score) {
				t.Errorf("user %s: Redis holds %v at %d; reported: %d (%v)", u, z.Member, int64(z.Score), at, ok)
			}
			delete(want, z.Member.(string))
		}
		for m, at := range want {
			if at > aged {
				t.Errorf("user %s: booking %s at %d reported, not in Redis", u, m, at)
			}
		}
	}
	t.Logf("%d processes, %d batches, %d bookings of %d users on %d nodes", procs, batches.Load(), len(all), len(users), len(nodes))
}
