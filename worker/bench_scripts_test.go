package worker

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker/internal/store"
)

// scriptCosts, with HUSH_BENCH_SCRIPTS=1, logs the Redis server time per
// delivery of each script (and of each other command) a run made, read
// from the slow log with every command logged: INFO commandstats counts
// all scripts under EVALSHA. Logging every command costs the server a
// little, so it is off by default and the run's CPU figures are not to be
// compared with runs without it.
type scriptCosts struct {
	on bool
}

// scriptNames names the scripts this package's runs call by their SHA1.
func scriptNames() map[string]string {
	names := map[string]string{}
	add := func(name string, srcs ...string) {
		h := sha1.Sum([]byte(strings.Join(srcs, "")))
		names[hex.EncodeToString(h[:])] = name
	}
	add("start.lua", store.StartSrc)
	add("record.lua", store.RetireSrc, store.RecordSrc)
	add("fanned.lua", store.RetireSrc, store.FannedSrc)
	add("cancel.lua", store.CancelSrc)
	add("chunk.lua", store.ChunkSrc)
	add("together.lua", store.TogetherSrc)
	lib, err := os.ReadFile("../throttle/lib.lua")
	if err == nil {
		for _, s := range []string{"reserve", "release", "status"} {
			if src, err := os.ReadFile("../throttle/" + s + ".lua"); err == nil {
				add("throttle "+s+".lua", string(lib), string(src))
			}
		}
	}
	return names
}

func (bb *pipelineBench) scriptCostsStart(b *testing.B) scriptCosts {
	if os.Getenv("HUSH_BENCH_SCRIPTS") != "1" {
		return scriptCosts{}
	}
	c := redis.NewClient(&redis.Options{Addr: bb.rdb.Options().Addr})
	defer c.Close()
	ctx := context.Background()
	for _, kv := range [][2]string{{"slowlog-log-slower-than", "0"}, {"slowlog-max-len", "4000000"}} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
		b.Fatal(err)
	}
	return scriptCosts{on: true}
}

func (sc scriptCosts) log(b *testing.B, bb *pipelineBench, deliveries int) {
	if !sc.on {
		return
	}
	c := redis.NewClient(&redis.Options{Addr: bb.rdb.Options().Addr})
	defer c.Close()
	ctx := context.Background()
	_ = c.ConfigSet(ctx, "slowlog-log-slower-than", "-1").Err()
	logs, err := c.SlowLogGet(ctx, -1).Result()
	if err != nil {
		b.Fatal(err)
	}
	_ = c.Do(ctx, "SLOWLOG", "RESET").Err()
	names := scriptNames()
	type cost struct {
		name  string
		usec  int64
		calls int64
	}
	by := map[string]*cost{}
	for _, l := range logs {
		if len(l.Args) == 0 {
			continue
		}
		name := strings.ToLower(l.Args[0])
		if name == "evalsha" && len(l.Args) > 1 {
			if n, ok := names[l.Args[1]]; ok {
				name = n
			} else {
				name = "evalsha " + l.Args[1][:min(8, len(l.Args[1]))] + " (Asynq's)"
			}
		}
		if by[name] == nil {
			by[name] = &cost{name: name}
		}
		by[name].usec += l.Duration.Microseconds()
		by[name].calls++
	}
	var costs []*cost
	for _, c := range by {
		costs = append(costs, c)
	}
	slices.SortFunc(costs, func(a, b *cost) int { return int(b.usec - a.usec) })
	var parts []string
	for _, c := range costs[:min(12, len(costs))] {
		parts = append(parts, fmt.Sprintf("%s %.1f µs (%.3f calls, %.1f µs each)", c.name,
			float64(c.usec)/float64(deliveries), float64(c.calls)/float64(deliveries), float64(c.usec)/float64(c.calls)))
	}
	b.Logf("Redis server time per delivery by script and command (slow log, %d entries): %s", len(logs), strings.Join(parts, "; "))
}
