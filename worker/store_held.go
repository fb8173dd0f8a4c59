package worker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// The records of held pushes: held markers, run marks, paced times, and
// the groups waiting for their second (together.lua, waitingsecond.go).

// readHeldMark reads recipient index's held marker in job's record (as
// task.HeldMark makes it): redis.Nil when it has none.
func (s jobStore) readHeldMark(ctx context.Context, job string, index int) (string, error) {
	return s.rdb.HGet(ctx, store.JobKey(job), store.HeldPrefix+strconv.Itoa(index)).Result()
}

// heldFields reads fields of job's record (held markers) in one round
// trip: nil for a field it lacks.
func (s jobStore) heldFields(ctx context.Context, job string, fields []string) ([]any, error) {
	return s.rdb.HMGet(ctx, store.JobKey(job), fields...).Result()
}

// dropRunMarks deletes the run marks (store.HeldRunKey) of hush:waiting-jobs
// tasks in one round trip.
func (s jobStore) dropRunMarks(ctx context.Context, tasks []string) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, task := range tasks {
			p.Del(ctx, store.HeldRunKey(task))
		}
		return nil
	})
	return err
}

// holdPaced records the paced times of held items (recipient index ->
// time on the limiter's clock, "<ms>", or "<ms>h" when told) in one round
// trip, so their next bookings are made no earlier.
func (s jobStore) holdPaced(ctx context.Context, job string, paced map[int]pacedTurn, ttl time.Duration) error {
	if len(paced) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pt := range paced {
			v := strconv.FormatInt(pt.at.UnixMilli(), 10)
			if pt.told {
				v += store.PacedToldMark
			}
			p.HSet(ctx, store.DevKey(job), strconv.Itoa(i)+"/p", v)
		}
		p.PExpire(ctx, store.DevKey(job), ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the paced sends of %s: %w", job, err)
	}
	return nil
}

// secondJoin adds group id (its payload body) to the second wake of held
// queue q (together.lua's join), answering its reply.
func (s jobStore) secondJoin(ctx context.Context, id, q string, wake int64, body []byte) (int, error) {
	keys := store.TogetherKeys(q, wake)
	r, err := store.TogetherScript.Run(ctx, s.rdb, keys, "join", task.RecordTTL.Milliseconds(), id, body).Int()
	if err != nil {
		return 0, fmt.Errorf("add held jobs %s to %s: %w", id, keys[0], err)
	}
	return r, nil
}

// secondPluck moves group id out of the second wake of held queue q
// (together.lua's pluck), answering its payload; redis.Nil when it is not
// there to take.
func (s jobStore) secondPluck(ctx context.Context, q string, wake int64, id string) (string, error) {
	return store.TogetherScript.Run(ctx, s.rdb, store.TogetherKeys(q, wake), "pluck", task.RecordTTL.Milliseconds(), id).Text()
}

// secondTake takes the groups of the second wake of held queue q
// (together.lua's take): the taken and the woken ones, id to payload, and
// the key of the taken ones, which names them in errors.
func (s jobStore) secondTake(ctx context.Context, q string, wake int64) (taken, woken map[string]string, from string, err error) {
	keys := store.TogetherKeys(q, wake)
	vals, err := store.TogetherScript.Run(ctx, s.rdb, keys, "take", task.RecordTTL.Milliseconds()).Slice()
	if err != nil || len(vals) != 2 {
		return nil, nil, "", fmt.Errorf("take the held jobs of %s (%v): %w", keys[0], vals, err)
	}
	return store.HashOf(vals[0]), store.HashOf(vals[1]), keys[1], nil
}

// secondDone marks the second wake of held queue q done (together.lua's
// done).
func (s jobStore) secondDone(ctx context.Context, q string, wake int64) error {
	return store.TogetherScript.Run(ctx, s.rdb, store.TogetherKeys(q, wake), "done", togetherDoneTTL.Milliseconds()).Err()
}
