package faultsim

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
)

// clusterMasters is how many masters a Cluster world has (no replicas).
const clusterMasters = 3

// nodePool is a worker's connections to each Redis node.
const nodePool = 16

// world is the Redis a seed's workers share: one private redis-server, or
// a Redis Cluster of clusterMasters masters. Every client of the run comes
// from client, so that Asynq, the job store and the limiter are on the
// same topology.
type world struct {
	server  *redistest.Server  // one node; nil on a Cluster
	cluster *redistest.Cluster // nil on one node
}

// startWorld starts the seed's Redis: a Cluster when cluster is set. It
// skips the test without redis-server (and, for a Cluster, redis-cli or
// the slow tier), and fails under CI=true without them.
func startWorld(t *testing.T, cluster bool) *world {
	t.Helper()
	if cluster {
		return &world{cluster: redistest.StartCluster(t, clusterMasters)}
	}
	srv := redistest.Start(t)
	if !srv.Real() && !testkit.InCI() {
		t.Skip("faultsim needs a real redis-server")
	}
	return &world{server: srv}
}

// client is a new client of the world with h (when not nil) on every
// connection it makes. On a Cluster h goes on each node's client as the
// cluster client creates it (OnNewNode): a hook on the cluster client
// itself sees commands before they are routed but no dial, and not the
// commands it sends a node's client directly (Watch, Pub/Sub, the slot
// map), so a killed worker would keep some of its connections.
func (w *world) client(h *faultHook) redis.UniversalClient {
	if w.cluster == nil {
		rdb := redis.NewClient(&redis.Options{Addr: w.server.Addr, PoolSize: nodePool})
		if h != nil {
			rdb.AddHook(h)
		}
		return rdb
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: w.cluster.Addrs(), PoolSize: nodePool})
	if h != nil {
		rdb.OnNewNode(func(node *redis.Client) { node.AddHook(h) })
	}
	return rdb
}

// eachMaster calls fn with a client of every master of rdb, one after
// another: the node itself on one node, each master on a Cluster.
// Commands without a key (KEYS, SCAN, INFO, DBSIZE, FLUSHALL, SCRIPT) see
// one node's data only, so they go through it.
func eachMaster(ctx context.Context, rdb redis.UniversalClient, fn func(ctx context.Context, m *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.Client:
		return fn(ctx, c)
	case *redis.ClusterClient:
		var mu sync.Mutex
		var masters []*redis.Client
		err := c.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
			mu.Lock()
			masters = append(masters, m)
			mu.Unlock()
			return nil
		})
		if err != nil {
			return err
		}
		for _, m := range masters {
			if err := fn(ctx, m); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("faultsim: no masters known for a %T", rdb)
	}
}

// logKeys puts the keys each master holds in the event log: a Cluster
// run's log shows which masters the world used.
func (s *sim) logKeys(rdb redis.UniversalClient) {
	var counts []string
	err := eachMaster(context.Background(), rdb, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		counts = append(counts, fmt.Sprintf("%s %d", m.Options().Addr, n))
		return err
	})
	if err != nil {
		s.logf("keys per master: %v", err)
		return
	}
	s.logf("keys per master: %s", strings.Join(counts, ", "))
}
