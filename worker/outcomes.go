package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Device outcomes are recorded here (recorder.write) as the providers
// answer: a device that has the push (or whose token is dead) is never sent
// to again, by any run of any task, once its answer is recorded. A
// recipient's final state is recorded afterwards, by record.lua (whose
// calls are group-committed too, scriptbatch.go) or finalize.lua
// (store.go lists the job store's parts). The one exception is a folded
// answer (send.go, foldedAnswer): the delivered answer of the one device of
// a one-recipient chunk, written by that chunk's record.lua call, which
// follows it as closely. The window in which a push can be sent twice is
// therefore the time between the provider's answer and its write:
// recordLinger plus one Redis round trip.
//
// Answers arriving within recordLinger of each other share one write (a
// group commit): one pipeline with an HSET per job. The write runs under
// its own context, not the task's, so shutdown or a task timeout cancelling
// the task never loses an acknowledged send; it keeps trying while Redis
// is unreachable (persist) for up to recordTimeout. The caller waits for
// its write before it judges the recipient, and Worker.Run waits for every
// write under way before it returns.
//
// A token_invalid answer's event is appended to hush:events before the
// device state is written: a process that dies between the two sends the
// push again on its re-run, gets the same answer and emits the event again.
// Events are therefore at least once, never lost.

// recordLinger is how long the first answer of a group commit waits for
// others to join it.
const recordLinger = 2 * time.Millisecond

// recordTimeout bounds one group commit, retries during a Redis outage
// included.
const recordTimeout = 30 * time.Second

// deviceOutcome is one device's settled state to record, or, with key
// set, a field of another of its job's keys: a held recipient's marker in
// the job record (held, recordHeld).
type deviceOutcome struct {
	job   string
	field string // devField(recipient, device)
	state string // stateDelivered or stateTokenInvalid
	ttl   time.Duration
	event *Event // emitted before the state is written; nil: none
	// key is the hash written instead of the job's device states (""
	// for those), and deferrals what to add to its "deferrals" field.
	key       string
	deferrals int
}

// recorder batches device outcomes into group commits.
type recorder struct {
	rdb    redis.UniversalClient
	events *events
	linger time.Duration

	mu   sync.Mutex
	cur  *commit // the commit being gathered, nil when none
	busy tracker // commits being gathered or written
}

// commit is one group commit.
type commit struct {
	outs []deviceOutcome
	done chan struct{}
	err  error
}

func newRecorder(rdb redis.UniversalClient, ev *events) *recorder {
	return &recorder{rdb: rdb, events: ev, linger: recordLinger}
}

// record writes o durably (with whatever other outcomes arrive within the
// linger) and returns when it is written or has failed for good.
func (r *recorder) record(o deviceOutcome) error { return r.recordAll(o) }

// recordAll is record for several outcomes, written in one commit.
func (r *recorder) recordAll(os ...deviceOutcome) error {
	r.mu.Lock()
	c := r.cur
	if c == nil {
		c = &commit{done: make(chan struct{})}
		r.cur = c
		r.busy.add()
		time.AfterFunc(r.linger, func() { r.flush(c) })
	}
	c.outs = append(c.outs, os...)
	r.mu.Unlock()
	<-c.done
	return c.err
}

// flush closes c to new outcomes and writes it.
func (r *recorder) flush(c *commit) {
	defer r.busy.done()
	r.mu.Lock()
	if r.cur == c {
		r.cur = nil
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	c.err = r.write(ctx, c.outs)
	close(c.done)
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
	if len(evs) > 0 {
		r.events.hook(evs)
		if err := persist(ctx, func(ctx context.Context) error { return r.events.emitAll(ctx, evs) }); err != nil {
			// The states are still written: a state lost would re-send a
			// push; an event lost is counted (hush_events_dropped_total).
			r.events.m.eventsDropped.WithLabelValues("stream").Add(float64(len(evs)))
		}
	}
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
			key = devKey(o.job)
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
		kw.deferrals += o.deferrals
		kw.ttl = max(kw.ttl, o.ttl)
	}
	err := persist(ctx, func(ctx context.Context) error {
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

// wait blocks until every commit under way is written, or timeout passes;
// it reports whether they all were.
func (r *recorder) wait(timeout time.Duration) bool { return r.busy.wait(timeout) }

// tracker counts work under way and lets a caller wait for none.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

func (t *tracker) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n--; t.n == 0 {
		close(t.idle)
		t.idle = nil
	}
}

// wait blocks until nothing is under way or timeout passes; it reports
// whether nothing is.
func (t *tracker) wait(timeout time.Duration) bool {
	t.mu.Lock()
	idle := t.idle
	t.mu.Unlock()
	if idle == nil {
		return true
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-idle:
		return true
	case <-timer.C:
		return false
	}
}

// hook hands events to the webhook, if any (it never blocks).
func (ev *events) hook(es []Event) {
	if ev.webhook == nil {
		return
	}
	for _, e := range es {
		if b, err := json.Marshal(e); err == nil {
			ev.webhook.enqueue(b)
		}
	}
}

// emitAll appends events to the stream in one round trip.
func (ev *events) emitAll(ctx context.Context, es []Event) error {
	_, err := ev.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range es {
			b, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("encode %s event: %w", e.Type, err)
			}
			p.XAdd(ctx, &redis.XAddArgs{Stream: EventsStream, MaxLen: ev.maxLen, Approx: true, Values: []any{"type", e.Type, "event", b}})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append %d events to %s: %w", len(es), EventsStream, err)
	}
	return nil
}
