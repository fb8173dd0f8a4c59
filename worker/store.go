package worker

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// FinalStates returns the final states a recipient's delivery can reach:
// the keys of JobStatus.Counts besides "pending". The slice is a copy.
func FinalStates() []string { return task.FinalStates() }

// The job store is the Redis records of jobs. Their keys, the key
// builders, the Lua scripts (one .lua file each, with the builders of
// their ARGV) and the done buckets are the part worker/internal/store
// (its doc.go lists the keys); these files alone call them, so they alone
// make a command on a job's keys (storedoor_test.go):
//
//	store.go              the records: create, status, cancel, a recipient's state
//	store_chunk.go        a chunk's reads and writes (chunk.lua, record.lua)
//	store_held.go         held markers, run marks, paced times, and the
//	                      groups waiting for their second (together.lua)
//	store_recipients.go   a page of a job's recipients
//	store_reset.go        the reset mark (raise.lua)
//
// The part holds, besides, a finished job's entry in its done bucket
// (done.go), the device outcomes, recorded as the providers answer
// (outcomes.go), the events the writes append to hush:events
// (events.go), the group commits of record.lua calls (scriptbatch.go),
// and how writes of acknowledged sends outlive a Redis outage
// (persist.go).

// DefaultJobRetention is how long a finished job's id answers duplicates
// and its status stays readable (HUSH_JOB_RETENTION); the done buckets
// (worker/internal/store/done.go) keep its entry that long.
const DefaultJobRetention = 24 * time.Hour

// jobStore reads and writes the job records.
type jobStore struct {
	rdb  redis.UniversalClient
	done store.DoneBuckets
	// records, when set (a Worker's store), runs record.lua calls in
	// group commits (store.ScriptBatcher); nil: each call is its own round trip.
	records *store.ScriptBatcher
	// held, when set (a Worker's store), writes held markers and
	// deferrals alone in the group commits of device outcomes (writeHeld);
	// nil: record.lua writes them.
	held *store.Recorder
	// events appends the final states' events of record.lua calls made
	// without a batcher (the batcher appends its own); nil: none.
	events *store.Events
	clock  func() time.Time // nil: time.Now (Options.Clock)
}

func newStore(rdb redis.UniversalClient, retention time.Duration) jobStore {
	_, single := rdb.(*redis.Client)
	return jobStore{rdb: rdb, done: store.DoneBuckets{Retention: retention, PerSlot: !single}}
}

// retiring are the keys and expiry of a script that may retire job id
// (record.lua, fanned.lua): the job's keys, the done bucket to write to
// and the job's exceptions (store.ExceptKey), which it keeps.
func (s jobStore) retiring(id string) (keys []string, expireAt int64) {
	into, at := s.done.Write(id, s.now())
	return append(store.JobKeys(id), into, store.ExceptKey(id)), at
}

// retired reads job id's done-hash entry: "" when it has none.
func (s jobStore) retired(ctx context.Context, id string) (string, error) {
	var cmds []*redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmds = store.QueueRetired(ctx, p, s.done, id, s.now())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("look up finished job %s: %w", id, err)
	}
	return store.RetiredOf(cmds), nil
}

// create writes the job record as the accepting client does: start.lua
// with the state set only when the record has none. dup reports that the
// id is another submission's: the job had finished and was retired
// (nothing was written), and not by the task of the submission r
// describes (finishedBy).
func (s jobStore) create(ctx context.Context, r store.RecordInfo, state string) (dup bool, err error) {
	c := s.startCallWith(r, state, true, nil)
	owner, _, st, err := c.result(ctx, store.StartScript.Run(ctx, s.rdb, c.keys, c.args...))
	if err != nil {
		return false, err
	}
	return st.retired && !finishedBy(owner, st, r), nil
}

// finishedBy reports whether start.lua's answer (owner, st) says the job
// retired after the submission r describes was accepted, by that
// submission's own task: a client enqueues the task first and writes the
// record after, and under load the task can deliver every recipient and
// retire the job in between. The job is then the caller's, accepted, not
// a duplicate. The done entry keeps the queue, the acceptance to the
// millisecond (which the submission's acceptance is truncated to,
// Client.prepare) and, for a job a batch task owned, that task's tag ("@"
// and store.TaskTag): of two batches submitting one id into one queue in the
// same millisecond, only the one whose task finished the job reads as its
// finisher. An entry without a tag (a job of its own task, or one written
// before entries had tags) is told by the queue and the millisecond alone,
// so two such submissions in one millisecond, the other finishing first,
// read as this one. Queue names never hold "@": they are a priority and a
// shard number (task.ShardOf).
func finishedBy(owner string, st *chunkStates, r store.RecordInfo) bool {
	if !st.retired || !st.acceptedAt.Equal(r.AcceptedAt.Truncate(time.Millisecond)) {
		return false
	}
	q, tag, tagged := strings.Cut(owner, "@")
	return q == r.Queue && (!tagged || tag == store.TaskTag(r.Task))
}

// exists reports whether job id has a live record: a job accepted and not
// finished. (A finished job's id is found by create, which Enqueue calls
// after enqueueing: a duplicate of a finished job costs one task that does
// nothing, and every other submission one command less.)
func (s jobStore) exists(ctx context.Context, id string) (bool, error) {
	n, err := s.rdb.Exists(ctx, store.JobKey(id)).Result()
	if err != nil {
		return false, fmt.Errorf("look up job %s: %w", id, err)
	}
	return n > 0, nil
}

// existAll looks up whether each of jobs ids has a live record (as
// exists does), in one round trip (per node on a cluster): an EXISTS
// answer each.
func (s jobStore) existAll(ctx context.Context, ids []string) []*redis.IntCmd {
	found := make([]*redis.IntCmd, len(ids))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, id := range ids {
			found[k] = p.Exists(ctx, store.JobKey(id))
		}
		return nil
	})
	return found
}

// finalize records a recipient's final state once (a record call of one
// entry), about naming it for its event; it reports whether this call
// recorded it.
func (s jobStore) finalize(ctx context.Context, id string, recipient int, state string, about Event, ttl time.Duration) (bool, error) {
	var r chunkRecord
	r.final(recipient, state, about)
	out, err := s.write(ctx, id, ttl, "", &r)
	if err != nil {
		return false, fmt.Errorf("record %s/%d as %s: %w", id, recipient, state, err)
	}
	return len(out) == 1 && out[0], nil
}

// hold counts a deferral of recipient i of job id and marks it held, its
// task waiting on queue (a record call of one held entry).
func (s jobStore) hold(ctx context.Context, id string, i int, queue string, ttl time.Duration) error {
	r := chunkRecord{deferrals: 1}
	r.held(i, queue)
	if _, err := s.write(ctx, id, ttl, "", &r); err != nil {
		return fmt.Errorf("count deferral of %s/%d: %w", id, i, err)
	}
	return nil
}

// appWaitSince marks job id's record, once, with now as when its
// deliveries began to wait for their app, and returns that instant. The
// record keeps its expiry (ttl only when it has none).
func (s jobStore) appWaitSince(ctx context.Context, id string, now time.Time, ttl time.Duration) (time.Time, error) {
	var get *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSetNX(ctx, store.JobKey(id), store.FieldAppWait, now.UnixMilli())
		p.ExpireNX(ctx, store.JobKey(id), ttl)
		get = p.HGet(ctx, store.JobKey(id), store.FieldAppWait)
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("mark %s waiting for its app: %w", id, err)
	}
	ms, err := strconv.ParseInt(get.Val(), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("job record %s: %s: %w", id, store.FieldAppWait, err)
	}
	return time.UnixMilli(ms), nil
}

// headOf reads store.QueueHead's answer: whether the job was cancelled, and
// whether it was retired. A record without its queue is looked up in the
// done hash (one more round trip, only then): when it is there, the job
// retired after (or before) the states were read, which then say nothing.
func (s jobStore) headOf(ctx context.Context, id string, hc *redis.SliceCmd) (cancelled, retired bool, err error) {
	vals, err := hc.Result()
	if err != nil {
		return false, false, err
	}
	if len(vals) != 2 {
		return false, false, fmt.Errorf("job record %s: unexpected reply %v", id, vals)
	}
	if vals[0] == nil {
		v, err := s.retired(ctx, id)
		if err != nil || v != "" {
			return false, v != "", err
		}
	}
	return vals[1] != nil, false, nil
}

// readCancelled reads job id's cancellation in a round trip of its own,
// answered as store.QueueCancelled's.
func (s jobStore) readCancelled(ctx context.Context, id string) *redis.StringCmd {
	return s.rdb.HGet(ctx, store.JobKey(id), store.FieldCancelled)
}

// cancelled is a job's cancellation as cancel.lua answers it.
type cancelled struct {
	at    time.Time
	first bool           // this call cancelled it
	state string         // the record's own state (store.JobQueued: the job task has not run)
	held  map[int]string // held recipient -> its marker: the queue and task it waits in (task.HeldMark)
}

// cancel marks job id cancelled at at (once) and lists its held
// deliveries; it wraps ErrNotFound for an unknown job.
func (s jobStore) cancel(ctx context.Context, id string, at time.Time) (cancelled, error) {
	vals, err := store.CancelScript.Run(ctx, s.rdb, store.JobKeys(id)[:1], store.CancelArgs(at)...).Slice()
	if err != nil {
		return cancelled{}, fmt.Errorf("cancel job %s: %w", id, err)
	}
	if len(vals) == 0 {
		return cancelled{}, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	var c cancelled
	first, _ := vals[0].(int64)
	c.first = first == 1
	if len(vals) < 3 || (len(vals)-3)%2 != 0 {
		return cancelled{}, fmt.Errorf("cancel job %s: unexpected reply %v", id, vals)
	}
	when, _ := vals[1].(string)
	c.at, _ = time.Parse(time.RFC3339Nano, when)
	c.state, _ = vals[2].(string)
	c.held = map[int]string{}
	for k := 3; k+1 < len(vals); k += 2 {
		f, _ := vals[k].(string)
		q, _ := vals[k+1].(string)
		if i, err := strconv.Atoi(strings.TrimPrefix(f, store.HeldPrefix)); err == nil {
			c.held[i] = q
		}
	}
	return c, nil
}

// JobStatus is the state of a job and its counts per delivery state
// (FinalStates, and pending: recipients without a final state yet), as
// GET /v1/notifications/{id} answers it.
type JobStatus = wire.JobStatus

// Job states reported by JobStatus beyond the record's own.
const (
	jobDone      = wire.StateDone
	jobCancelled = wire.StateCancelled
)

// ErrNotFound is returned for an unknown job id.
var ErrNotFound = errors.New("not found")

func (s jobStore) status(ctx context.Context, id string) (JobStatus, error) {
	var live *redis.MapStringStringCmd
	var done []*redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		live = p.HGetAll(ctx, store.JobKey(id))
		done = store.QueueRetired(ctx, p, s.done, id, s.now())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return JobStatus{}, fmt.Errorf("read job %s: %w", id, err)
	}
	m := live.Val()
	if m["queue"] == "" {
		if v := store.RetiredOf(done); v != "" {
			return store.CompactStatus(id, v)
		}
		return JobStatus{}, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	st := JobStatus{ID: id, App: m["app"], State: m["state"], Queue: m["queue"], Counts: map[string]int{}}
	st.AcceptedAt, _ = time.Parse(time.RFC3339Nano, m["accepted_at"])
	st.Deadline, _ = time.Parse(time.RFC3339Nano, m["deadline"])
	st.Recipients, _ = strconv.Atoi(m["recipients"])
	st.Deferrals, _ = strconv.Atoi(m["deferrals"])
	final := 0
	for _, f := range task.FinalStates() {
		n, _ := strconv.Atoi(m[f])
		st.Counts[f] = n
		final += n
	}
	st.Counts["pending"] = max(st.Recipients-final, 0)
	st.CancelledAt, _ = time.Parse(time.RFC3339Nano, m[store.FieldCancelled])
	switch {
	case !st.CancelledAt.IsZero():
		st.State = jobCancelled
	case st.State == store.JobFannedOut && final >= st.Recipients:
		st.State = jobDone
	}
	if st.State == jobDone || st.State == jobCancelled {
		st.Outcome = store.JobOutcome(st.Recipients, st.Counts)
	}
	return st, nil
}

// recipientState is what the job records say of one recipient.
type recipientState struct {
	final    string
	devices  []string
	attempts decide.Attempts
	// cancelled: the job was cancelled; readAt is when the read that said
	// so (or not) began, on the local clock.
	cancelled bool
	readAt    time.Time
}

// recipient reads recipient i's final state, device states and attempts
// (with, for a recipient of several devices, the attempts its delivered
// devices got the push under), and whether the job was cancelled, in one
// round trip.
func (s jobStore) recipient(ctx context.Context, id string, i, devices int) (recipientState, error) {
	var rc *redis.StringCmd
	var dc, hc, uc *redis.SliceCmd
	readAt := s.now()
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		rc = p.HGet(ctx, store.RecpKey(id), strconv.Itoa(i))
		dc = p.HMGet(ctx, store.DevKey(id), store.AppendRecipientFields(nil, i, devices)...)
		if devices > 1 {
			fields := make([]string, devices)
			for d := range devices {
				fields[d] = store.PushedField(store.DevField(i, d))
			}
			uc = p.HMGet(ctx, store.DevKey(id), fields...)
		}
		hc = store.QueueHead(ctx, p, id)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return recipientState{}, fmt.Errorf("read state of %s/%d: %w", id, i, err)
	}
	cancelled, retired, err := s.headOf(ctx, id, hc)
	if err != nil {
		return recipientState{}, fmt.Errorf("read state of %s/%d: %w", id, i, err)
	}
	if retired {
		return recipientState{final: store.StateRetired, readAt: readAt}, nil
	}
	vals := dc.Val()
	if len(vals) != devices+store.NAttemptFields {
		return recipientState{}, fmt.Errorf("read state of %s/%d: %d fields for %d devices", id, i, len(vals), devices)
	}
	st := recipientState{final: rc.Val(), devices: store.Strs(vals[:devices]), attempts: store.AttemptsOf(vals[devices:]),
		cancelled: cancelled, readAt: readAt}
	if uc != nil {
		st.attempts.PushedUnder = store.PushedUnder(st.devices, uc.Val())
	}
	return st, nil
}

// nextAttempt records that recipient i's attempt a.n ended and another
// follows (a transient failure when transient; a provider throttling at now
// when throttled; either is a refusal), calling no provider before
// retryAt (zero: at once), and returns the new history. It is written
// under its own context like device outcomes: the next attempt must book
// a slot of its own, and keep a provider's Retry-After, even when
// shutdown cancelled the task and another process runs it.
func (s jobStore) nextAttempt(ctx context.Context, id string, i int, a decide.Attempts, transient, throttled bool, now, retryAt time.Time, ttl time.Duration) (decide.Attempts, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.RecordTimeout)
	defer cancel()
	k, p := store.DevKey(id), strconv.Itoa(i)+"/"
	var nc, fc, rc *redis.IntCmd
	var tc *redis.StringCmd
	err := store.Persist(ctx, func(ctx context.Context) error {
		_, err := s.rdb.TxPipelined(ctx, func(pp redis.Pipeliner) error {
			nc = pp.HIncrBy(ctx, k, p+"a", 1)
			fc = pp.HIncrBy(ctx, k, p+"f", store.B2i(transient))
			rc = pp.HIncrBy(ctx, k, p+"r", store.B2i(transient || throttled))
			if throttled {
				pp.HSetNX(ctx, k, p+"t", now.UnixMilli())
			}
			if retryAt.After(now) {
				pp.HSet(ctx, k, p+"w", retryAt.UnixMilli())
			} else {
				pp.HDel(ctx, k, p+"w")
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
	out := decide.Attempts{N: int(nc.Val()), Failures: int(fc.Val()), Refusals: int(rc.Val())}
	if retryAt.After(now) {
		out.RetryAt = time.UnixMilli(retryAt.UnixMilli())
	}
	if ms, err := strconv.ParseInt(tc.Val(), 10, 64); err == nil {
		out.ThrottledSince = time.UnixMilli(ms)
	}
	return out, nil
}
