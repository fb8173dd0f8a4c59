package worker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker/internal/groupcommit"
	"github.com/hushpush/hush/worker/internal/store"
)

// Device outcomes are recorded here (recorder.write) as the providers
// answer: a device that has the push (or whose token is dead) is never sent
// to again, by any run of any task, once its answer is recorded. A
// recipient's final state is recorded afterwards, by record.lua, the one
// writer of recipients' outcomes (store.write; its calls are
// group-committed too, worker/internal/store/scriptbatch.go; store.go lists the job store's
// parts). The one exception is a folded
// answer (send.go, foldedAnswer): the delivered answer of the one device of
// a one-recipient chunk, written by that chunk's record.lua call, which
// follows it as closely. The window in which a push can be sent twice is
// therefore the time between the provider's answer and its write:
// store.RecordLinger plus one Redis round trip.
//
// Answers arriving within store.RecordLinger of each other share one write (a
// group commit, worker/internal/groupcommit): one pipeline with an HSET per job. The write runs under
// its own context, not the task's, so shutdown or a task timeout cancelling
// the task never loses an acknowledged send; it keeps trying while Redis
// is unreachable (store.Persist) for up to store.RecordTimeout. The caller waits for
// its write before it judges the recipient, and Worker.Run waits for every
// write under way before it returns.
//
// A token_invalid answer's event is appended to hush:events before the
// device state is written: a process that dies between the two sends the
// push again on its re-run, gets the same answer and emits the event again.
// Events are therefore at least once, never lost.

// deviceOutcome is one device's settled state to record, or, with key
// set, a field of another of its job's keys: a held recipient's marker in
// the job record (store.writeHeld).
type deviceOutcome struct {
	job   string
	field string // store.DevField(recipient, device)
	state string // task.Delivered or task.TokenInvalid
	// under is the attempt a delivered device's push went out under,
	// written beside its state (store.PushedField), for a recipient of several
	// devices; "": not written.
	under string
	ttl   time.Duration
	event *Event // emitted before the state is written; nil: none
	// key is the hash written instead of the job's device states (""
	// for those), and deferrals what to add to its "deferrals" field.
	key       string
	deferrals int
}

// recorder writes device outcomes in group commits.
type recorder struct {
	rdb    redis.UniversalClient
	events *store.Events
	group  *groupcommit.Group[[]deviceOutcome, struct{}]
}

func newRecorder(rdb redis.UniversalClient, ev *store.Events) *recorder {
	r := &recorder{rdb: rdb, events: ev}
	r.group = groupcommit.New(r.writeGroup, groupcommit.Options{Linger: store.RecordLinger, Timeout: store.RecordTimeout})
	return r
}

// record writes o durably (with whatever other outcomes arrive within the
// linger) and returns when it is written or has failed for good.
func (r *recorder) record(o deviceOutcome) error { return r.recordAll(o) }

// recordAll is record for several outcomes, written in one commit. It
// waits for the write whatever happens to the caller's task (see above).
func (r *recorder) recordAll(os ...deviceOutcome) error {
	_, err := r.group.Do(context.Background(), os)
	return err
}

// writeGroup writes one group commit's outcomes.
func (r *recorder) writeGroup(ctx context.Context, calls [][]deviceOutcome) ([]struct{}, error) {
	if err := r.write(ctx, slices.Concat(calls...)); err != nil {
		return nil, err
	}
	return make([]struct{}, len(calls)), nil
}

// write appends the outcomes' events, then writes their states: one
// pipeline each (Redis Cluster splits a pipeline by node and runs the parts
// concurrently, so the two cannot share one without losing their order).
func (r *recorder) write(ctx context.Context, outs []deviceOutcome) error {
	var evs []Event
	for _, o := range outs {
		if o.event != nil {
			evs = append(evs, *o.event)
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
		key := o.key
		if key == "" {
			key = store.DevKey(o.job)
		}
		kw := byKey[key]
		if kw == nil {
			kw = &keyWrite{}
			byKey[key] = kw
			order = append(order, key)
		}
		if o.field != "" {
			kw.fields = append(kw.fields, o.field, o.state)
		}
		if o.under != "" {
			kw.fields = append(kw.fields, store.PushedField(o.field), o.under)
		}
		kw.deferrals += o.deferrals
		kw.ttl = max(kw.ttl, o.ttl)
	}
	err := store.Persist(ctx, func(ctx context.Context) error {
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

// drain writes the outcomes waiting and waits for every write under way,
// or for ctx to end.
func (r *recorder) drain(ctx context.Context) error { return r.group.Drain(ctx) }
