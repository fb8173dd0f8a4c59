package redistest

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestStartCluster: three masters share the slots, and keys written through
// a cluster client land on every one of them.
func TestStartCluster(t *testing.T) {
	c := StartCluster(t, 3)
	ctx := context.Background()
	rdb := c.Client(t)
	seen := map[string]int{}
	for i := range 60 {
		key := fmt.Sprintf("k:{%d}", i)
		if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		addr, err := MasterOf(ctx, rdb, key)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(c.Addrs(), addr) {
			t.Fatalf("key %s on %s, not one of the nodes %v", key, addr, c.Addrs())
		}
		seen[addr]++
	}
	for _, n := range c.Nodes {
		got, err := n.Client(t).DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got == 0 || int(got) != seen[n.Addr] {
			t.Errorf("node %s holds %d keys, want %d (and not 0)", n.Addr, got, seen[n.Addr])
		}
	}
}
