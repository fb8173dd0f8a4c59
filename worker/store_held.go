package worker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker/internal/task"
)

// The records of held pushes: held markers, run marks, paced times, and
// the groups waiting for their second (together.lua, waitingsecond.go).

// readHeldMark reads recipient index's held marker in job's record (as
// task.HeldMark makes it): redis.Nil when it has none.
func (s store) readHeldMark(ctx context.Context, job string, index int) (string, error) {
	return s.rdb.HGet(ctx, jobKey(job), heldPrefix+strconv.Itoa(index)).Result()
}

// heldFields reads fields of job's record (held markers) in one round
// trip: nil for a field it lacks.
func (s store) heldFields(ctx context.Context, job string, fields []string) ([]any, error) {
	return s.rdb.HMGet(ctx, jobKey(job), fields...).Result()
}

// dropRunMarks deletes the run marks (heldRunKey) of hush:waiting-jobs
// tasks in one round trip.
func (s store) dropRunMarks(ctx context.Context, tasks []string) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, task := range tasks {
			p.Del(ctx, heldRunKey(task))
		}
		return nil
	})
	return err
}

// holdPaced records the paced times of held items (recipient index ->
// time on the limiter's clock, "<ms>", or "<ms>h" when told) in one round
// trip, so their next bookings are made no earlier.
func (s store) holdPaced(ctx context.Context, job string, paced map[int]pacedTurn, ttl time.Duration) error {
	if len(paced) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pt := range paced {
			v := strconv.FormatInt(pt.at.UnixMilli(), 10)
			if pt.told {
				v += pacedToldMark
			}
			p.HSet(ctx, devKey(job), strconv.Itoa(i)+"/p", v)
		}
		p.PExpire(ctx, devKey(job), ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the paced sends of %s: %w", job, err)
	}
	return nil
}

// togetherKeys are together.lua's keys for held queue q and Unix second
// wake.
func togetherKeys(q string, wake int64) []string {
	base := "hush:jobs-at:{" + q + "/" + strconv.FormatInt(wake, 10) + "}"
	return []string{base, base + ":taken", base + ":woken"}
}

// secondJoin adds group id (its payload body) to the second wake of held
// queue q (together.lua's join), answering its reply.
func (s store) secondJoin(ctx context.Context, id, q string, wake int64, body []byte) (int, error) {
	keys := togetherKeys(q, wake)
	r, err := togetherScript.Run(ctx, s.rdb, keys, "join", task.RecordTTL.Milliseconds(), id, body).Int()
	if err != nil {
		return 0, fmt.Errorf("add held jobs %s to %s: %w", id, keys[0], err)
	}
	return r, nil
}

// secondPluck moves group id out of the second wake of held queue q
// (together.lua's pluck), answering its payload; redis.Nil when it is not
// there to take.
func (s store) secondPluck(ctx context.Context, q string, wake int64, id string) (string, error) {
	return togetherScript.Run(ctx, s.rdb, togetherKeys(q, wake), "pluck", task.RecordTTL.Milliseconds(), id).Text()
}

// secondTake takes the groups of the second wake of held queue q
// (together.lua's take): the taken and the woken ones, id to payload, and
// the key of the taken ones, which names them in errors.
func (s store) secondTake(ctx context.Context, q string, wake int64) (taken, woken map[string]string, from string, err error) {
	keys := togetherKeys(q, wake)
	vals, err := togetherScript.Run(ctx, s.rdb, keys, "take", task.RecordTTL.Milliseconds()).Slice()
	if err != nil || len(vals) != 2 {
		return nil, nil, "", fmt.Errorf("take the held jobs of %s (%v): %w", keys[0], vals, err)
	}
	return hashOf(vals[0]), hashOf(vals[1]), keys[1], nil
}

// secondDone marks the second wake of held queue q done (together.lua's
// done).
func (s store) secondDone(ctx context.Context, q string, wake int64) error {
	return togetherScript.Run(ctx, s.rdb, togetherKeys(q, wake), "done", togetherDoneTTL.Milliseconds()).Err()
}

// hashOf reads an HGETALL reply as a map.
func hashOf(v any) map[string]string {
	out := map[string]string{}
	vals, _ := v.([]any)
	for i := 0; i+1 < len(vals); i += 2 {
		k, _ := vals[i].(string)
		out[k], _ = vals[i+1].(string)
	}
	return out
}
