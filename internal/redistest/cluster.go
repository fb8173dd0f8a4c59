package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/testkit"
)

// Cluster is a real Redis Cluster of master-only nodes on loopback ports,
// owned by one test.
type Cluster struct {
	Nodes []*Server
}

// StartCluster runs masters redis-server processes with cluster mode on,
// joins them with `redis-cli --cluster create` (slots split evenly, no
// replicas) and waits until every node reports cluster_state:ok. The nodes
// stop when the test ends. A test that starts a cluster is in the slow tier
// (testkit.Slow). Without redis-server or redis-cli it skips the test (a
// failure under CI=true).
func StartCluster(tb testing.TB, masters int) *Cluster {
	tb.Helper()
	testkit.Slow(tb, "starts a Redis Cluster")
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if testkit.InCI() {
			tb.Fatalf("redistest: CI=true but no redis-cli on PATH (.ci/run installs redis-tools): %v", err)
		}
		tb.Skip("redistest: a Redis Cluster needs redis-cli (none on PATH)")
	}
	c := &Cluster{}
	for range masters {
		c.Nodes = append(c.Nodes, Start(tb, Options{Cluster: true, Args: []string{
			"--cluster-node-timeout", "5000",
		}}))
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redistest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, n := range c.Nodes {
		c.waitOK(tb, n)
	}
	return c
}

// waitOK polls a node until it sees the whole cluster healthy.
func (c *Cluster) waitOK(tb testing.TB, n *Server) {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr})
	defer rdb.Close()
	deadline := time.Now().Add(30 * time.Second)
	want := "cluster_known_nodes:" + strconv.Itoa(len(c.Nodes))
	for {
		info, err := rdb.ClusterInfo(context.Background()).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, want) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: cluster node %s not ok after 30s: %v\n%s", n.Addr, err, info)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
}

// Addrs are the nodes' host:port addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// Client returns a new cluster client, closed when the test ends.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// MasterOf returns the address of the master that holds key.
func MasterOf(ctx context.Context, rdb *redis.ClusterClient, key string) (string, error) {
	node, err := rdb.MasterForKey(ctx, key)
	if err != nil {
		return "", fmt.Errorf("master for %q: %w", key, err)
	}
	return node.Options().Addr, nil
}
