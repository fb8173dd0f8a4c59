package worker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// What a run leaves in Redis once it has settled (the worker stopped,
// every job final): used_memory against the empty server's, and the keys'
// own sizes (MEMORY USAGE, exact: SAMPLES 0) summed by kind, per job.
// Allocator overhead and Redis's own structures are in used_memory only,
// so the kinds add up to less than it.

// keyKinds is the bytes and number of keys of each kind.
type keyKinds map[string]struct{ keys, bytes int64 }

// keyKind names the kind of key k: a job's three records, the limiter's
// keys, Asynq's task hashes and its other keys.
func keyKind(k string) string {
	switch {
	case strings.HasPrefix(k, "hush:job:"):
		switch {
		case strings.HasSuffix(k, "}:r"):
			return "hush:job:{id}:r"
		case strings.HasSuffix(k, "}:dev"):
			return "hush:job:{id}:dev"
		case strings.HasSuffix(k, "}:x"):
			return "hush:job:{id}:x"
		case strings.HasSuffix(k, "}"):
			return "hush:job:{id}"
		}
		return "hush:job other"
	case strings.HasPrefix(k, "hush:throttle:"):
		return "hush:throttle (limiter)"
	case strings.HasPrefix(k, "hush:done:"):
		return "hush:done (finished jobs)"
	case strings.HasPrefix(k, "hush:"):
		return "hush other"
	case strings.HasPrefix(k, "asynq:") && strings.Contains(k, "}:t:"):
		return "asynq task hashes"
	case strings.HasPrefix(k, "asynq:"):
		return "asynq other"
	}
	return "other"
}

// usedMemory is the server's used_memory.
func (bb *pipelineBench) usedMemory(b *testing.B) int64 {
	info, err := bb.rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatalf("used_memory %q: %v", v, err)
			}
			return n
		}
	}
	b.Fatal("INFO memory without used_memory")
	return 0
}

// keyMemory sums MEMORY USAGE over every key, by kind.
func (bb *pipelineBench) keyMemory(b *testing.B) keyKinds {
	ctx := context.Background()
	out := keyKinds{}
	var cursor uint64
	for {
		keys, next, err := bb.rdb.Scan(ctx, cursor, "*", 1000).Result()
		if err != nil {
			b.Fatal(err)
		}
		cmds := make([]*redis.IntCmd, len(keys))
		if _, err := bb.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys {
				cmds[i] = p.MemoryUsage(ctx, k, 0)
			}
			return nil
		}); err != nil && err != redis.Nil {
			b.Fatal(err)
		}
		for i, k := range keys {
			n, err := cmds[i].Result()
			if err != nil {
				continue // expired since the scan
			}
			kk := out[keyKind(k)]
			kk.keys++
			kk.bytes += n
			out[keyKind(k)] = kk
		}
		if cursor = next; cursor == 0 {
			return out
		}
	}
}

// memoryPerJob logs what settled jobs hold, per job, and returns
// used_memory's growth per job over base (the empty server's): all of it,
// and what is retained once the limiter's keys are gone (they are per user
// and expire with their windows, so a steady state of finished jobs does
// not keep them; the benchmark deletes them to measure without waiting).
func (bb *pipelineBench) memoryPerJob(b *testing.B, jobs int, base int64) (all, retained, perEvent float64) {
	used := bb.usedMemory(b)
	kinds := bb.keyMemory(b)
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		v := kinds[k]
		parts = append(parts, fmt.Sprintf("%s %.0f B (%d keys)", k, float64(v.bytes)/float64(jobs), v.keys))
	}
	all = float64(used-base) / float64(jobs)
	// The events stream is capped (HUSH_EVENTS_MAXLEN), not kept per job:
	// its bytes per event are their own figure.
	ctx := context.Background()
	if n := bb.rdb.XLen(ctx, EventsStream).Val(); n > 0 {
		perEvent = float64(bb.rdb.MemoryUsage(ctx, EventsStream, 0).Val()) / float64(n)
	}
	bb.deleteKeys(b, "hush:throttle:*")
	bb.deleteKeys(b, EventsStream)
	retained = float64(bb.usedMemory(b)-base) / float64(jobs)
	b.Logf("Redis memory after the run settled, per job (%d jobs): used_memory %.0f B, %.0f B without the limiter's keys and the events stream (%.0f B per event); keys: %s",
		jobs, all, retained, perEvent, strings.Join(parts, ", "))
	return all, retained, perEvent
}

// deleteKeys deletes the keys matching pattern.
func (bb *pipelineBench) deleteKeys(b *testing.B, pattern string) {
	ctx := context.Background()
	var cursor uint64
	for {
		keys, next, err := bb.rdb.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			b.Fatal(err)
		}
		if len(keys) > 0 {
			if err := bb.rdb.Del(ctx, keys...).Err(); err != nil {
				b.Fatal(err)
			}
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}
