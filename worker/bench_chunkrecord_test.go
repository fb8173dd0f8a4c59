package worker

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// BenchmarkChunkRecordCall splits what a fan-out chunk's writes cost
// Redis: the device answers (HSETs of 12 answers each with their PEXPIRE,
// as store.Recorder groups them) and the chunk's record.lua call that
// records its 100 recipients' final states. 100 jobs of 1,000 recipients,
// 10 chunks each, every recipient delivered; one script call per chunk,
// one at a time. It reports Redis CPU (INFO cpu) per delivery of each
// step, for record.lua called two ways and for models of it that leave
// parts out (they keep no correct state; they only price the parts):
//
//   - ranged: record.lua given the chunk's range, as a chunk run calls
//     it: no recipient of a fresh range has a final state, so it does not
//     read which do;
//   - unranged: record.lua given no range, as a call whose recipients
//     span ranges (or a version before ranges): it reads them (an HMGET
//     of 100 fields);
//   - lua-only: given the range (so without that read) and without the
//     writes of final states, their counts and the markers they replace,
//     the Lua around them kept;
//   - empty: a script that returns at once, given the same keys and
//     arguments (what carrying the call's 300 arguments costs).
//
// Run it with
//
//	go test -run '^$' -bench ChunkRecordCall -benchtime 1x -count 2 ./worker/
func BenchmarkChunkRecordCall(b *testing.B) {
	rdb := privateRedis(b)
	ctx := context.Background()
	s := newStore(rdb, DefaultJobRetention)
	src := store.RetireSrc + store.RecordSrc
	models := map[string]string{
		"ranged":   src,
		"unranged": src,
		"lua-only": strings.NewReplacer(
			"  redis.call('HSET', KEYS[2], unpack(finals))\n", "",
			"  redis.call('HDEL', KEYS[1], unpack(gone))\n", "",
			"    redis.call('HINCRBY', KEYS[1], state, counts[state])\n", "",
		).Replace(src),
		"empty": "return {}",
	}
	for _, name := range []string{"lua-only"} {
		if strings.Count(models[name], "redis.call") == strings.Count(src, "redis.call") {
			b.Fatalf("model %s is record.lua unchanged: its source moved on", name)
		}
	}
	const jobs, size = 100, 1000
	for _, name := range []string{"ranged", "unranged", "lua-only", "empty"} {
		script := redis.NewScript(models[name])
		b.Run(name, func(b *testing.B) {
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			js, _ := benchJobs("chunkrecord", jobs, size, size)
			for i := range js {
				js[i].AcceptedAt = time.Now()
				c := s.startCallWith(recordOf(&js[i], "normal"), store.JobQueued, true, nil)
				if err := store.StartScript.Run(ctx, rdb, c.keys, c.args...).Err(); err != nil {
					b.Fatal(err)
				}
			}
			cpu0 := serverCPU(b, rdb)
			for i := range js {
				for from := 0; from < size; from += task.ChunkSize {
					p := rdb.Pipeline()
					for k := from; k < from+task.ChunkSize; k += 12 {
						var f []any
						for x := k; x < min(k+12, from+task.ChunkSize); x++ {
							f = append(f, store.DevField(x, 0), task.Delivered)
						}
						p.HSet(ctx, store.DevKey(js[i].ID), f...)
						p.PExpire(ctx, store.DevKey(js[i].ID), time.Hour)
					}
					if _, err := p.Exec(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			cpu1 := serverCPU(b, rdb)
			rng := func(from int) string {
				if name == "unranged" {
					return ""
				}
				return strconv.Itoa(from / task.ChunkSize)
			}
			for i := range js {
				for from := 0; from < size; from += task.ChunkSize {
					entries := make([]any, 0, 3*task.ChunkSize)
					for x := from; x < from+task.ChunkSize; x++ {
						entries = append(entries, x, task.Delivered, "")
					}
					keys, at := s.retiring(js[i].ID)
					if err := script.Run(ctx, rdb, keys, store.RecordArgs(time.Hour, 0, at, "", "", rng(from), entries)...).Err(); err != nil {
						b.Fatal(err)
					}
				}
			}
			cpu2 := serverCPU(b, rdb)
			if name == "ranged" || name == "unranged" {
				// Every final state written: the call did the work.
				if n := rdb.HLen(ctx, store.RecpKey(js[0].ID)).Val(); n != size {
					b.Fatalf("job %s has %d final states, want %d", js[0].ID, n, size)
				}
			}
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/(jobs*size), "answers-redis-µs/delivery")
			b.ReportMetric(float64((cpu2-cpu1).Microseconds())/(jobs*size), "record-redis-µs/delivery")
		})
	}
}
