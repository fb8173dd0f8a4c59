package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/bench"
	"github.com/hushpush/hush/internal/redistest"
)

// benchOutput is hush bench --json's output.
type benchOutput struct {
	Redis string         `json:"redis"`
	Runs  []bench.Result `json:"runs"`
}

// runBenchJSON runs hush bench --json with args and decodes its output.
func runBenchJSON(t *testing.T, args ...string) benchOutput {
	t.Helper()
	stdout, stderr, code := runCmd(t, append([]string{"bench", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("hush bench: exit status %d; stderr:\n%s", code, stderr)
	}
	var out benchOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("hush bench --json: %v; stdout:\n%s", err, stdout)
	}
	if !strings.Contains(stderr, "deleted the") {
		t.Errorf("bench did not report its cleanup; stderr:\n%s", stderr)
	}
	return out
}

// checkBenchRun checks one run's figures are measured, not left at zero.
func checkBenchRun(t *testing.T, r bench.Result, jobs, deliveries, masters int) {
	t.Helper()
	if r.Jobs != jobs || r.Deliveries != deliveries {
		t.Errorf("%s: %d jobs, %d deliveries, want %d and %d", r.Name, r.Jobs, r.Deliveries, jobs, deliveries)
	}
	if r.PerSecond <= 0 || r.Seconds <= 0 || r.RedisCPUus <= 0 || r.CeilingPerSec <= 0 {
		t.Errorf("%s: figures not measured: %+v", r.Name, r)
	}
	// A delivery costs hush at least a booking, a start and a record:
	// fewer commands than that per delivery means the counters missed them.
	if r.RedisCmds < 2 {
		t.Errorf("%s: %.2f Redis commands per delivery, want at least 2", r.Name, r.RedisCmds)
	}
	if len(r.Masters) != masters {
		t.Fatalf("%s: %d masters reported, want %d", r.Name, len(r.Masters), masters)
	}
	for _, m := range r.Masters {
		if m.Commands <= 0 {
			t.Errorf("%s: master %s handled no command", r.Name, m.Addr)
		}
	}
}

// benchKeys lists rdb's hush:* and asynq:* keys (every master's on a
// cluster).
func benchKeys(t *testing.T, rdb redis.UniversalClient) []string {
	t.Helper()
	keys, err := bench.Keys(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// benchRedis starts a private real redis-server for hush bench (it reads
// INFO cpu) and points HUSH_REDIS_URL at it, with no other HUSH_* key set.
func benchRedis(t *testing.T) *redistest.Server {
	t.Helper()
	unsetHushEnv(t)
	srv := redistest.Start(t)
	if !srv.Real() {
		t.Skip("hush bench reads INFO cpu: needs a real redis-server")
	}
	t.Setenv("HUSH_REDIS_URL", srv.URL())
	return srv
}

// TestBenchMeasuresAndCleansUp runs hush bench on a private Redis holding
// another application's key: both runs deliver every push, their figures
// are measured, and bench leaves no key of its own behind and the other
// application's untouched.
func TestBenchMeasuresAndCleansUp(t *testing.T) {
	rdb := benchRedis(t).Client(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, "other-app:key", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	out := runBenchJSON(t, "--jobs", "300", "--fanout", "2", "--recipients", "150")
	if len(out.Runs) != 2 {
		t.Fatalf("%d runs, want 2: %+v", len(out.Runs), out)
	}
	checkBenchRun(t, out.Runs[0], 300, 300, 1)
	checkBenchRun(t, out.Runs[1], 2, 300, 1)
	if out.Runs[0].BusiestShare != 1 {
		t.Errorf("one server's share is %.2f, want 1", out.Runs[0].BusiestShare)
	}
	if keys := benchKeys(t, rdb); len(keys) > 0 {
		t.Errorf("bench left %d keys, e.g. %q", len(keys), keys[0])
	}
	if v, err := rdb.Get(ctx, "other-app:key").Result(); err != nil || v != "kept" {
		t.Errorf("another application's key: %q, %v; want it untouched", v, err)
	}
}

// TestBenchRefusesADatabaseInUse: a database already holding hush's or
// Asynq's keys may be a deployment's, whose keys bench's cleanup would
// delete: bench refuses it, names a key, and deletes nothing.
func TestBenchRefusesADatabaseInUse(t *testing.T) {
	unsetHushEnv(t)
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	for _, key := range []string{"asynq:{normal}:pending", "hush:throttle:{u-1}"} {
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, key, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		t.Setenv("HUSH_REDIS_URL", srv.URL())
		_, stderr, code := runCmd(t, "bench", "--jobs", "10", "--fanout", "0")
		if code != 1 || !strings.Contains(stderr, key) || !strings.Contains(stderr, "database of its own") {
			t.Errorf("a database holding %s: exit %d, stderr:\n%s\nwant 1 and a message naming the key", key, code, stderr)
		}
		if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Errorf("%s after the refusal: exists %d, %v; want it kept", key, n, err)
		}
	}
}

// TestBenchNeedsARealRedis: with no HUSH_REDIS_* key bench would measure
// the embedded development Redis, which is not what anyone sizes.
func TestBenchNeedsARealRedis(t *testing.T) {
	unsetHushEnv(t)
	_, stderr, code := runCmd(t, "bench")
	if code != 2 || !strings.Contains(stderr, "HUSH_REDIS_URL") {
		t.Errorf("exit %d, stderr:\n%s\nwant 2 and a message naming HUSH_REDIS_URL", code, stderr)
	}
}

// TestBenchOnACluster runs bench on three masters with shard queues: every
// master takes part and bench cleans every one of them.
func TestBenchOnACluster(t *testing.T) {
	unsetHushEnv(t)
	c := redistest.StartCluster(t, 3)
	t.Setenv("HUSH_REDIS_CLUSTER_ADDRS", strings.Join(c.Addrs(), ","))
	t.Setenv("HUSH_DELIVERY_SHARDS", "3")
	out := runBenchJSON(t, "--jobs", "300", "--fanout", "1", "--recipients", "300")
	if len(out.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(out.Runs))
	}
	checkBenchRun(t, out.Runs[0], 300, 300, 3)
	checkBenchRun(t, out.Runs[1], 1, 300, 3)
	for _, r := range out.Runs {
		if r.BusiestShare <= 0 || r.BusiestShare >= 1 {
			t.Errorf("%s: busiest master's share %.2f, want between 0 and 1", r.Name, r.BusiestShare)
		}
	}
	if keys := benchKeys(t, c.Client(t)); len(keys) > 0 {
		t.Errorf("bench left %d keys, e.g. %q", len(keys), keys[0])
	}
}

// TestBenchPerUserDefers: with --per-user 3 and a 1 s gap, each user's
// three pushes cannot all go out at once, so the run lasts at least the
// two gaps; with the loose default they go out together.
func TestBenchPerUserDefers(t *testing.T) {
	benchRedis(t)
	out := runBenchJSON(t, "--jobs", "30", "--fanout", "3", "--recipients", "10", "--per-user", "3", "--min-gap", "1s")
	if len(out.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(out.Runs))
	}
	for _, r := range out.Runs {
		if r.Deliveries != 30 {
			t.Errorf("%s: %d deliveries, want 30", r.Name, r.Deliveries)
		}
		if r.Seconds < 2 {
			t.Errorf("%s: 3 pushes per user with a 1 s gap took %.2f s, want at least 2 s", r.Name, r.Seconds)
		}
	}
}

// TestBenchBatched: --batch 100 submits the jobs through EnqueueBatch;
// every push arrives, and the run costs Redis fewer commands per delivery
// than with --batch 1, each job its own task (one queue task per 100 jobs
// instead of one each), counted by the server in the same test.
func TestBenchBatched(t *testing.T) {
	benchRedis(t)
	one := runBenchJSON(t, "--jobs", "500", "--fanout", "0", "--batch", "1")
	batched := runBenchJSON(t, "--jobs", "500", "--fanout", "0", "--batch", "100")
	if len(one.Runs) != 1 || len(batched.Runs) != 1 {
		t.Fatalf("runs %d and %d, want 1 each", len(one.Runs), len(batched.Runs))
	}
	checkBenchRun(t, batched.Runs[0], 500, 500, 1)
	a, b := one.Runs[0].RedisCmds, batched.Runs[0].RedisCmds
	t.Logf("Redis commands per delivery: %.1f each job its own task, %.1f in batches of 100", a, b)
	if b > 0.8*a {
		t.Errorf("batched: %.1f commands per delivery, want well under the %.1f of each job its own task", b, a)
	}
}
