package worker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/mutant"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// start writes the job record's fixed fields unless they are there, sets
// the state when this submission owns the id (fanned_out at once when done
// is set: the job task delivers every recipient itself) and reads the
// fan-out cursor and, when first is not nil, the states of first's
// recipients (as chunkState), all in one round trip (start.lua). It reports
// the queue that owns the id.
func (s jobStore) start(ctx context.Context, r store.RecordInfo, done bool, first *task.Chunk) (owner string, cursor int, st *chunkStates, err error) {
	c := s.startCall(r, done, first)
	return c.result(ctx, store.StartScript.Run(ctx, s.rdb, c.keys, c.args...))
}

// startCall is one call of start.lua, to run on its own (store.start) or
// queued in someone else's pipeline (queue, then result).
type startCall struct {
	s      jobStore
	id     string
	keys   []string
	args   []any
	first  *task.Chunk
	cmd    *redis.Cmd
	readAt time.Time // when the call was made or queued
}

func (s jobStore) startCall(r store.RecordInfo, done bool, first *task.Chunk) *startCall {
	state := store.JobFanning
	if done {
		state = store.JobFannedOut
	}
	return s.startCallWith(r, state, false, first)
}

// startCallWith is a call of start.lua setting state (only when the record
// has none when keep is set).
func (s jobStore) startCallWith(r store.RecordInfo, state string, keep bool, first *task.Chunk) *startCall {
	now := s.now()
	args := store.StartArgs(r, state, keep, task.TTLFor(r.Retain, r.Deadline), first)
	keys := append(store.JobKeys(r.ID), s.done.Keys(r.ID, now)...)
	return &startCall{s: s, id: r.ID, keys: keys, args: args, first: first, readAt: now}
}

// queue adds the call to p, to be read with result once p has run.
func (c *startCall) queue(ctx context.Context, p redis.Pipeliner) {
	c.cmd = store.StartScript.EvalSha(ctx, p, c.keys, c.args...)
}

// startAll makes calls in one round trip; each answers by its result.
func (s jobStore) startAll(ctx context.Context, calls []*startCall) {
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range calls {
			c.queue(ctx, p)
		}
		return nil
	})
}

// result reads the call's answer from cmd (the queued one when nil). A
// queued call that found the script missing runs again on its own.
func (c *startCall) result(ctx context.Context, cmd *redis.Cmd) (owner string, cursor int, st *chunkStates, err error) {
	if cmd == nil {
		if cmd = c.cmd; cmd == nil {
			return "", 0, nil, fmt.Errorf("write job record %s: the queued call did not run", c.id)
		}
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			cmd = store.StartScript.Run(ctx, c.s.rdb, c.keys, c.args...)
		}
	}
	vals, err := cmd.Slice()
	if err != nil {
		return "", 0, nil, fmt.Errorf("write job record %s: %w", c.id, err)
	}
	if len(vals) < 4 {
		return "", 0, nil, fmt.Errorf("write job record %s: unexpected reply %v", c.id, vals)
	}
	owner, _ = vals[0].(string)
	cur, _ := vals[1].(string)
	cursor, _ = strconv.Atoi(cur)
	cancelledAt, _ := vals[2].(string)
	if vals[3] == "1" {
		st = retiredStates(c.first, c.readAt)
		if len(vals) > 4 {
			at, _ := vals[4].(string)
			st.acceptedAt = store.MsTime(at)
		}
		return owner, cursor, st, nil
	}
	if len(vals) < 5 {
		return "", 0, nil, fmt.Errorf("write job record %s: unexpected reply %v", c.id, vals)
	}
	st = &chunkStates{}
	if c.first != nil {
		if st, err = statesOf(c.first, vals[5:]); err != nil {
			return "", 0, nil, fmt.Errorf("write job record %s: %w", c.id, err)
		}
	}
	st.cancelled, st.readAt, st.fresh = cancelledAt != "", c.readAt, vals[4] == "1"
	return owner, cursor, st, nil
}

// chunkStates are the recorded states of a chunk's recipients.
type chunkStates struct {
	finals   []string          // per recipient, "" for none
	devices  [][]string        // per recipient and device, "" for none
	attempts []decide.Attempts // per recipient
	// holds are the recipients' held markers (task.HeldMark), "" for none; nil
	// for a retired job's states.
	holds []string
	// group: the chunk holds deferred recipients back into held tasks: a
	// chunk task of this version's kinds (TypeGroupingChunk, task.TypeRereadingChunk),
	// or a job task's own chunk of a job of several recipients.
	group bool
	// cancelled: the job was cancelled; readAt is when the read that said
	// so (or not) began, on the local clock.
	cancelled bool
	readAt    time.Time
	// first: a held task's first run (nothing read: nothing was sent).
	// resetMark: on a first run, the reset mark read with the states
	// (resetmark.go), Unix ms on the limiter's clock; 0 for none.
	first     bool
	resetMark int64
	// handed: the run handed a recipient to a delivery task (set by
	// deliverChunk).
	handed bool
	// retired: the job finished and its records were retired (worker/internal/store/done.go);
	// every recipient's final state reads store.StateRetired. acceptedAt is
	// then the acceptance its done entry keeps (start.lua's answer only).
	retired    bool
	acceptedAt time.Time
	// fresh (start.lua's answer): the job's task had not run before, so
	// nothing of the job was sent, and the chunk tasks it creates are
	// hush:grouping-chunk ones, which skip their reads on a first run.
	fresh bool
}

// retiredStates are the states of c's recipients (none when c is nil)
// once their job has retired.
func retiredStates(c *task.Chunk, readAt time.Time) *chunkStates {
	st := &chunkStates{retired: true, readAt: readAt}
	if c != nil {
		n := len(c.Recipients)
		st.finals, st.devices, st.attempts = make([]string, n), make([][]string, n), make([]decide.Attempts, n)
		for i, r := range c.Recipients {
			st.finals[i], st.devices[i] = store.StateRetired, make([]string, len(r.Devices))
		}
	}
	return st
}

// statesOf reads a chunk's states from vals: its recipients' final states,
// then their held markers, then per recipient its devices' states and its
// attempt fields (store.AppendRecipientFields).
func statesOf(c *task.Chunk, vals []any) (*chunkStates, error) {
	n := len(c.Recipients)
	if len(vals) < n {
		return nil, fmt.Errorf("%d states for %d recipients", len(vals), n)
	}
	st := &chunkStates{finals: make([]string, n), devices: make([][]string, n), attempts: make([]decide.Attempts, n)}
	for i := range n {
		st.finals[i], _ = vals[i].(string)
	}
	vals = vals[n:]
	if len(vals) < n {
		return nil, fmt.Errorf("%d held markers for %d recipients", len(vals), n)
	}
	st.holds = store.Strs(vals[:n])
	vals = vals[n:]
	for i, r := range c.Recipients {
		nd := len(r.Devices)
		if len(vals) < nd+store.NAttemptFields {
			return nil, fmt.Errorf("too few device states for %d recipients", n)
		}
		st.devices[i] = store.Strs(vals[:nd])
		st.attempts[i] = store.AttemptsOf(vals[nd : nd+store.NAttemptFields])
		vals = vals[nd+store.NAttemptFields:]
	}
	return st, nil
}

// chunkState marks a chunk task's run and reads the final state of the
// chunk's recipients, their held markers and the state of each of their
// devices (chunk.lua). A marked chunk task's (hush:grouping-chunk,
// hush:held, or hush:marked-chunk) first run, which
// finds no mark, reads nothing, in one round trip; its re-runs read in a
// second one. An unmarked task's run (hush:rereading-chunk, hush:chunk)
// reads always, in one.
//
// A held task's read takes the reset mark too (resetmark.go), in the same
// round trip, when its first run might take its slots from its payload.
func (s jobStore) chunkState(ctx context.Context, c *task.Chunk, marked bool) (*chunkStates, error) {
	readAt := s.now()
	if !c.Held() || !marked || len(c.Slots) == 0 || c.Content.CollapseKey != "" {
		reply, err := s.chunkRead(ctx, c, !marked)
		return s.statesFrom(ctx, c, marked, readAt, reply, err)
	}
	var read *redis.Cmd
	var mark *redis.StringCmd
	// Each command's error is its own (read below).
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		read = store.ChunkScript.EvalSha(ctx, p, store.JobKeys(c.Job)[:3], store.ChunkArgs(c, false, nil, nil)...)
		mark = p.Get(ctx, store.ResetMarkKey(c.Name()))
		return nil
	})
	reply, err := read.Slice()
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		reply, err = s.chunkRead(ctx, c, false)
	}
	st, err := s.statesFrom(ctx, c, marked, readAt, reply, err)
	if st != nil && st.first {
		st.resetMark = store.ResetMarkOf(mark)
	}
	return st, err
}

// waitingJobsStates reads the states of the members of hush:waiting-jobs
// groups (chunks of one recipient, each of its own job; c.group names its
// group's task id), one group or a second's many (waitingsecond.go). A group's
// first run finds no run mark (store.HeldRunKey, set in the same round trip):
// its members are fresh and its own (waitingjobs.go), and it reads only their
// jobs' cancellation. A re-run reads each member's states with chunk.lua,
// one round trip each.
func (s jobStore) waitingJobsStates(ctx context.Context, cs []*task.Chunk) ([]*chunkStates, []error, error) {
	readAt := s.now()
	sets := map[string]*redis.BoolCmd{}
	heads := make([]*redis.SliceCmd, len(cs))
	var mark *redis.StringCmd
	cmds, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		mark = p.Get(ctx, store.ResetMarkKey(cs[0].Group))
		for i, c := range cs {
			if sets[c.Group] == nil {
				sets[c.Group] = p.SetNX(ctx, store.HeldRunKey(c.Group), 1, task.RecordTTL)
			}
			heads[i] = store.QueueHead(ctx, p, c.Job)
		}
		return nil
	})
	// The mark's error is its own (store.ResetMarkOf).
	for _, cmd := range cmds[1:] {
		if err := cmd.Err(); err != nil {
			return nil, nil, fmt.Errorf("read the states of %d held jobs: %w", len(cs), err)
		}
	}
	at := store.ResetMarkOf(mark)
	sts, errs := make([]*chunkStates, len(cs)), make([]error, len(cs))
	for i, c := range cs {
		if sets[c.Group].Val() {
			head, _ := heads[i].Result()
			if len(head) != 2 {
				errs[i] = fmt.Errorf("read the states of %s: unexpected reply %v", c.Job, head)
				continue
			}
			sts[i], errs[i] = s.statesFrom(ctx, c, true, readAt, []any{head[0], head[1], int64(1)}, nil)
			if sts[i] != nil && sts[i].first {
				sts[i].resetMark = at
			}
			continue
		}
		at := s.now()
		reply, err := s.chunkRead(ctx, c, true)
		sts[i], errs[i] = s.statesFrom(ctx, c, false, at, reply, err)
	}
	return sts, errs, nil
}

// chunkRead runs chunk.lua for c; always: read on a first run too, so send
// the fields to read.
func (s jobStore) chunkRead(ctx context.Context, c *task.Chunk, always bool) ([]any, error) {
	var rf, df []string
	if always {
		rf = make([]string, len(c.Recipients))
		for i, r := range c.Recipients {
			rf[i] = strconv.Itoa(c.Index(i))
			df = store.AppendRecipientFields(df, c.Index(i), len(r.Devices))
		}
	}
	return store.ChunkScript.Run(ctx, s.rdb, store.JobKeys(c.Job)[:3], store.ChunkArgs(c, always, rf, df)...).Slice()
}

// statesFrom reads c's states from chunk.lua's first reply (made at
// readAt, without its fields when marked), reading again with the fields
// when the reply says a marked chunk's run is a re-run.
func (s jobStore) statesFrom(ctx context.Context, c *task.Chunk, marked bool, readAt time.Time, reply []any, err error) (*chunkStates, error) {
	if err == nil && marked && len(reply) == 3 && reply[2] == int64(0) {
		// A re-run (the mark was there). The fields went only to it:
		// sending them costs Redis about as much as reading them.
		readAt = s.now()
		reply, err = s.chunkRead(ctx, c, true)
	}
	if err != nil {
		return nil, fmt.Errorf("read the states of %s: %w", c.Name(), err)
	}
	if len(reply) < 3 {
		return nil, fmt.Errorf("read the states of %s: unexpected reply %v", c.Name(), reply)
	}
	hc := redis.NewSliceCmd(ctx)
	hc.SetVal(reply[:2])
	cancelled, retired, err := s.headOf(ctx, c.Job, hc)
	if err != nil {
		return nil, fmt.Errorf("read the states of %s: %w", c.Name(), err)
	}
	if retired {
		return retiredStates(c, readAt), nil
	}
	vals := reply[3:]
	none, _ := reply[2].(int64)
	if none == 1 {
		n := 2 * len(c.Recipients) // nothing sent yet: every field unset
		for _, r := range c.Recipients {
			n += len(r.Devices) + store.NAttemptFields
		}
		vals = make([]any, n)
	}
	st, err := statesOf(c, vals)
	if err != nil {
		return nil, fmt.Errorf("read the states of %s: %w", c.Name(), err)
	}
	if none == 1 && c.Held() {
		// A held task's first run: its chunk recorded every recipient held
		// by it before creating it, and nothing but this task has run for
		// them since (held.go).
		for i := range st.holds {
			st.holds[i] = task.HeldMark("", c.Name())
		}
		st.first = true
	}
	st.cancelled, st.readAt = cancelled, readAt
	return st, nil
}

// chunkRecord is what one chunk writes when its sends are done.
type chunkRecord struct {
	entries   []any // recipient index, final state ("": held), queue or failure reason triples
	deferrals int
	// folded is a device answer the record call writes too (record.lua's
	// dev_field), nil or not pending for none.
	folded *foldedAnswer
	// events are the final states' events (store.FinalEvent), appended before
	// the states are written (write).
	events []Event
}

// final records recipient's final state, about naming its job, app, user
// and time (and a failure's reason) for its event.
func (r *chunkRecord) final(recipient int, state string, about Event) {
	r.entries = append(r.entries, recipient, state, exceptReason(state, about.Reason))
	if e, ok := store.FinalEvent(state, about); ok {
		r.events = append(r.events, e)
	}
}

// exceptReason is what the job's exceptions keep of a final state's
// reason (store.ExceptKey): a failure's, clipped as its event's; nothing for
// another state.
func exceptReason(state, reason string) string {
	if state != task.Failed || mutant.On("reasonLost") {
		return ""
	}
	return store.Clip(reason, store.MaxEventReason)
}

// held records that recipient's delivery task waits on queue.
func (r *chunkRecord) held(recipient int, queue string) {
	r.entries = append(r.entries, recipient, "", queue)
}

// record writes a chunk's outcomes (record.lua) and reports, per entry,
// whether this call recorded its final state.
func (s jobStore) record(ctx context.Context, c *task.Chunk, r *chunkRecord) ([]bool, error) {
	if len(r.entries) == 0 && r.deferrals == 0 {
		return nil, nil
	}
	out, err := s.write(ctx, c.Job, c.TTL(), store.RecordRange(c, r.entries), r)
	if err != nil {
		return nil, fmt.Errorf("record the outcomes of %s: %w", c.Name(), err)
	}
	return out, nil
}

// write is the one writer of recipients' outcomes: every final state, held
// marker and deferral of job id is written here, in one of two ways. The
// final states' events are appended to hush:events first, in the same
// group commit (store.ScriptBatcher): a process that dies between the two
// writes them again on its re-run, with the same ids, so an event is
// never lost.
// Held markers and deferrals alone (no final state, no folded answer) are
// plain commands in the group commits of device outcomes (writeHeld);
// everything else is a record.lua call, group committed when the store has
// a batcher. It reports, per entry of r, whether this call recorded its
// final state. It keeps trying while Redis is unreachable (store.Persist): the
// outcomes it records follow sends the providers may already have
// acknowledged.
func (s jobStore) write(ctx context.Context, id string, ttl time.Duration, rng string, r *chunkRecord) ([]bool, error) {
	if s.held != nil && (r.folded == nil || !r.folded.pending) && r.heldOnly() {
		return s.writeHeld(id, ttl, r)
	}
	// Device states were recorded as the answers came (worker/internal/store/outcomes.go), but
	// for a folded one (foldedAnswer).
	keys, at := s.retiring(id)
	dfield, dstate := "", ""
	if f := r.folded; f != nil && f.pending {
		dfield, dstate = f.o.Field, f.o.State
	}
	args := store.RecordArgs(ttl, r.deferrals, at, dfield, dstate, rng, r.entries)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.RecordTimeout)
	defer cancel()
	var vals []int64
	err := store.Persist(ctx, func(ctx context.Context) error {
		var err error
		if s.records != nil {
			vals, err = s.records.Run(ctx, keys, r.events, args...).Int64Slice()
		} else {
			s.events.EmitOrCount(ctx, r.events)
			vals, err = store.RecordScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(vals))
	for i, v := range vals {
		out[i] = v == 1
	}
	return out, nil
}

// writeHeld writes r, held recipients and deferrals alone, with plain
// commands in the group commits of device outcomes (store.Recorder), so the
// chunks of a batch's single-recipient jobs held back together share a
// round trip with each other and with device outcomes. A held recipient's
// job has a recipient without a final state, so it has not retired, and
// record.lua's reads (is the record there, does this call finish the job)
// have nothing to find. The TTL is set as record.lua sets it, so a record
// that its TTL removed meanwhile (a job accepted more than the retention
// ago) comes back only for that long.
func (s jobStore) writeHeld(id string, ttl time.Duration, r *chunkRecord) ([]bool, error) {
	outs := []store.DeviceOutcome{{Job: id, Key: store.JobKey(id), Deferrals: r.deferrals, TTL: ttl}}
	for k := 0; k+2 < len(r.entries); k += 3 {
		outs = append(outs, store.DeviceOutcome{Job: id, Key: store.JobKey(id), TTL: ttl,
			Field: store.HeldPrefix + strconv.Itoa(r.entries[k].(int)), State: r.entries[k+2].(string)})
	}
	if err := s.held.RecordAll(outs...); err != nil {
		return nil, err
	}
	return make([]bool, len(r.entries)/3), nil
}

// heldOnly reports whether r records held recipients (and deferrals)
// alone: no final state, so its job cannot finish here.
func (r *chunkRecord) heldOnly() bool {
	for k := 1; k < len(r.entries); k += 3 {
		if r.entries[k].(string) != "" {
			return false
		}
	}
	return true
}

// fannedOut marks a job's every chunk task created.
func (s jobStore) fannedOut(ctx context.Context, id string, cursor int) error {
	keys, at := s.retiring(id)
	if err := store.FannedScript.Run(ctx, s.rdb, keys, store.FannedArgs(cursor, at)...).Err(); err != nil {
		return fmt.Errorf("set state of %s: %w", id, err)
	}
	return nil
}
