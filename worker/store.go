package worker

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Final states of a recipient's delivery.
const (
	stateDelivered    = "delivered"
	stateExpired      = "expired"
	stateTokenInvalid = "token_invalid"
	stateFailed       = "failed"
	// stateThrottleFull: dropped because the user already held the most
	// bookings the limiter allows (HUSH_THROTTLE_MAX_PENDING).
	stateThrottleFull = "throttle_full"
)

var finalStates = []string{stateDelivered, stateExpired, stateTokenInvalid, stateFailed, stateThrottleFull}

// FinalStates returns the final states a recipient's delivery can reach:
// the keys of JobStatus.Counts besides "pending". The slice is a copy.
func FinalStates() []string { return slices.Clone(finalStates) }

// Job record states.
const (
	jobQueued    = "queued"      // accepted, job task not yet run
	jobFanning   = "fanning_out" // job task creating deliveries
	jobFannedOut = "fanned_out"  // every delivery created
)

// recordTTL is how long a job's records outlive its acceptance (or its
// deadline, when that is later): the id answers duplicates that long.
const recordTTL = 7 * 24 * time.Hour

func jobKey(id string) string  { return "hush:job:{" + id + "}" }
func recpKey(id string) string { return jobKey(id) + ":r" }
func devKey(id string) string  { return jobKey(id) + ":dev" }

func devField(recipient, device int) string {
	return strconv.Itoa(recipient) + "/" + strconv.Itoa(device)
}

//go:embed finalize.lua
var finalizeSrc string

var finalizeScript = redis.NewScript(finalizeSrc)

// ttlFor is the TTL of a job's keys.
func ttlFor(accepted, deadline time.Time) time.Duration {
	end := accepted.Add(recordTTL)
	if d := deadline.Add(24 * time.Hour); !deadline.IsZero() && d.After(end) {
		end = d
	}
	return max(time.Until(end), time.Minute)
}

// store reads and writes the job records.
type store struct {
	rdb redis.UniversalClient
}

// recordInfo is what a job record is created with.
type recordInfo struct {
	ID         string
	Queue      string
	Recipients int
	AcceptedAt time.Time
	Deadline   time.Time
}

// create writes the job record's fixed fields unless they are there and sets
// state when the record has none, or when force is set. It reports the queue
// that first claimed the id (so a concurrent duplicate on another queue can
// tell it lost).
func (s store) create(ctx context.Context, r recordInfo, state string, force bool) (owner string, err error) {
	k := jobKey(r.ID)
	deadline := ""
	if !r.Deadline.IsZero() {
		deadline = r.Deadline.UTC().Format(time.RFC3339Nano)
	}
	var ownerCmd *redis.StringCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSetNX(ctx, k, "queue", r.Queue)
		p.HSetNX(ctx, k, "accepted_at", r.AcceptedAt.UTC().Format(time.RFC3339Nano))
		p.HSetNX(ctx, k, "recipients", r.Recipients)
		p.HSetNX(ctx, k, "deadline", deadline)
		if force {
			p.HSet(ctx, k, "state", state)
		} else {
			p.HSetNX(ctx, k, "state", state)
		}
		p.Expire(ctx, k, ttlFor(r.AcceptedAt, r.Deadline))
		ownerCmd = p.HGet(ctx, k, "queue")
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("write job record %s: %w", r.ID, err)
	}
	return ownerCmd.Val(), nil
}

func (s store) exists(ctx context.Context, id string) (bool, error) {
	n, err := s.rdb.Exists(ctx, jobKey(id)).Result()
	if err != nil {
		return false, fmt.Errorf("look up job %s: %w", id, err)
	}
	return n > 0, nil
}

// finalize records a recipient's final state once; it reports whether this
// call recorded it.
func (s store) finalize(ctx context.Context, id string, recipient int, state string, ttl time.Duration) (bool, error) {
	n, err := finalizeScript.Run(ctx, s.rdb, []string{jobKey(id), recpKey(id)},
		recipient, state, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("record %s/%d as %s: %w", id, recipient, state, err)
	}
	return n == 1, nil
}

func (s store) countDeferral(ctx context.Context, id string) error {
	if err := s.rdb.HIncrBy(ctx, jobKey(id), "deferrals", 1).Err(); err != nil {
		return fmt.Errorf("count deferral of %s: %w", id, err)
	}
	return nil
}

// JobStatus is the state of a job and its counts per delivery state.
type JobStatus struct {
	ID         string    `json:"id"`
	State      string    `json:"state"`
	Queue      string    `json:"queue"`
	AcceptedAt time.Time `json:"accepted_at"`
	Deadline   time.Time `json:"deadline,omitzero"`
	Recipients int       `json:"recipients"`
	// Counts per final state (FinalStates) plus pending: recipients
	// without a final state yet.
	Counts map[string]int `json:"counts"`
	// Deferrals counts how often a delivery of the job was deferred by the
	// limiter.
	Deferrals int `json:"deferrals"`
}

// Job states reported by JobStatus beyond the record's own.
const jobDone = "done"

// ErrNotFound is returned for an unknown job id.
var ErrNotFound = errors.New("not found")

func (s store) status(ctx context.Context, id string) (JobStatus, error) {
	m, err := s.rdb.HGetAll(ctx, jobKey(id)).Result()
	if err != nil {
		return JobStatus{}, fmt.Errorf("read job %s: %w", id, err)
	}
	if len(m) == 0 {
		return JobStatus{}, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	st := JobStatus{ID: id, State: m["state"], Queue: m["queue"], Counts: map[string]int{}}
	st.AcceptedAt, _ = time.Parse(time.RFC3339Nano, m["accepted_at"])
	st.Deadline, _ = time.Parse(time.RFC3339Nano, m["deadline"])
	st.Recipients, _ = strconv.Atoi(m["recipients"])
	st.Deferrals, _ = strconv.Atoi(m["deferrals"])
	final := 0
	for _, f := range finalStates {
		n, _ := strconv.Atoi(m[f])
		st.Counts[f] = n
		final += n
	}
	st.Counts["pending"] = max(st.Recipients-final, 0)
	if st.State == jobFannedOut && final >= st.Recipients {
		st.State = jobDone
	}
	return st, nil
}

// A recipient's attempt history lives in its job's device hash beside its
// device states: "<i>/a" attempts made before the current one, "<i>/f"
// transient failures, "<i>/t" when a provider first throttled it (Unix ms).
const nAttemptFields = 3

// appendRecipientFields appends the device hash fields of recipient i with
// n devices: its device states, then its attempt fields.
func appendRecipientFields(fields []string, i, n int) []string {
	for d := range n {
		fields = append(fields, devField(i, d))
	}
	p := strconv.Itoa(i) + "/"
	return append(fields, p+"a", p+"f", p+"t")
}

// attemptsOf reads the attempt fields (as HMGET answers them).
func attemptsOf(vals []any) attempts {
	var a attempts
	s := strs(vals)
	a.n, _ = strconv.Atoi(s[0])
	a.failures, _ = strconv.Atoi(s[1])
	if ms, err := strconv.ParseInt(s[2], 10, 64); err == nil {
		a.throttledSince = time.UnixMilli(ms)
	}
	return a
}

// strs turns HMGET answers into strings ("" for none).
func strs(vals []any) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i], _ = v.(string)
	}
	return out
}

// recipientState is what the job records say of one recipient.
type recipientState struct {
	final    string
	devices  []string
	attempts attempts
}

// recipient reads recipient i's final state, device states and attempts in
// one round trip.
func (s store) recipient(ctx context.Context, id string, i, devices int) (recipientState, error) {
	var rc *redis.StringCmd
	var dc *redis.SliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		rc = p.HGet(ctx, recpKey(id), strconv.Itoa(i))
		dc = p.HMGet(ctx, devKey(id), appendRecipientFields(nil, i, devices)...)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return recipientState{}, fmt.Errorf("read state of %s/%d: %w", id, i, err)
	}
	vals := dc.Val()
	if len(vals) != devices+nAttemptFields {
		return recipientState{}, fmt.Errorf("read state of %s/%d: %d fields for %d devices", id, i, len(vals), devices)
	}
	return recipientState{final: rc.Val(), devices: strs(vals[:devices]), attempts: attemptsOf(vals[devices:])}, nil
}

// nextAttempt records that recipient i's attempt a.n ended and another
// follows (a transient failure when transient; a provider throttling at now
// when throttled), and returns the new history. It is written under its
// own context like device outcomes: the next attempt must book a slot of
// its own even when shutdown cancelled the task.
func (s store) nextAttempt(ctx context.Context, id string, i int, a attempts, transient, throttled bool, now time.Time, ttl time.Duration) (attempts, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	k, p := devKey(id), strconv.Itoa(i)+"/"
	var nc, fc *redis.IntCmd
	var tc *redis.StringCmd
	err := persist(ctx, func(ctx context.Context) error {
		_, err := s.rdb.TxPipelined(ctx, func(pp redis.Pipeliner) error {
			nc = pp.HIncrBy(ctx, k, p+"a", 1)
			fc = pp.HIncrBy(ctx, k, p+"f", b2i(transient))
			if throttled {
				pp.HSetNX(ctx, k, p+"t", now.UnixMilli())
			}
			tc = pp.HGet(ctx, k, p+"t")
			pp.PExpire(ctx, k, ttl)
			return nil
		})
		if errors.Is(err, redis.Nil) {
			err = nil
		}
		return err
	})
	if err != nil {
		return a, fmt.Errorf("record the next attempt of %s/%d: %w", id, i, err)
	}
	out := attempts{n: int(nc.Val()), failures: int(fc.Val())}
	if ms, err := strconv.ParseInt(tc.Val(), 10, 64); err == nil {
		out.throttledSince = time.UnixMilli(ms)
	}
	return out, nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
