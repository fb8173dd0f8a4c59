package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker/internal/groupcommit"
)

// Device outcomes are recorded here (Recorder.write) as the providers
// answer: a device that has the push (or whose token is dead) is never sent
// to again, by any run of any task, once its answer is recorded. A
// recipient's final state is recorded afterwards, by record.lua, the one
// writer of recipients' outcomes (the worker's jobStore.write; its calls
// are group-committed too, scriptbatch.go). The one exception is a folded
// answer (the worker's send.go, foldedAnswer): the delivered answer of the one device of
// a one-recipient chunk, written by that chunk's record.lua call, which
// follows it as closely. The window in which a push can be sent twice is
// therefore the time between the provider's answer and its write:
// RecordLinger plus one Redis round trip.
//
// Answers arriving within RecordLinger of each other share one write (a
// group commit, worker/internal/groupcommit): one pipeline with an HSET
// per job. The write runs under
// its own context, not the task's, so shutdown or a task timeout cancelling
// the task never loses an acknowledged send; it keeps trying while Redis
// is unreachable (Persist) for up to RecordTimeout. The caller waits for
// its write before it judges the recipient, and Worker.Run waits for every
// write under way before it returns.
//
// A token_invalid answer's event is appended to hush:events before the
// device state is written: a process that dies between the two sends the
// push again on its re-run, gets the same answer and emits the event again.
// Events are therefore at least once, never lost.

// DeviceOutcome is one device's settled state to record, or, with Key
// set, a field of another of its job's keys: a held recipient's marker in
// the job record (the worker's jobStore.writeHeld).
type DeviceOutcome struct {
	Job   string
	Field string // DevField(recipient, device)
	State string // task.Delivered or task.TokenInvalid
	// Under is the attempt a delivered device's push went out under,
	// written beside its state (PushedField), for a recipient of several
	// devices; "": not written.
	Under string
	TTL   time.Duration
	Event *Event // emitted before the state is written; nil: none
	// Key is the hash written instead of the job's device states (""
	// for those), and Deferrals what to add to its "deferrals" field.
	Key       string
	Deferrals int
}

// Recorder writes device outcomes in group commits.
type Recorder struct {
	rdb    redis.UniversalClient
	events *Events
	group  *groupcommit.Group[[]DeviceOutcome, struct{}]
}

// NewRecorder is a writer of device outcomes to rdb, appending their
// events through ev first.
func NewRecorder(rdb redis.UniversalClient, ev *Events) *Recorder {
	r := &Recorder{rdb: rdb, events: ev}
	r.group = groupcommit.New(r.writeGroup, groupcommit.Options{Linger: RecordLinger, Timeout: RecordTimeout})
	return r
}

// Record writes o durably (with whatever other outcomes arrive within the
// linger) and returns when it is written or has failed for good.
func (r *Recorder) Record(o DeviceOutcome) error { return r.RecordAll(o) }

// RecordAll is Record for several outcomes, written in one commit. It
// waits for the write whatever happens to the caller's task (see above).
func (r *Recorder) RecordAll(os ...DeviceOutcome) error {
	_, err := r.group.Do(context.Background(), os)
	return err
}

// writeGroup writes one group commit's outcomes.
func (r *Recorder) writeGroup(ctx context.Context, calls [][]DeviceOutcome) ([]struct{}, error) {
	if err := r.write(ctx, slices.Concat(calls...)); err != nil {
		return nil, err
	}
	return make([]struct{}, len(calls)), nil
}

// write appends the outcomes' events, then writes their states: one
// pipeline each (Redis Cluster splits a pipeline by node and runs the parts
// concurrently, so the two cannot share one without losing their order).
func (r *Recorder) write(ctx context.Context, outs []DeviceOutcome) error {
	var evs []Event
	for _, o := range outs {
		if o.Event != nil {
			evs = append(evs, *o.Event)
		}
	}
	r.events.EmitOrCount(ctx, evs)
	type keyWrite struct {
		fields    []any
		deferrals int
		ttl       time.Duration
	}
	byKey := map[string]*keyWrite{}
	var order []string
	for _, o := range outs {
		key := o.Key
		if key == "" {
			key = DevKey(o.Job)
		}
		kw := byKey[key]
		if kw == nil {
			kw = &keyWrite{}
			byKey[key] = kw
			order = append(order, key)
		}
		if o.Field != "" {
			kw.fields = append(kw.fields, o.Field, o.State)
		}
		if o.Under != "" {
			kw.fields = append(kw.fields, PushedField(o.Field), o.Under)
		}
		kw.deferrals += o.Deferrals
		kw.ttl = max(kw.ttl, o.TTL)
	}
	err := Persist(ctx, func(ctx context.Context) error {
		_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, key := range order {
				kw := byKey[key]
				if len(kw.fields) > 0 {
					p.HSet(ctx, key, kw.fields...)
				}
				if kw.deferrals > 0 {
					p.HIncrBy(ctx, key, "deferrals", int64(kw.deferrals))
				}
				p.PExpire(ctx, key, kw.ttl)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("record %d device outcomes: %w", len(outs), err)
	}
	return nil
}

// Drain writes the outcomes waiting and waits for every write under way,
// or for ctx to end.
func (r *Recorder) Drain(ctx context.Context) error { return r.group.Drain(ctx) }
