package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redis that evicts keys under memory pressure (any maxmemory-policy but
// noeviction) may drop any of hush's keys: queued tasks, job records and
// limiter entries all carry TTLs, so the volatile-* policies pick them as
// readily as the allkeys-* ones. A user whose limiter key is evicted is
// sent pushes the rules forbid; an evicted task is never delivered.

// EvictionCheck is what the worker's readiness makes of a Redis whose
// maxmemory-policy is not noeviction.
type EvictionCheck int

const (
	// EvictionRefused: the worker is not ready; NotReady names the policy.
	EvictionRefused EvictionCheck = iota
	// EvictionAllowed: the worker stays ready; ReadyWarnings says it is at
	// risk.
	EvictionAllowed
	// EvictionUnchecked: the policy is never read (the embedded development
	// Redis, which has no CONFIG command).
	EvictionUnchecked
)

// evictionRecheck is how long readiness trusts the policy it last read: a
// failover to a node configured otherwise, or a CONFIG SET, shows within
// it, and a readiness probe costs no command in between.
const evictionRecheck = 30 * time.Second

// noEviction is the one maxmemory-policy under which Redis drops no key.
const noEviction = "noeviction"

// NodePolicy is one Redis master's maxmemory-policy.
type NodePolicy struct {
	Addr   string
	Policy string
}

// Evicts reports whether the node may drop keys when it reaches maxmemory.
func (n NodePolicy) Evicts() bool { return n.Policy != noEviction }

// EvictionPolicies reads maxmemory-policy (CONFIG GET) from every master of
// a Redis Cluster, or from the one server (or Sentinel's master) of any
// other client, ordered by address. Managed Redis services may refuse
// CONFIG: the error then wraps the server's redis.Error.
func EvictionPolicies(ctx context.Context, rdb redis.UniversalClient) ([]NodePolicy, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		addr := ""
		if c, ok := rdb.(*redis.Client); ok {
			addr = c.Options().Addr
		}
		n, err := readPolicy(ctx, rdb, addr)
		if err != nil {
			return nil, err
		}
		return []NodePolicy{n}, nil
	}
	var (
		mu    sync.Mutex
		nodes []NodePolicy
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		n, err := readPolicy(ctx, c, c.Options().Addr)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(nodes, func(a, b NodePolicy) int { return strings.Compare(a.Addr, b.Addr) })
	return nodes, nil
}

func readPolicy(ctx context.Context, c redis.Cmdable, addr string) (NodePolicy, error) {
	m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return NodePolicy{}, fmt.Errorf("CONFIG GET maxmemory-policy on %s: %w", addr, err)
	}
	p, ok := m["maxmemory-policy"]
	if !ok {
		return NodePolicy{}, fmt.Errorf("CONFIG GET maxmemory-policy on %s: no value in the reply", addr)
	}
	return NodePolicy{Addr: addr, Policy: p}, nil
}

// evictionVerdict is what the policies read (or the server's refusal to
// tell them, err) mean for readiness under check: a problem (not ready) or
// a warning (ready, at risk), at most one of them, naming no address.
func evictionVerdict(nodes []NodePolicy, err error, check EvictionCheck) (problem, warning string) {
	if check == EvictionUnchecked {
		return "", ""
	}
	if err != nil {
		return "", "redis maxmemory-policy unknown (CONFIG GET refused): redis may evict hush's keys unless it is noeviction"
	}
	var evicting []string
	for _, n := range nodes {
		if n.Evicts() && !slices.Contains(evicting, n.Policy) {
			evicting = append(evicting, n.Policy)
		}
	}
	if len(evicting) == 0 {
		return "", ""
	}
	msg := "redis maxmemory-policy is " + strings.Join(evicting, ", ") + ", not noeviction: redis may evict hush's keys"
	if check == EvictionAllowed {
		return "", msg + " (eviction allowed by configuration)"
	}
	return msg, ""
}

// evictionWatch keeps readiness's verdict on Redis's eviction policy,
// read again at most every evictionRecheck.
type evictionWatch struct {
	rdb   redis.UniversalClient
	check EvictionCheck
	log   *slog.Logger

	mu               sync.Mutex
	read             time.Time // when the verdict was last read; zero: never
	problem, warning string
	logged           string // the verdict last logged: each change is logged once
}

// verdict is the cached verdict, read again when it is older than
// evictionRecheck. A Redis that does not answer leaves the last verdict in
// place (readiness reports the outage itself).
func (e *evictionWatch) verdict(ctx context.Context, now time.Time) (problem, warning string) {
	if e.check == EvictionUnchecked {
		return "", ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.read.IsZero() && now.Sub(e.read) < evictionRecheck {
		return e.problem, e.warning
	}
	nodes, err := EvictionPolicies(ctx, e.rdb)
	var refused redis.Error
	if err != nil && !errors.As(err, &refused) {
		return e.problem, e.warning
	}
	e.read = now
	e.problem, e.warning = evictionVerdict(nodes, err, e.check)
	if said := e.problem + e.warning; said != e.logged {
		e.logged = said
		switch {
		case err != nil:
			e.log.Warn("redis refuses to tell its maxmemory-policy: hush cannot check that redis never evicts its keys; make sure maxmemory-policy is noeviction", "err", err)
		case said != "":
			e.log.Warn("readiness: "+said, "nodes", nodes)
		default:
			e.log.Info("redis maxmemory-policy is noeviction", "nodes", nodes)
		}
	}
	return e.problem, e.warning
}

// ReadyWarnings says what puts the worker's work at risk while it stays
// ready, for GET /readyz's body: a Redis allowed to evict keys, or one that
// refuses to tell its policy. Like NotReady's problems they name no
// address; the log does.
func (w *Worker) ReadyWarnings(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, warning := w.eviction.verdict(ctx, w.now()); warning != "" {
		return []string{warning}
	}
	return nil
}
