package worker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// BenchmarkJobScriptCalls measures what a single-recipient job's own
// scripts cost Redis when each job is a script call of its own, as the
// worker makes them (a batch task's calls share a pipeline, not a call),
// against the same scripts run for 16 jobs in one call:
//
//	go test -run '^$' -bench JobScriptCalls -benchtime 16000x ./worker/
//
// The three scripts a job runs are timed apart: the accepting client's
// start.lua (a new id: the done buckets are looked in), the batch task's
// start.lua, and the record.lua call that records the job's one final
// state and retires it. "call-per-16-jobs" runs the real script's
// source inside a Lua function once per job (the question is what the
// calls cost, not what a rewrite would). It reports the server's Redis
// CPU (INFO cpu) per job and script. It answers whether merging a batch's
// per-job calls into one call per node is worth building: the per-call
// cost is what it could save.
func BenchmarkJobScriptCalls(b *testing.B) {
	rdb := privateRedis(b)
	ctx := context.Background()
	s := newStore(rdb, DefaultJobRetention)
	const group = 16
	for _, merged := range []bool{false, true} {
		name := "call-per-job"
		if merged {
			name = "call-per-16-jobs"
		}
		b.Run(name, func(b *testing.B) {
			n := max(b.N-b.N%group, group)
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			jobs, _ := benchJobs("callcost", n, 1, n)
			for i := range jobs {
				jobs[i].AcceptedAt = time.Now()
			}
			// Each phase is every job's call of one script, 16 a pipeline
			// (or a call), the phases in the order a job runs them.
			phases := []struct {
				name   string
				script *redis.Script
				call   func(i int) (keys []string, args []any)
			}{
				{"client-start", store.StartScript, func(i int) ([]string, []any) {
					r := recordOf(&jobs[i], "normal")
					r.Task = "batch:callcost" // the batch task owns the job
					c := s.startCallWith(r, store.JobQueued, true, nil)
					return c.keys, c.args
				}},
				{"task-start", store.StartScript, func(i int) ([]string, []any) {
					r := recordOf(&jobs[i], "normal")
					r.Task = "batch:callcost"
					c := s.startCall(r, true, task.ChunkOf(&jobs[i], 0))
					return c.keys, c.args
				}},
				{"record", store.RecordScript, func(i int) ([]string, []any) {
					keys, at := s.retiring(jobs[i].ID)
					return keys, store.RecordArgs(task.ChunkOf(&jobs[i], 0).TTL(), 0, at, "", "", "", []any{0, task.Delivered, ""})
				}},
			}
			for _, ph := range phases {
				many := manyScript(ph.script)
				for _, sc := range []*redis.Script{ph.script, many} {
					if err := sc.Load(ctx, rdb).Err(); err != nil {
						b.Fatal(err)
					}
				}
				cpu0 := serverCPU(b, rdb)
				for i := 0; i < n; i += group {
					p := rdb.Pipeline()
					var mk []string
					ma := []any{group}
					for j := i; j < i+group; j++ {
						keys, args := ph.call(j)
						if merged {
							mk = append(mk, keys...)
							ma = append(ma, len(keys), len(args))
							ma = append(ma, args...)
						} else {
							ph.script.EvalSha(ctx, p, keys, args...)
						}
					}
					if merged {
						many.EvalSha(ctx, p, mk, ma...)
					}
					if _, err := p.Exec(ctx); err != nil {
						b.Fatalf("%s: %v", ph.name, err)
					}
				}
				cpu := serverCPU(b, rdb) - cpu0
				b.ReportMetric(float64(cpu.Microseconds())/float64(n), "redis-µs/job/"+ph.name)
			}
			// Every job retired: the calls did the work, not just returned.
			if left := rdb.Keys(ctx, "hush:job:*").Val(); len(left) != 0 {
				b.Fatalf("%d job keys left after record.lua, e.g. %s", len(left), left[0])
			}
		})
	}
}

// manyScript runs src's script once per job in one call, in a Lua
// function whose KEYS and ARGV are that job's: ARGV[1] is the number of
// jobs, then per job its key count, its argument count and its arguments;
// KEYS holds every job's keys in order. It replies each job's reply.
func manyScript(s *redis.Script) *redis.Script {
	return redis.NewScript(fmt.Sprintf(`local function one(KEYS, ARGV)
%s
end
local out, k, a = {}, 0, 2
for j = 1, tonumber(ARGV[1]) do
  local nk, na = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local keys, args = {}, {}
  for x = 1, nk do keys[x] = KEYS[k + x] end
  for x = 1, na do args[x] = ARGV[a + 1 + x] end
  k, a = k + nk, a + 2 + na
  out[j] = one(keys, args)
end
return out`, scriptSource[s]))
}

// scriptSource is the source of the scripts manyScript wraps.
var scriptSource = map[*redis.Script]string{store.StartScript: store.StartSrc, store.RecordScript: store.RetireSrc + store.RecordSrc}

// privateRedis is a client of a redis-server of b's own, whose CPU
// nothing else uses.
func privateRedis(b *testing.B) *redis.Client {
	srv := redistest.Start(b)
	if !srv.Real() {
		b.Skip("needs a real redis-server")
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// serverCPU is the server's used_cpu_user + used_cpu_sys.
func serverCPU(b *testing.B, rdb *redis.Client) time.Duration {
	bb := &pipelineBench{rdb: rdb}
	return bb.redisStats(b).cpu
}

// BenchmarkJobKeyLifecycle measures what keeping a single-recipient job's
// live state in keys of its own costs Redis, against keeping it in one
// field of a shared hash, as finished jobs' done entries are kept
// (worker/internal/store/done.go): the question a leaner store for single-recipient jobs
// would answer.
//
//	go test -run '^$' -bench JobKeyLifecycle -benchtime 100000x ./worker/
//
// Each job is written once (a record hash of 8 fields and a device hash,
// each with a TTL; the same fields in the record alone, as a job whose
// device answer is folded into its record call keeps them; or one packed
// field and the shared hash's expiry) and retired once (its keys deleted,
// or its field removed, and its done entry written), each by a script
// call, 16 calls a pipeline. It reports the
// server's Redis CPU per job, both steps together. The scripts are
// models of the real ones' writes, not the real scripts.
func BenchmarkJobKeyLifecycle(b *testing.B) {
	rdb := privateRedis(b)
	ctx := context.Background()
	const retire = `redis.call('HSET', KEYS[3], ARGV[1], 'normal|1764198000123|1||||1')
redis.call('PEXPIREAT', KEYS[3], 1864198000123)`
	models := []struct {
		name   string
		script *redis.Script
		keys   func(id, bucket, done string) []string
	}{
		{"keys-of-its-own", redis.NewScript(`if ARGV[2] == 'w' then
redis.call('HSET', KEYS[1], 'queue', 'normal', 'task', 'batch:x', 'accepted_at', '2026-11-26T23:00:00.123456789Z',
  'recipients', '1', 'deadline', '', 'state', 'queued', 'cursor', '0', 'ttl', '604800000')
redis.call('PEXPIRE', KEYS[1], 604800000)
redis.call('HSET', KEYS[2], '0/0', 'delivered')
redis.call('PEXPIRE', KEYS[2], 604800000)
else
redis.call('DEL', KEYS[1], KEYS[2])
` + retire + `
end
return 1`), func(id, _, done string) []string { return []string{store.JobKey(id), store.DevKey(id), done} }},
		{"one-key-states-inside", redis.NewScript(`if ARGV[2] == 'w' then
redis.call('HSET', KEYS[1], 'queue', 'normal', 'task', 'batch:x', 'accepted_at', '2026-11-26T23:00:00.123456789Z',
  'recipients', '1', 'deadline', '', 'state', 'queued', 'cursor', '0', 'ttl', '604800000')
redis.call('PEXPIRE', KEYS[1], 604800000)
redis.call('HSET', KEYS[1], '0/0', 'delivered')
else
redis.call('DEL', KEYS[1])
` + retire + `
end
return 1`), func(id, _, done string) []string { return []string{store.JobKey(id), store.JobKey(id), done} }},
		{"field-of-a-shared-hash", redis.NewScript(`if ARGV[2] == 'w' then
redis.call('HSET', KEYS[1], ARGV[1], 'normal|batch:x|2026-11-26T23:00:00.123456789Z|1||queued|0|0/0:delivered')
redis.call('PEXPIREAT', KEYS[1], 1864198000123)
else
redis.call('HDEL', KEYS[1], ARGV[1])
` + retire + `
end
return 1`), func(_, bucket, done string) []string { return []string{bucket, bucket, done} }},
	}
	const group = 16
	for _, m := range models {
		b.Run(m.name, func(b *testing.B) {
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			if err := m.script.Load(ctx, rdb).Err(); err != nil {
				b.Fatal(err)
			}
			n := max(b.N-b.N%group, group)
			cpu0 := serverCPU(b, rdb)
			for _, step := range []string{"w", "d"} {
				for i := 0; i < n; i += group {
					p := rdb.Pipeline()
					for j := i; j < i+group; j++ {
						id := "life-" + strconv.Itoa(j)
						tag := "{" + strconv.Itoa(j%store.DoneShards) + "}"
						m.script.EvalSha(ctx, p, m.keys(id, "hush:live:"+tag, "hush:done:"+tag), id, step)
					}
					if _, err := p.Exec(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64((serverCPU(b, rdb)-cpu0).Microseconds())/float64(n), "redis-µs/job")
			// Both leave only the done hashes: nothing live.
			if got, want := rdb.DBSize(ctx).Val(), int64(min(n, store.DoneShards)); got != want {
				b.Fatalf("%d keys left, want the %d done hashes", got, want)
			}
		})
	}
}
