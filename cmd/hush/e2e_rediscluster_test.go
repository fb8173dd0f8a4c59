package main

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

// TestE2ERedisCluster: the guarantees test on a real Redis Cluster of three
// masters, with each priority's deliveries spread over four shard queues
// (HUSH_DELIVERY_SHARDS). The burst's limiter keys live on all three
// masters, the shard queues on more than one, and still every push arrives
// exactly once with every user's timeline holding 5/2s and the 300 ms gap.
func TestE2ERedisCluster(t *testing.T) {
	start := time.Now()
	const masters, shards = 3, 4
	c := startCluster(t, clusterOptions{
		procs: 3, concurrency: e2eConcurrency, maxRetry: 3, redisMasters: masters,
		env: []string{"HUSH_DELIVERY_SHARDS=" + strconv.Itoa(shards)},
	})
	cc := c.rdb.(*redis.ClusterClient)
	ctx := context.Background()
	b := burst{prefix: "rc", users: 20, perUser: 15}
	jobs, want := b.jobs()

	// Where the users' limiter keys hash: the test only proves something
	// if that is every master.
	owners := map[string][]string{} // master -> users
	for u := range b.users {
		user := b.user(u)
		addr, err := redistest.MasterOf(ctx, cc, throttle.DefaultPrefix+"{"+user+"}")
		if err != nil {
			t.Fatal(err)
		}
		owners[addr] = append(owners[addr], user)
	}
	if len(owners) != masters {
		t.Fatalf("the burst's %d users hash to %d of %d masters: %v", b.users, len(owners), masters, owners)
	}

	// While the burst runs, look at each master for the limiter keys it
	// really holds.
	var mu sync.Mutex
	held := map[string]int{} // master -> most limiter keys seen at once
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			_ = cc.ForEachMaster(sampleCtx, func(ctx context.Context, node *redis.Client) error {
				keys, err := node.Keys(ctx, throttle.DefaultPrefix+"*").Result()
				if err != nil {
					return err
				}
				mu.Lock()
				addr := node.Options().Addr
				held[addr] = max(held[addr], len(keys))
				mu.Unlock()
				return nil
			})
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
		}
	})

	ready := time.Now()
	c.submit(jobs, c.procs, "")
	took := c.waitDrained(want, 2*time.Minute)
	stopSampling()
	sampler.Wait()

	arrs := c.arrivals()
	c.assertDelivered(arrs, want, 0)
	c.assertTimelines(arrs)
	c.assertNothingArchived()
	c.assertJobsDone(jobs)

	for _, addr := range c.rc.Addrs() {
		if held[addr] == 0 {
			t.Errorf("master %s never held a limiter key during the burst (users hashing there: %v)", addr, owners[addr])
		}
	}

	// Deferred deliveries went through the shard queues, and those queues
	// live on more than one master.
	queues, err := c.insp.Queues()
	if err != nil {
		t.Fatal(err)
	}
	queueMasters := map[string]string{} // shard queue -> master
	for k := range shards {
		q := "normal." + strconv.Itoa(k)
		if !slices.Contains(queues, q) {
			continue
		}
		if queueMasters[q], err = redistest.MasterOf(ctx, cc, "asynq:{"+q+"}:pending"); err != nil {
			t.Fatal(err)
		}
	}
	distinct := map[string]bool{}
	for _, m := range queueMasters {
		distinct[m] = true
	}
	if len(queueMasters) < 2 || len(distinct) < 2 {
		t.Errorf("shard queues used %v on %d masters; want deliveries spread over shard queues on at least 2 masters (all queues: %v)",
			queueMasters, len(distinct), queues)
	}
	t.Logf("redis cluster: %d masters; most limiter keys held at once per master %v; shard queue -> master %v",
		masters, held, queueMasters)
	t.Logf("redis cluster: %d jobs, %d pushes over 3 processes delivered in %s (from the first POST; cluster start %s, whole test %s)",
		len(jobs), len(want), took.Round(10*time.Millisecond), ready.Sub(start).Round(10*time.Millisecond), time.Since(start).Round(10*time.Millisecond))
}
