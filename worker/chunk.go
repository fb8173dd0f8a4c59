package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"golang.org/x/sync/semaphore"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/throttle"
)

// chunkSize is the most recipients one chunk delivers: one limiter round
// trip, one read and one write of the job's records for all of them.
const chunkSize = 100

// maxWave is the most recipients of a chunk booked and sent together.
const maxWave = 25

// chunk is the payload of a hush:chunk task (and what a job task delivers
// itself): recipients [From, From+len(Recipients)) of a job.
type chunk struct {
	Job        string              `json:"job"`
	From       int                 `json:"from"`
	Recipients []payload.Recipient `json:"recipients"`
	Content    payload.Content     `json:"content"`
	Priority   payload.Priority    `json:"priority"`
	// Deadline is when the deliveries expire; zero: never.
	Deadline   time.Time `json:"deadline,omitzero"`
	AcceptedAt time.Time `json:"accepted_at"`
}

func (c *chunk) name() string { return c.Job + "/c" + strconv.Itoa(c.From/chunkSize) }

// delivery is the chunk's i-th recipient as a delivery.
func (c *chunk) delivery(i int) delivery {
	r := c.Recipients[i]
	return delivery{
		Job: c.Job, Index: c.From + i, UserID: r.UserID, Devices: r.Devices,
		Content: c.Content, Priority: c.Priority, Deadline: c.Deadline, AcceptedAt: c.AcceptedAt,
	}
}

// expired reports whether the chunk's deliveries are past their deadline at
// t.
func (c *chunk) expired(t time.Time) bool { return !c.Deadline.IsZero() && !t.Before(c.Deadline) }

func chunkOf(job *payload.Job, from int) *chunk {
	return &chunk{
		Job: job.ID, From: from, Recipients: job.Recipients[from:min(from+chunkSize, len(job.Recipients))],
		Content: job.Content, Priority: job.Priority.Effective(), Deadline: job.Deadline(), AcceptedAt: job.AcceptedAt,
	}
}

func (w *Worker) handleChunk(ctx context.Context, t *asynq.Task) (err error) {
	w.pool.Run(func() { err = w.chunkTask(ctx, t) })
	return err
}

func (w *Worker) chunkTask(ctx context.Context, t *asynq.Task) error {
	var c chunk
	if err := json.Unmarshal(t.Payload(), &c); err != nil {
		return fmt.Errorf("undecodable chunk payload: %w: %w", err, asynq.SkipRetry)
	}
	if c.Job == "" || c.From < 0 || len(c.Recipients) == 0 {
		return fmt.Errorf("invalid chunk payload (job %q, from %d, %d recipients): %w", c.Job, c.From, len(c.Recipients), asynq.SkipRetry)
	}
	return w.deliverChunk(ctx, &c, nil, nil)
}

func (w *Worker) enqueueChunk(ctx context.Context, c *chunk) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode chunk %s: %w", c.name(), err)
	}
	_, err = w.client.aq.EnqueueContext(ctx, asynq.NewTask(payload.TypeChunk, b),
		asynq.TaskID(c.name()), asynq.Queue(shardQueue(string(c.Priority), c.name(), w.shards)),
		asynq.MaxRetry(jobMaxRetry), asynq.Timeout(deliveryTimeout))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue chunk %s: %w", c.name(), err)
	}
	return nil
}

// wavePermits are the send permits (of w.sends) a wave still holds, one per
// recipient.
type wavePermits struct {
	sem  *semaphore.Weighted
	held atomic.Int64
}

// release gives n of the wave's permits back.
func (p *wavePermits) release(n int64) {
	if n > 0 {
		p.held.Add(-n)
		p.sem.Release(n)
	}
}

// releaseAll gives back every permit the wave still holds.
func (p *wavePermits) releaseAll() { p.release(p.held.Swap(0)) }

// handoff is a recipient the chunk leaves to a per-recipient delivery task.
type handoff struct {
	i     int
	delay time.Duration
	// attempts, failed: see delivery.
	attempts int
	failed   string
}

// deliverChunk delivers a chunk in waves of up to w.wave recipients: each
// wave takes that many of the worker's send permits (w.sends, Concurrency
// of them: as many provider calls at once as per-recipient tasks would
// make), books its recipients in one limiter round trip and sends those
// allowed now at once, concurrently, so every push reaches the provider
// right after its booking. The outcomes of the whole chunk are recorded in
// one round trip. Every other recipient (held back by the limiter, booked
// by an earlier run, late for its slot, or not delivered to every device)
// becomes an ordinary hush:delivery task (task id "<job>/<index>"), so
// deferral, rebooking, expiry, retries and per-device records stay where
// they are for one recipient. Re-runs are idempotent: final recipients and
// delivered devices are skipped, and a recipient booked by an earlier run
// is handed to its delivery task.
// st, when not nil, are the chunk's states already read; pre, when not
// nil, is the first wave already booked (singleJob).
func (w *Worker) deliverChunk(ctx context.Context, c *chunk, st *chunkStates, pre *booking) error {
	if st == nil {
		var err error
		if st, err = w.store.chunkState(ctx, c); err != nil {
			return err
		}
	}
	finals, devs := st.finals, st.devices
	var handoffs []handoff
	var rec chunkRecord
	var todo []int
	now := time.Now()
	for i := range c.Recipients {
		switch {
		case finals[i] != "":
		case c.expired(now):
			handoffs = append(handoffs, handoff{i: i}) // dropped there
		default:
			todo = append(todo, i)
		}
	}
	for len(todo) > 0 && ctx.Err() == nil {
		wave := todo[:min(w.wave, len(todo))]
		todo = todo[len(wave):]
		booked := pre
		pre = nil
		if booked == nil || !slices.Equal(booked.idx, wave) {
			// Not the wave booked ahead (its recipient expired since): the
			// booking is handed over with the recipient, found existing.
			booked = nil
			if err := w.sends.Acquire(ctx, int64(len(wave))); err != nil {
				break // shutdown: handled below
			}
		}
		p := &wavePermits{sem: w.sends}
		if booked != nil {
			p = booked.permits
		} else {
			p.held.Store(int64(len(wave)))
		}
		hs, err := w.deliverWave(ctx, c, wave, devs, &rec, p, booked)
		p.releaseAll()
		handoffs = append(handoffs, hs...)
		if err != nil {
			// Record what was settled before giving up on the chunk.
			if _, rerr := w.store.record(ctx, c, &rec); rerr != nil {
				w.log.Warn("chunk outcomes not recorded", "chunk", c.name(), "err", rerr)
			}
			return err
		}
	}
	recorded, err := w.store.record(ctx, c, &rec)
	if err != nil {
		return err
	}
	for k := 1; k < len(rec.finals); k += 2 {
		if recorded[k/2] {
			w.m.recipients.WithLabelValues(rec.finals[k].(string)).Inc()
		}
	}
	if err := ctx.Err(); err != nil {
		// Shutdown interrupted the chunk: what was settled is recorded; the
		// chunk goes back to its queue and hands the rest over next time.
		return fmt.Errorf("chunk %s interrupted: %w", c.name(), err)
	}
	for _, h := range handoffs {
		d := c.delivery(h.i)
		d.Attempts, d.Failed = h.attempts, h.failed
		if err := w.enqueueDelivery(ctx, &d, h.delay); err != nil {
			return err
		}
	}
	return nil
}

// booking is a wave booked ahead, with the permits taken for it.
type booking struct {
	idx     []int // the recipients booked
	res     []throttle.Reservation
	err     error
	mid     time.Time // the middle of the booking's round trip
	permits *wavePermits
}

// deliverWave books (unless booked is not nil) and sends recipients idx of
// c; it adds their outcomes to rec and returns the recipients left to
// delivery tasks.
func (w *Worker) deliverWave(ctx context.Context, c *chunk, idx []int, devs [][]string, rec *chunkRecord, p *wavePermits, booked *booking) ([]handoff, error) {
	var handoffs []handoff
	slots := make([]time.Time, len(c.Recipients)) // zero: bypass
	var sendNow []int
	if w.bypass[c.Priority] {
		w.m.limiter.WithLabelValues("bypass").Add(float64(len(idx)))
		sendNow = idx
	} else {
		reqs := make([]throttle.Request, len(idx))
		for k, i := range idx {
			reqs[k] = throttle.Request{User: c.Recipients[i].UserID, Member: c.Job + "/" + strconv.Itoa(c.From+i)}
		}
		var res []throttle.Reservation
		var err error
		var mid time.Time
		if booked != nil {
			res, err, mid = booked.res, booked.err, booked.mid
		} else {
			asked := time.Now()
			res, err = w.reserveBatch(ctx, reqs)
			mid = asked.Add(time.Since(asked) / 2)
		}
		if len(res) != len(reqs) {
			if err == nil {
				err = fmt.Errorf("%d answers for %d requests", len(res), len(reqs))
			}
			return nil, fmt.Errorf("limiter reserve for %s: %w", c.name(), err)
		}
		for k, i := range idx {
			r := res[k]
			switch {
			case r.Now.IsZero() || r.Existing:
				// Failed, or booked by an earlier run: the delivery task
				// books again and knows what to do with a late slot.
				handoffs = append(handoffs, handoff{i: i})
			case !c.Deadline.IsZero() && !mid.Add(r.Wait).Before(c.Deadline):
				handoffs = append(handoffs, handoff{i: i}) // dropped there
			case r.Wait <= 0:
				w.m.limiter.WithLabelValues("allowed").Inc()
				slots[i] = mid
				sendNow = append(sendNow, i)
			case r.Wait > maxInlineWait:
				w.m.deferral.Observe(r.Wait.Seconds())
				w.m.limiter.WithLabelValues("deferred").Inc()
				rec.deferrals++
				handoffs = append(handoffs, handoff{i: i, delay: deferDelay(r.Wait)})
			default:
				// Near: the delivery task waits for it in place.
				w.m.deferral.Observe(r.Wait.Seconds())
				handoffs = append(handoffs, handoff{i: i})
			}
		}
	}
	// The permits of the recipients not sent now go back at once, the
	// others' as each recipient's sends end, so the next wave need not wait
	// for this one's slowest answer.
	p.release(int64(len(idx) - len(sendNow)))
	results := w.sendChunk(ctx, c, sendNow, slots, devs, p)
	for _, i := range sendNow {
		h, final := w.outcome(ctx, c, i, devs[i], results[i], rec)
		if final != "" {
			rec.final(c.From+i, final)
		} else if h != nil {
			handoffs = append(handoffs, *h)
		}
	}
	return handoffs, nil
}

// reserveBatch books reqs in one round trip when the limiter can, else one
// by one.
func (w *Worker) reserveBatch(ctx context.Context, reqs []throttle.Request) ([]throttle.Reservation, error) {
	if b, ok := w.limiter.(BatchLimiter); ok {
		return b.ReserveBatch(ctx, reqs)
	}
	out := make([]throttle.Reservation, len(reqs))
	var errs []error
	for i, q := range reqs {
		r, err := w.limiter.Reserve(ctx, q.User, q.Member)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[i] = r
	}
	return out, errors.Join(errs...)
}

// sendChunk sends recipients idx (all devices not yet settled) concurrently
// and returns each recipient's results by device (nil: not sent). A
// recipient that would reach the providers more than lateRebook after its
// slot is not sent (results[i] stays nil).
func (w *Worker) sendChunk(ctx context.Context, c *chunk, idx []int, slots []time.Time, devs [][]string, p *wavePermits) [][]*providers.Result {
	results := make([][]*providers.Result, len(c.Recipients))
	var calls []func()
	for _, i := range idx {
		d := c.delivery(i)
		pending := 0
		for j := range d.Devices {
			if devs[i][j] == "" {
				pending++
			}
		}
		if pending == 0 {
			p.release(1)
			continue
		}
		results[i] = make([]*providers.Result, len(d.Devices))
		left := new(atomic.Int32)
		left.Store(int32(pending))
		for j := range d.Devices {
			if devs[i][j] != "" {
				continue
			}
			calls = append(calls, func() {
				defer func() {
					if left.Add(-1) == 0 {
						p.release(1)
					}
				}()
				// Checked right before the call: a slot missed by more than
				// lateRebook goes back to the limiter (the recipient's
				// delivery task rebooks it).
				if !slots[i].IsZero() && time.Since(slots[i]) > lateRebook {
					return
				}
				r := w.sendOne(ctx, &d, j)
				results[i][j] = &r
			})
		}
	}
	w.pool.all(calls)
	return results
}

// outcome turns recipient i's answers into device records and either a
// final state or a hand-off to its delivery task.
func (w *Worker) outcome(ctx context.Context, c *chunk, i int, states []string, results []*providers.Result, rec *chunkRecord) (*handoff, string) {
	d := c.delivery(i)
	states = slices.Clone(states)
	var throttled, transient, permanent *providers.Result
	delivered, pending, late := false, false, false
	for j, r := range results {
		if r == nil {
			if states[j] == "" {
				late = true
			}
			continue
		}
		if st := deviceState(r.Outcome); st != "" {
			states[j] = st
			rec.device(d.Index, j, st)
		}
		switch r.Outcome {
		case providers.TokenInvalid:
			dev := d.Devices[j]
			w.log.Info("token invalid", "delivery", d.member(), "platform", dev.Platform, "token", shortToken(dev.Token), "reason", r.Reason)
			ev := Event{Type: EventTokenInvalid, Platform: dev.Platform, Token: dev.Token, UserID: d.UserID, Reason: r.Reason, Job: d.Job, At: time.Now().UTC()}
			if err := w.events.emit(ctx, ev); err != nil {
				w.log.Warn("event lost", "err", err)
			}
		case providers.Throttled:
			if throttled == nil || r.RetryAfter > throttled.RetryAfter {
				throttled = r
			}
		case providers.Transient:
			transient = r
		case providers.Permanent:
			permanent = r
		}
	}
	for _, st := range states {
		switch st {
		case stateDelivered:
			delivered = true
		case stateTokenInvalid:
		default:
			pending = true
		}
	}
	switch {
	case !pending && delivered:
		return nil, stateDelivered
	case !pending:
		// Every token is dead: the slot goes back to the user.
		if !w.bypass[d.Priority] {
			if _, err := w.limiter.Release(ctx, d.UserID, d.member()); err != nil {
				w.log.Warn("limiter release failed; the delivery task retries it", "delivery", d.member(), "err", err)
				return &handoff{i: i}, ""
			}
		}
		return nil, stateTokenInvalid
	case late || ctx.Err() != nil:
		return &handoff{i: i}, ""
	case throttled != nil:
		delay := backoff(0)
		if throttled.RetryAfter > 0 {
			// Asynq truncates the wake-up time to whole seconds.
			delay = throttled.RetryAfter + time.Second
		}
		return &handoff{i: i, delay: delay}, ""
	case transient != nil:
		cause := fmt.Sprintf("transient provider failure (%s): %v", reasonOf(transient), errOf(transient))
		if w.maxRetry <= 0 {
			return &handoff{i: i, failed: "giving up after 0 retries: " + cause}, ""
		}
		return &handoff{i: i, delay: backoff(0), attempts: 1}, ""
	case permanent != nil:
		return &handoff{i: i, failed: fmt.Sprintf("permanent provider failure (%s): %v", reasonOf(permanent), errOf(permanent))}, ""
	}
	return &handoff{i: i}, ""
}
