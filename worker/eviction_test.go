package worker

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

func TestEvictionVerdict(t *testing.T) {
	t.Parallel()
	refused := errors.New("CONFIG GET maxmemory-policy on x: ERR unknown command 'config'")
	lru := []NodePolicy{{Addr: "10.0.0.1:6379", Policy: "noeviction"}, {Addr: "10.0.0.2:6379", Policy: "volatile-lru"}}
	tests := []struct {
		name             string
		nodes            []NodePolicy
		err              error
		check            EvictionCheck
		problem, warning string
	}{
		{"noeviction", []NodePolicy{{Addr: "a", Policy: "noeviction"}}, nil, EvictionRefused, "", ""},
		{"one master evicts, refused", lru, nil, EvictionRefused, "redis maxmemory-policy is volatile-lru, not noeviction: redis may evict hush's keys", ""},
		{"one master evicts, allowed", lru, nil, EvictionAllowed, "", "redis maxmemory-policy is volatile-lru, not noeviction: redis may evict hush's keys (eviction allowed by configuration)"},
		{"two policies", []NodePolicy{{Policy: "allkeys-lru"}, {Policy: "volatile-ttl"}, {Policy: "allkeys-lru"}}, nil, EvictionRefused, "redis maxmemory-policy is allkeys-lru, volatile-ttl, not noeviction: redis may evict hush's keys", ""},
		{"CONFIG refused", nil, refused, EvictionRefused, "", "redis maxmemory-policy unknown (CONFIG GET refused): redis may evict hush's keys unless it is noeviction"},
		{"unchecked", lru, nil, EvictionUnchecked, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problem, warning := evictionVerdict(tt.nodes, tt.err, tt.check)
			if problem != tt.problem || warning != tt.warning {
				t.Errorf("evictionVerdict = %q, %q; want %q, %q", problem, warning, tt.problem, tt.warning)
			}
			for _, n := range tt.nodes {
				if strings.Contains(problem+warning, n.Addr) && n.Addr != "" {
					t.Errorf("the verdict %q names the address %s", problem+warning, n.Addr)
				}
			}
		})
	}
}

// testClock is a Clock a test moves by hand.
type testClock struct{ ns atomic.Int64 }

func newTestClock(at time.Time) *testClock {
	c := &testClock{}
	c.ns.Store(at.UnixNano())
	return c
}

func (c *testClock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *testClock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// configGets is how many CONFIG GET calls rdb's server has served
// (INFO commandstats).
func configGets(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_config|get:calls="); ok {
			n, _, _ := strings.Cut(rest, ",")
			calls, err := strconv.Atoi(n)
			if err != nil {
				t.Fatal(err)
			}
			return calls
		}
	}
	return 0
}

// TestReadinessRefusesAnEvictingRedis: on a private redis-server started
// with --maxmemory-policy volatile-lru the worker is not ready, saying why
// without the address; allowed by Options.Eviction it is ready and its
// warnings say why it is at risk. Readiness reads the policy again at most
// every evictionRecheck (a CONFIG SET, or a failover to another node, shows
// after it), not once per probe.
func TestReadinessRefusesAnEvictingRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{Args: []string{"--maxmemory-policy", "volatile-lru"}})
	if !srv.Real() {
		t.Skip("needs a real redis-server for CONFIG")
	}
	rdb := srv.Client(t)
	lim, err := throttle.NewRedis(rdb, throttle.Policy{MinGap: time.Second}, throttle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	clock := newTestClock(time.Unix(1_800_000_000, 0))

	refusing, err := New(rdb, Options{Limiter: lim, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	problems := strings.Join(refusing.NotReady(ctx), "; ")
	if !strings.Contains(problems, "maxmemory-policy is volatile-lru") || strings.Contains(problems, srv.Addr) {
		t.Errorf("NotReady on a volatile-lru Redis: %q, want it to name the policy, not the address", problems)
	}
	allowing, err := New(rdb, Options{Limiter: lim, Clock: clock, Eviction: EvictionAllowed})
	if err != nil {
		t.Fatal(err)
	}
	if p := allowing.NotReady(ctx); strings.Contains(strings.Join(p, "; "), "maxmemory") {
		t.Errorf("NotReady with eviction allowed: %q, want nothing about eviction", p)
	}
	if w := strings.Join(allowing.ReadyWarnings(ctx), "; "); !strings.Contains(w, "maxmemory-policy is volatile-lru") {
		t.Errorf("ReadyWarnings with eviction allowed: %q, want it to name the policy", w)
	}

	// Probes within evictionRecheck read the cached verdict.
	before := configGets(t, rdb)
	for range 20 {
		refusing.NotReady(ctx)
		refusing.ReadyWarnings(ctx)
	}
	if n := configGets(t, rdb) - before; n != 0 {
		t.Errorf("40 probes within %s ran CONFIG GET %d times, want 0", evictionRecheck, n)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	clock.Add(evictionRecheck - time.Millisecond)
	if p := strings.Join(refusing.NotReady(ctx), "; "); !strings.Contains(p, "volatile-lru") {
		t.Errorf("NotReady before the recheck: %q, want the cached verdict", p)
	}
	clock.Add(time.Millisecond)
	if p := refusing.NotReady(ctx); strings.Contains(strings.Join(p, "; "), "maxmemory") {
		t.Errorf("NotReady after noeviction was set and %s passed: %q", evictionRecheck, p)
	}
	if n := configGets(t, rdb) - before; n != 1 {
		t.Errorf("CONFIG GET ran %d times for a recheck, want 1", n)
	}
	// And back: a node that starts evicting is refused again.
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	clock.Add(evictionRecheck)
	if p := strings.Join(refusing.NotReady(ctx), "; "); !strings.Contains(p, "maxmemory-policy is allkeys-lru") {
		t.Errorf("NotReady after allkeys-lru was set: %q, want it named", p)
	}
}

// TestEvictionPoliciesEveryMaster: on a Redis Cluster every master's
// policy is read, so one evicting master is found.
func TestEvictionPoliciesEveryMaster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	ctx := context.Background()
	if err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err()
	}); err != nil {
		t.Fatal(err)
	}
	var one string
	if err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		if c.Options().Addr == cl.Addrs()[1] {
			one = c.Options().Addr
			return c.ConfigSet(ctx, "maxmemory-policy", "volatile-lfu").Err()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	nodes, err := EvictionPolicies(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	var evicting []NodePolicy
	for _, n := range nodes {
		if n.Evicts() {
			evicting = append(evicting, n)
		}
	}
	if len(nodes) != 3 || len(evicting) != 1 || evicting[0] != (NodePolicy{Addr: one, Policy: "volatile-lfu"}) {
		t.Errorf("EvictionPolicies = %v, want 3 masters, %s alone with volatile-lfu", nodes, one)
	}
}
