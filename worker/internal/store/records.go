package store

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/task"
)

// The layout of a job's records: their fields, states and the reads
// every reader of them queues.

// Fields of the job record besides its fixed ones and counters: when the
// job was cancelled, and per held delivery "h:<index>" -> the queue its
// task waits on, and which task that is (task.HeldMark), so a cancellation can
// wake it and a re-run finds it. record.lua keeps two more counts of the
// final states written by calls given a range (RecordRange): "ranged"
// (all such calls') and "f:<range>" (one range's), which tell it when no
// recipient of a range can have a final state yet.
const (
	FieldCancelled = "cancelled_at"
	// FieldAppWait is when a delivery of the job first found its app (or
	// a sender it needs) missing where it ran, in Unix ms (the worker's waitForApp).
	FieldAppWait = "app_wait"
	HeldPrefix   = "h:"
)

// Job record states, which JobStatus reports as they are (the scripts
// write the same strings).
const (
	JobQueued    = wire.StateQueued     // accepted, job task not yet run
	JobFanning   = wire.StateFanningOut // job task creating deliveries
	JobFannedOut = wire.StateFannedOut  // every delivery created
)

// StateRetired is what the job store reads as the final state of every
// recipient of a retired job (done.go): it is never recorded.
const StateRetired = "retired"

// QueueHead queues, after reads of job id's recipient states, a read of
// its record's queue and cancellation, for the worker's jobStore.headOf.
func QueueHead(ctx context.Context, p redis.Pipeliner, id string) *redis.SliceCmd {
	return p.HMGet(ctx, JobKey(id), "queue", FieldCancelled)
}

// QueueCancelled queues a read of job id's cancellation on p: its answer
// is the time the job was cancelled, or redis.Nil.
func QueueCancelled(ctx context.Context, p redis.Pipeliner, id string) *redis.StringCmd {
	return p.HGet(ctx, JobKey(id), FieldCancelled)
}

// IsCancelled reads a QueueCancelled answer.
func IsCancelled(c *redis.StringCmd) (bool, error) {
	switch err := c.Err(); {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// QueueRetired queues the reads of job id's done-hash entry on p.
func QueueRetired(ctx context.Context, p redis.Pipeliner, b DoneBuckets, id string, now time.Time) []*redis.StringCmd {
	keys := b.Keys(id, now)
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = p.HGet(ctx, k, JobTag(id))
	}
	return cmds
}

// RetiredOf is the entry QueueRetired's reads found, "" for none.
func RetiredOf(cmds []*redis.StringCmd) string {
	for _, c := range cmds {
		if v := c.Val(); v != "" {
			return v
		}
	}
	return ""
}

// TaskTag is what a finished job's done entry keeps of the batch task that
// owned it: the task id's last 6 characters (retire.lua), random in a
// batch task's id. "" for none.
func TaskTag(taskID string) string {
	return taskID[max(0, len(taskID)-6):]
}

// A recipient's attempt history lives in its job's device hash beside its
// device states: "<i>/a" attempts made before the current one, "<i>/f"
// transient failures, "<i>/t" when a provider first throttled it (Unix
// ms), "<i>/p" the send time a pacer granted its next send (Unix ms on the
// limiter's clock; with PacedToldMark, a time it was told, not granted;
// see the worker's pace.go), "<i>/r" attempts a provider refused (throttled, or failed
// transiently), which the backoff counts, "<i>/w" the instant before which
// the next attempt calls no provider (Unix ms on the local clock of the
// process that recorded it: a provider's Retry-After, or the backoff).
const NAttemptFields = 6

// AppendRecipientFields appends the device hash fields of recipient i with
// n devices: its device states, then its attempt fields.
func AppendRecipientFields(fields []string, i, n int) []string {
	for d := range n {
		fields = append(fields, DevField(i, d))
	}
	p := strconv.Itoa(i) + "/"
	return append(fields, p+"a", p+"f", p+"t", p+"p", p+"r", p+"w")
}

// AttemptsOf reads the attempt fields (as HMGET answers them).
func AttemptsOf(vals []any) decide.Attempts {
	var a decide.Attempts
	s := Strs(vals)
	a.N, _ = strconv.Atoi(s[0])
	a.Failures, _ = strconv.Atoi(s[1])
	if ms, err := strconv.ParseInt(s[2], 10, 64); err == nil {
		a.ThrottledSince = time.UnixMilli(ms)
	}
	p, told := strings.CutSuffix(s[3], PacedToldMark)
	if ms, err := strconv.ParseInt(p, 10, 64); err == nil {
		a.Paced, a.PacedTold = time.UnixMilli(ms), told
	}
	a.Refusals, _ = strconv.Atoi(s[4])
	if ms, err := strconv.ParseInt(s[5], 10, 64); err == nil {
		a.RetryAt = time.UnixMilli(ms)
	}
	return a
}

// Strs turns HMGET answers into strings ("" for none).
func Strs(vals []any) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i], _ = v.(string)
	}
	return out
}

// PushedUnder reads the attempts delivered devices (states) got the push
// under (PushedField's values, as HMGET answers them): -1 where none is
// recorded.
func PushedUnder(states []string, vals []any) []int {
	out := make([]int, len(states))
	for j := range out {
		out[j] = -1
		if j >= len(vals) || states[j] != task.Delivered {
			continue
		}
		if s, ok := vals[j].(string); ok {
			if n, err := strconv.Atoi(s); err == nil {
				out[j] = n
			}
		}
	}
	return out
}

// HashOf reads an HGETALL reply as a map.
func HashOf(v any) map[string]string {
	out := map[string]string{}
	vals, _ := v.([]any)
	for i := 0; i+1 < len(vals); i += 2 {
		k, _ := vals[i].(string)
		out[k], _ = vals[i+1].(string)
	}
	return out
}

// ResetMarkOf reads a reset mark's GET: Unix ms, 0 for none. A mark that
// could not be read (its node did not answer, or the key holds something
// else) is the latest instant: every booking is looked up, which is always
// safe.
func ResetMarkOf(g *redis.StringCmd) int64 {
	v, err := g.Int64()
	switch {
	case errors.Is(err, redis.Nil):
		return 0
	case err != nil:
		return math.MaxInt64
	}
	return v
}

// PacedToldMark ends a recorded paced time the Pacer held back
// (the worker's pacedTurn.told).
const PacedToldMark = "h"
