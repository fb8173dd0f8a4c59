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
)

var finalStates = []string{stateDelivered, stateExpired, stateTokenInvalid, stateFailed}

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

func (s store) setCursor(ctx context.Context, id string, n int) error {
	if err := s.rdb.HSet(ctx, jobKey(id), "cursor", n).Err(); err != nil {
		return fmt.Errorf("save fan-out cursor of %s: %w", id, err)
	}
	return nil
}

func (s store) setState(ctx context.Context, id, state string) error {
	if err := s.rdb.HSet(ctx, jobKey(id), "state", state).Err(); err != nil {
		return fmt.Errorf("set state of %s: %w", id, err)
	}
	return nil
}

// finals returns the final state of recipients [from, to) ("" for none).
func (s store) finals(ctx context.Context, id string, from, to int) ([]string, error) {
	fields := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		fields = append(fields, strconv.Itoa(i))
	}
	vals, err := s.rdb.HMGet(ctx, recpKey(id), fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("read recipient states of %s: %w", id, err)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i], _ = v.(string)
	}
	return out, nil
}

func (s store) final(ctx context.Context, id string, recipient int) (string, error) {
	v, err := s.rdb.HGet(ctx, recpKey(id), strconv.Itoa(recipient)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read state of %s/%d: %w", id, recipient, err)
	}
	return v, nil
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

// devices returns the recorded state of each device of a recipient.
func (s store) devices(ctx context.Context, id string, recipient, n int) ([]string, error) {
	fields := make([]string, n)
	for d := range n {
		fields[d] = devField(recipient, d)
	}
	vals, err := s.rdb.HMGet(ctx, devKey(id), fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("read device states of %s/%d: %w", id, recipient, err)
	}
	out := make([]string, n)
	for i, v := range vals {
		out[i], _ = v.(string)
	}
	return out, nil
}

// anyDelivered reports whether a device of the recipient was delivered.
func (s store) anyDelivered(ctx context.Context, id string, recipient, n int) (bool, error) {
	states, err := s.devices(ctx, id, recipient, n)
	if err != nil {
		return false, err
	}
	return slices.Contains(states, stateDelivered), nil
}

func (s store) setDevice(ctx context.Context, id string, recipient, device int, state string, ttl time.Duration) error {
	k := devKey(id)
	err := persist(ctx, func(ctx context.Context) error {
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, k, devField(recipient, device), state)
			p.PExpire(ctx, k, ttl)
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("record device %s/%d/%d as %s: %w", id, recipient, device, state, err)
	}
	return nil
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
	// Counts per final state (delivered, expired, token_invalid, failed)
	// plus pending: recipients without a final state yet.
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
