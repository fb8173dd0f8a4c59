package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hushpush/hush/internal/mutant"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// sendTimeout bounds one provider call: the one call timeout
// (providers.CallTimeout), which every sender uses too.
const sendTimeout = providers.CallTimeout

// outcome names for metrics and logs.
var outcomeNames = map[providers.Outcome]string{
	providers.Delivered:    "delivered",
	providers.TokenInvalid: "token_invalid",
	providers.Throttled:    "throttled",
	providers.Transient:    "transient",
	providers.Permanent:    "permanent",
}

// errNoSender is the reason given for a device whose platform has no sender.
var errNoSender = errors.New("no sender configured for this platform")

// notSent is the result of a device call that was not made because it
// would have left after its slot.
var notSent = providers.Result{Outcome: providers.Transient, Reason: "late for its slot", Err: providers.ErrNotSent}

// sendTimes is when a recipient's device calls may leave: none before at
// (zero: at once) nor after by (zero: no bound besides the deadline);
// device j, when paced, at or after turns[j] and at most decide.PaceLate
// after it (turns nil, or turns[j] zero: unpaced).
type sendTimes struct {
	at, by time.Time
	turns  []time.Time
}

// forDevice is when device j of a delivery may leave: from at, no earlier
// than notBefore (zero: none; sendNotBefore), to by, before deadline
// (zero: none), so no call reaches a provider before send_at or after the
// deadline: the one check every path makes at the point of sending, with
// the actual time.
func (t sendTimes) forDevice(j int, notBefore, deadline time.Time) (at, by time.Time) {
	at, by = later(t.at, notBefore), t.by
	earlier := func(x time.Time) {
		if !x.IsZero() && (by.IsZero() || x.Before(by)) {
			by = x
		}
	}
	if j < len(t.turns) && !t.turns[j].IsZero() {
		at = later(at, t.turns[j])
		earlier(t.turns[j].Add(decide.PaceLate))
	}
	if !deadline.IsZero() {
		earlier(deadline.Add(-time.Nanosecond))
	}
	return at, by
}

// deviceCalls returns one call per device of d not yet settled (states),
// each waiting until its time (when.forDevice), then filling results[j]:
// the provider's answer, recorded (worker/internal/store/outcomes.go) before the call returns
// when it settles the device, or, with fold set, a delivered answer left
// in fold for the caller's record call to write (foldedAnswer); notSent
// when the call would leave after its time; nil when shutdown began
// before it. after runs when the last of d's calls ends.
func (w *Worker) deviceCalls(ctx context.Context, app *App, d *task.Delivery, states []string, attempt int, when sendTimes, results []*providers.Result, fold *foldedAnswer, after func()) []func() {
	if mutant.On("resendSettled") {
		states = make([]string, len(states))
	}
	pending := 0
	for _, st := range states {
		if st == "" {
			pending++
		}
	}
	if pending == 0 {
		after()
		return nil
	}
	left := new(atomic.Int32)
	left.Store(int32(pending))
	calls := make([]func(), 0, pending)
	for j := range d.Devices {
		if states[j] != "" {
			continue
		}
		calls = append(calls, func() {
			defer func() {
				if left.Add(-1) == 0 {
					after()
				}
			}()
			// Counted from before the shutdown check to after the answer's
			// record, so Run never sees no call under way between a
			// provider's answer and its record (a folded answer's count
			// ends when it is written: settleFolded).
			w.calls.add()
			counted := true
			defer func() {
				if counted {
					w.calls.done()
				}
			}()
			sendAt, sendBy := when.forDevice(j, w.sendNotBefore(d), d.Deadline)
			if !w.sleepUntil(ctx, sendAt) {
				return // shutdown: the delivery goes back as it is
			}
			if !sendBy.IsZero() && w.now().After(sendBy) {
				results[j] = &notSent
				w.m.lateSends.WithLabelValues(app.Name, string(d.Devices[j].Platform)).Inc()
				return
			}
			r := w.sendOne(ctx, app, d, j, attempt, sendBy)
			results[j] = &r
			if fold != nil && r.Outcome == providers.Delivered {
				fold.o = store.DeviceOutcome{Job: d.Job, Field: store.DevField(d.Index, j), State: task.Delivered, TTL: d.TTL()}
				fold.pending, counted = true, false
				return
			}
			w.recordAnswer(d, j, attempt, r)
		})
	}
	return calls
}

// sendNotBefore is the earliest instant on this worker's clock a call of
// d may leave, besides its slot: send_at for a bypass priority, which
// books no slot; zero for a booked delivery, whose slot the limiter gave
// no earlier than send_at on its own clock (a skewed local clock must not
// move it).
func (w *Worker) sendNotBefore(d *task.Delivery) time.Time {
	if !w.bypass[d.Priority] {
		return time.Time{}
	}
	return d.Content.NotBefore()
}

// sleepUntil waits until t (not at all when t is past) and reports
// whether ctx is still live then.
func (w *Worker) sleepUntil(ctx context.Context, t time.Time) bool {
	if wait := t.Sub(w.now()); wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	return ctx.Err() == nil
}

// onSystemClock is t, an instant on w's clock (Options.Clock), on the
// system clock: a sender and providers.Call measure a push's SendBy by
// the system's, the clock the call leaves on. Zero stays zero; with the
// system clock t is as it is.
func (w *Worker) onSystemClock(t time.Time) time.Time {
	if _, system := w.clock.(task.SystemClock); system || w.clock == nil || t.IsZero() {
		return t
	}
	return t.Add(time.Since(w.now()))
}

// sendOne makes one provider call for device j of d. The call runs under
// a context that shutdown does not cancel (an answer on its way is worth
// waiting for: a push the provider accepted is recorded, not sent again),
// only Run's hard stop and sendTimeout; a panic in a sender is a transient
// outcome, not a dead process.
func (w *Worker) sendOne(ctx context.Context, app *App, d *task.Delivery, j, attempt int, sendBy time.Time) (r providers.Result) {
	dev := d.Devices[j]
	s, ok := app.Senders[dev.Platform]
	if !ok {
		return providers.Result{Outcome: providers.Permanent, Reason: "no sender for " + string(dev.Platform), Err: errNoSender}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sendTimeout)
	defer cancel()
	stop := context.AfterFunc(w.halt, cancel)
	defer stop()
	start := w.now()
	defer func() {
		if v := recover(); v != nil {
			w.log.Error("provider call panicked", "delivery", d.Member(), "platform", dev.Platform, "panic", v)
			r = providers.Result{Outcome: providers.Transient, Reason: "panic", Err: fmt.Errorf("sender panicked: %v", v)}
		}
		if errors.Is(r.Err, providers.ErrNotSent) {
			// Late for SendBy when the sender got to it: no provider
			// answer, no call to time.
			w.m.lateSends.WithLabelValues(app.Name, string(dev.Platform)).Inc()
			return
		}
		w.m.latency.WithLabelValues(app.Name, string(dev.Platform)).Observe(w.now().Sub(start).Seconds())
		w.m.deviceSends.WithLabelValues(app.Name, string(dev.Platform), outcomeNames[r.Outcome]).Inc()
		if refusesApp(r) {
			w.m.credentialRefusals.WithLabelValues(app.Name, string(dev.Platform)).Inc()
			w.creds.failed(app.Name, w.now())
		}
	}()
	return s.Send(ctx, providers.Push{
		ID:       d.Member() + "/" + strconv.Itoa(j),
		UserID:   d.UserID,
		Platform: dev.Platform,
		Token:    dev.Token,
		Content:  &d.Content,
		Expiry:   d.Deadline,
		SendBy:   w.onSystemClock(sendBy),
	})
}

// recordAnswer records device j's answer to attempt n when it settles the
// device (worker/internal/store/outcomes.go), with its token_invalid event. A delivered device
// of a recipient of several has n recorded beside it: the booking its
// push went out under, the one a later attempt keeps
// (decide.Attempts.Carries).
func (w *Worker) recordAnswer(d *task.Delivery, j, n int, r providers.Result) {
	st := decide.DeviceState(r.Outcome)
	if st == "" {
		return
	}
	o := store.DeviceOutcome{Job: d.Job, Field: store.DevField(d.Index, j), State: st, TTL: d.TTL()}
	if st == task.Delivered && len(d.Devices) > 1 {
		o.Under = strconv.Itoa(n)
	}
	if r.Outcome == providers.TokenInvalid {
		dev := d.Devices[j]
		w.log.Info("token invalid", "delivery", d.Member(), "app", d.AppName(), "user_id", d.UserID, "platform", dev.Platform, "token", providers.TokenEnds(dev.Token), "reason", r.Reason)
		o.Event = &Event{Type: EventTokenInvalid, Platform: string(dev.Platform), Token: dev.Token, UserID: d.UserID, Reason: r.Reason, Job: d.Job, App: d.AppName(), At: w.now().UTC()}
	}
	if err := w.rec.Record(o); err != nil {
		// Redis stayed away for store.RecordTimeout: a later run may send to this
		// device again.
		w.log.Error("device outcome not recorded; the device may get the push again", "delivery", d.Member(), "device", j, "err", err)
	}
}

// foldedAnswer is a delivered device's answer whose write is left to its
// chunk's record call (record.lua's dev_field) instead of a write of its own
// (store.Recorder): the one device of a chunk of one recipient with one
// device, a single-recipient job's usual shape, whose answer is the chunk's
// last event. The record call follows the answer as closely as the
// answer's own write would (a linger and a round trip), so the window in
// which a push can be sent twice stays the same, and a job it retires
// never creates its device-state hash (an HSET, a PEXPIRE and a key to
// delete). The provider call stays counted in Worker.calls until the
// answer is written, so shutdown waits for it as for any answer's write.
type foldedAnswer struct {
	o       store.DeviceOutcome
	pending bool // an answer waits to be written
}

// settleFolded ends f's wait: written, its record call wrote it; else it
// is written now, as recordAnswer would have. Either way its provider
// call stops counting. f may be nil or hold no answer.
func (w *Worker) settleFolded(f *foldedAnswer, written bool) {
	if f == nil || !f.pending {
		return
	}
	f.pending = false
	defer w.calls.done()
	if written {
		return
	}
	if err := w.rec.Record(f.o); err != nil {
		w.log.Error("device outcome not recorded; the device may get the push again", "job", f.o.Job, "device", f.o.Field, "err", err)
	}
}

// next is what a delivery does after an attempt that did not end it.
type next struct {
	// delay before the next run (retry) or zero.
	delay time.Duration
	// throttled: the retry is for provider throttling (not a failure).
	throttled bool
	// failed is the reason of a failure that ends the delivery; its task
	// records it and is archived with it.
	failed string
	// stop: shutdown interrupted the attempt; hand it back as it is.
	stop bool
	// cause of a retry.
	cause error
}

// after carries out verdict v of attempt a of d: it gives the attempt's
// booking back when v says nothing reached the user under it, records the
// next attempt of a retry, and returns the final state (done) or what
// happens next. The final state itself is recorded by the caller.
func (w *Worker) after(ctx context.Context, d *task.Delivery, a decide.Attempts, v decide.Verdict) (final string, n next, err error) {
	if v.Release {
		// Under its own context and through a Redis outage, as the record
		// of the next attempt that follows it: a verdict reached as
		// shutdown interrupted the attempt, or while Redis was away, is
		// carried out whole, and a retry keeps its delay (retryAt).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.RecordTimeout)
		err := store.Persist(rctx, func(ctx context.Context) error {
			return w.release(ctx, "unreached", failureReturned, a.N, d)
		})
		cancel()
		if err != nil {
			return "", next{}, err
		}
	}
	switch v.Act {
	case decide.ActDone:
		return v.State, next{}, nil
	case decide.ActFail:
		return v.State, next{failed: v.Cause.Error()}, nil
	case decide.ActStop:
		return "", next{stop: true}, nil
	case decide.ActRebook:
		return "", next{}, nil
	}
	// decide.ActRetry: the next attempt books a slot of its own.
	if _, err := w.store.nextAttempt(ctx, d.Job, d.Index, a, v.Transient, v.Throttled, w.now(), w.now().Add(v.Delay), d.TTL()); err != nil {
		return "", next{}, err
	}
	w.log.Info("delivery retried", "delivery", d.Member(), "app", d.AppName(), "user_id", d.UserID, "attempt", a.N+1, "in", v.Delay, "cause", v.Cause)
	return "", next{delay: v.Delay, throttled: v.Throttled, cause: v.Cause}, nil
}

// finish records d's final state once, and its event (reason: a
// failure's), under a context shutdown does not cancel.
func (w *Worker) finish(ctx context.Context, d *task.Delivery, state, reason string) error {
	return w.record(ctx, d, state, d.About(w.now(), reason))
}

// record is finish with the event's fields given (about).
func (w *Worker) record(ctx context.Context, d *task.Delivery, state string, about Event) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.RecordTimeout)
	defer cancel()
	recorded, err := w.store.finalize(ctx, d.Job, d.Index, state, about, d.TTL())
	if err != nil {
		return err
	}
	if recorded {
		w.m.deliveries.WithLabelValues(d.AppName(), state).Inc()
	}
	return nil
}
