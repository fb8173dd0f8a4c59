package task

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestShardQueue(t *testing.T) {
	if got := ShardQueue("normal", "u-1", 1); got != "normal" {
		t.Errorf("one shard: got %q, want the priority queue", got)
	}
	seen := map[string]int{}
	for i := range 1000 {
		user := fmt.Sprintf("u-%d", i)
		q := ShardQueue("high", user, 8)
		if again := ShardQueue("high", user, 8); again != q {
			t.Fatalf("user %s: %q then %q; a user's shard must not change", user, q, again)
		}
		base, k, ok := ShardOf(q)
		if !ok || base != "high" || k < 0 || k >= 8 {
			t.Fatalf("user %s: queue %q is not a shard of high in [0, 8)", user, q)
		}
		seen[q]++
	}
	// 1000 users over 8 shards: each gets 125 on average; FNV-1a spreads
	// them well within a factor of two.
	for k := range 8 {
		q := fmt.Sprintf("high.%d", k)
		if n := seen[q]; n < 62 || n > 250 {
			t.Errorf("%s holds %d of 1000 users, want 62 to 250: %v", q, n, seen)
		}
	}
}

func TestShardOf(t *testing.T) {
	for _, tc := range []struct {
		queue string
		base  string
		k     int
		ok    bool
	}{
		{"normal.0", "normal", 0, true},
		{"critical.17", "critical", 17, true},
		{"normal", "", 0, false},
		{"normal.", "", 0, false},
		{"normal.x", "", 0, false},
		{"normal.-1", "", 0, false},
		{"normal.01", "", 0, false},
		{"bulk.3", "", 0, false},
	} {
		t.Run(tc.queue, func(t *testing.T) {
			base, k, ok := ShardOf(tc.queue)
			if base != tc.base || k != tc.k || ok != tc.ok {
				t.Errorf("ShardOf(%q) = %q, %d, %v; want %q, %d, %v", tc.queue, base, k, ok, tc.base, tc.k, tc.ok)
			}
		})
	}
}

func TestServedQueues(t *testing.T) {
	weights := map[string]int{"critical": 6, "normal": 1}
	for _, tc := range []struct {
		name     string
		shards   int
		existing []string
		want     map[string]int
	}{
		{"one shard", 1, nil, map[string]int{"critical": 6, "normal": 1}},
		{"two shards", 2, []string{"normal", "normal.1"}, map[string]int{
			"critical": 6, "critical.0": 6, "critical.1": 6, "normal": 1, "normal.0": 1, "normal.1": 1,
		}},
		{"shards left by a larger deployment are drained", 1, []string{"normal.5", "critical.2", "high.1", "other"}, map[string]int{
			"critical": 6, "critical.2": 6, "normal": 1, "normal.5": 1,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ServedQueues(weights, tc.shards, tc.existing)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ServedQueues (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServedHeldQueues: a worker serves the held queue beside each queue
// it serves, with its weight, and the held queues left by a deployment
// with more shards; nothing else.
func TestServedHeldQueues(t *testing.T) {
	weights := map[string]int{"critical": 6, "normal": 1}
	existing := []string{"normal", "normal.7", "held-normal.5", "held-critical", "held-high.1", "held-other", "held-normal.x"}
	got := ServedHeldQueues(weights, 2, existing)
	want := map[string]int{
		"held-critical": 6, "held-critical.0": 6, "held-critical.1": 6,
		"held-normal": 1, "held-normal.0": 1, "held-normal.1": 1, "held-normal.5": 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ServedHeldQueues (-want +got):\n%s", diff)
	}
	for q := range got {
		if _, _, ok := ShardOf(q); ok {
			t.Errorf("held queue %s reads as a delivery shard queue", q)
		}
	}
}
