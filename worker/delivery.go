package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/internal/mutant"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/task"
)

// Delivery task options. Deliveries get a practically unlimited Asynq
// MaxRetry because Asynq archives a task whose retry count reached MaxRetry
// even on a non-failure error (a deferral); HUSH_MAX_RETRY and
// HUSH_MAX_THROTTLED are enforced by the worker (decide.Judge), which keeps
// its own attempt count in the job's records. deliveryTimeout leaves handlers
// about two minutes: they stop taskMargin before it (see handling).
const (
	deliveryMaxRetry = 1 << 20
	deliveryTimeout  = 3 * time.Minute
)

// maxLoops bounds how often one run of a delivery task books again in
// place (a late booking, devices left late) before it hands itself back.
const maxLoops = 4

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// handleDelivery takes one recipient of a job through the limiter and the
// providers. See docs "Delivery semantics".
func (w *Worker) handleDelivery(ctx context.Context, t *asynq.Task) error {
	return w.handle(ctx, t, w.deliveryTask)
}

func (w *Worker) deliveryTask(ctx context.Context, t *asynq.Task) error {
	var d task.Delivery
	if err := json.Unmarshal(t.Payload(), &d); err != nil {
		return fmt.Errorf("undecodable delivery payload: %w: %w", err, asynq.SkipRetry)
	}
	if err := d.Check(); err != nil {
		return fmt.Errorf("invalid delivery payload: %w: %w", err, asynq.SkipRetry)
	}
	retried, _ := asynq.GetRetryCount(ctx)
	first := -1 // the attempt the run found first
	for range maxLoops {
		st, err := w.store.recipient(ctx, d.Job, d.Index, len(d.Devices))
		if err != nil {
			return err
		}
		if first < 0 {
			first = st.attempts.N
		}
		// Only the attempt an earlier run may have ended in is unsettled:
		// one this run went on to is its own.
		st.attempts.Unsettled = st.attempts.N == first && decide.AfterUnsettled(retried, st.attempts.Failures) ||
			st.attempts.N == 0 && d.Unsettled
		if st.final != "" {
			return nil // settled by an earlier run
		}
		if d.Failed != "" {
			return w.fail(ctx, &d, decide.FailedOr(slices.Contains(st.devices, task.Delivered)), d.Failed)
		}
		again, err := w.attempt(ctx, &d, st)
		if !again {
			return err
		}
	}
	return &DeferError{Delay: time.Second} // booked again too often in one run: come back
}

// attempt makes one attempt of d from its recorded state st: book, plan,
// send, judge. It returns again when the delivery should go round once
// more at once (a booking given back, a new attempt without delay), else
// the task's result.
func (w *Worker) attempt(ctx context.Context, d *task.Delivery, st recipientState) (again bool, err error) {
	a := st.attempts
	if !slices.Contains(st.devices, "") {
		// Every device settled, final state not recorded: a run died between
		// the two.
		v := decide.Judge(st.devices, make([]*providers.Result, len(st.devices)), a, w.retry, w.now(), d.RetryUntil(), false)
		return false, w.carryOut(ctx, d, a, v)
	}
	if st.cancelled {
		return false, w.drop(ctx, d, st, task.Cancelled, "")
	}
	if d.Expired(w.now()) {
		return false, w.drop(ctx, d, st, task.Expired, "")
	}
	app, err := w.appOf(d)
	if missing := appMissing(app, err, d.Devices, st.devices); missing != nil {
		// Accepted by a process with another apps file.
		return false, w.waitForApp(ctx, d, st, missing)
	}
	w.appWaits.done(d.AppName(), d.Member())
	if wait := a.RetryAt.Sub(w.now()); wait > 0 {
		// A retry recorded with its delay (a provider's Retry-After, or
		// the backoff) by a run that stopped before waiting it out (a
		// chunk that handed the recipient over, a shutdown, a re-run):
		// the provider is not asked again sooner.
		if wait > decide.MaxInlineWait {
			return false, &DeferError{Delay: wait}
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return false, fmt.Errorf("waiting for the retry of %s: %w", d.Member(), ctx.Err())
		}
		return true, nil // read again: the job may be cancelled or expired since
	}
	// Every call starts within cancelWindow of a read of the job's
	// cancellation: the state just read, or the booking's own.
	sendBy := st.readAt.Add(cancelWindow)
	slot := w.now()  // a bypass priority's: now, or its paced time
	var at time.Time // the slot on the limiter's clock (zero: none)
	if w.bypass[d.Priority] {
		w.m.limiter.WithLabelValues(app.Name, "bypass").Inc()
		if wait := a.Paced.Sub(w.now()); wait > decide.MaxInlineWait {
			return false, &DeferError{Delay: wait}
		} else if wait > 0 {
			slot, at = a.Paced, a.Paced
		}
	} else {
		b := w.book(ctx, app, []bookItem{{d: d, n: a.N, paced: a.Paced}}, bookHow{job: d.Job})
		switch b.gate() {
		case decide.GateCancelled:
			return false, w.drop(ctx, d, st, task.Cancelled, "")
		case decide.GateUnknown:
			// The job may be cancelled: nothing is sent; the next run
			// reads again and finds the booking, if one was made.
			return false, fmt.Errorf("delivery %s: %w", d.Member(), b.cancelErr)
		}
		if b.err != nil {
			return false, fmt.Errorf("limiter reserve for %s: %w", task.Member(d.Job, d.Index, a.N), b.err)
		}
		res := b.res[0]
		if res.Collapsed != "" {
			w.collapsedBy(d, res.Collapsed)
		}
		p := decide.Plan(res, b.mid, b.answered, w.now(), d.Deadline, a.Carries(st.devices))
		w.countPlan(app, p, res)
		switch rt := decide.RoutePlan(p, decide.ByDelivery); rt.Move {
		case decide.MoveDrop:
			if rt.Reason == task.Expired && p.HeldBy != "" {
				// Its deadline may be hours ahead: say which rule's slot is past it.
				w.log.Info("delivery expires before its slot", "delivery", d.Member(), "app", d.AppName(), "user_id", d.UserID,
					"slot", res.At.UTC().Format(time.RFC3339Nano), "rule", p.HeldBy)
			}
			return false, w.drop(ctx, d, st, rt.Reason, rt.ReplacedBy)
		case decide.MoveRebook:
			return true, w.release(ctx, "late", failureReturned, a.N, d)
		case decide.MoveNext:
			_, err := w.store.nextAttempt(ctx, d.Job, d.Index, a, false, false, w.now(), time.Time{}, d.TTL())
			return err == nil, err
		case decide.MoveDefer:
			if err := w.store.hold(ctx, d.Job, d.Index, w.deliveryQueue(d), d.TTL()); err != nil {
				return false, err
			}
			if c := w.collapsedSince(ctx, app, []bookItem{{d: d, n: a.N, paced: a.Paced}})[0]; c.collapsed {
				// Collapsed before its marker was written: no wake
				// reached this running task.
				return false, w.drop(ctx, d, st, task.Collapsed, c.by)
			}
			w.logDeferred(d, p)
			return false, &DeferError{Delay: rt.Delay}
		}
		slot, at = p.Slot, res.At
		sendBy = b.sendBy(p.Slot.Add(decide.LateRebook))
	}
	// The app's send rate (pace.go): send at the turns granted, or hold
	// the delivery until its turn and book again from there.
	paced, err := w.pace(ctx, app, []paceItem{{d: d, states: st.devices, slot: slot, at: at, paced: a.Paced, told: a.PacedTold}})
	if err != nil {
		return false, err
	}
	if paced[0].hold {
		if err := w.store.holdPaced(ctx, d.Job, map[int]pacedTurn{d.Index: paced[0].last}, d.TTL()); err != nil {
			return false, err
		}
		w.m.limiter.WithLabelValues(app.Name, "paced").Inc()
		if w.bypass[d.Priority] {
			return false, &DeferError{Delay: paced[0].turn.Sub(w.now())}
		}
		return true, w.release(ctx, "paced", failureReturned, a.N, d)
	}
	when := sendTimes{at: slot, by: sendBy, turns: paced[0].turns}
	if start := later(slot, paced[0].turn); start.Sub(w.now()) > 0 {
		// The slot (decide.StepWait) or the earliest turn, at most decide.PaceSlack
		// later.
		timer := time.NewTimer(start.Sub(w.now()))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			// Shutdown or timeout: the task goes back to its queue and
			// gets the same booking on its next run.
			return false, fmt.Errorf("waiting for the slot of %s: %w", d.Member(), ctx.Err())
		}
	}
	results := make([]*providers.Result, len(d.Devices))
	w.pool.all(w.deviceCalls(ctx, app, d, st.devices, a.N, when, results, nil, func() {}))
	v := decide.Judge(st.devices, results, a, w.retry, w.now(), d.RetryUntil(), ctx.Err() != nil)
	if v.Act == decide.ActRebook {
		return true, w.release(ctx, "late", failureReturned, a.N, d)
	}
	if v.Act == decide.ActRetry && v.Delay <= 0 {
		_, _, err := w.after(ctx, d, a, v)
		return err == nil, err
	}
	return false, w.carryOut(ctx, d, a, v)
}

// carryOut applies verdict v (after) and turns it into the task's result.
func (w *Worker) carryOut(ctx context.Context, d *task.Delivery, a decide.Attempts, v decide.Verdict) error {
	final, n, err := w.after(ctx, d, a, v)
	switch {
	case err != nil && v.Act == decide.ActRetry:
		return retryResult(unrecordedRetry(v, err))
	case err != nil:
		return err
	case n.failed != "":
		return w.fail(ctx, d, final, n.failed)
	case final != "":
		return w.finish(ctx, d, final, "")
	case n.stop:
		return fmt.Errorf("delivery %s interrupted: %w", d.Member(), context.Canceled)
	}
	return retryResult(n)
}

// unrecordedRetry is what follows verdict v's retry when carrying it out
// failed (err, from after: the release of the attempt's booking or the
// record of the next attempt): the retry still waits the verdict's delay,
// so a provider's Retry-After holds, and its next run repeats this
// attempt. A delivery task returns it (carryOut); a chunk hands the
// recipient to its delivery task with its delay (deliverWave).
func unrecordedRetry(v decide.Verdict, err error) next {
	return next{delay: v.Delay, throttled: v.Throttled, cause: fmt.Errorf("%w (recording the retry failed: %w)", v.Cause, err)}
}

// retryResult is the task's result for a retry after n.delay: a
// provider's throttling does not count as a failure, any other retry does.
func retryResult(n next) error {
	if n.throttled {
		return &ThrottledError{RetryAfter: n.delay, Reason: n.cause.Error()}
	}
	return &retryError{delay: n.delay, cause: n.cause}
}

// fail records d's final state and archives its task with reason.
func (w *Worker) fail(ctx context.Context, d *task.Delivery, state, reason string) error {
	if err := w.finish(ctx, d, state, reason); err != nil {
		return err
	}
	return fmt.Errorf("%s: %w", reason, asynq.SkipRetry)
}

// countPlan counts a booking's plan in hush_limiter_decisions_total and
// hush_deferral_seconds.
func (w *Worker) countPlan(app *App, p decide.Planned, res throttle.Reservation) {
	switch p.Step {
	case decide.StepSend:
		w.m.limiter.WithLabelValues(app.Name, "allowed").Inc()
	case decide.StepWait:
		w.m.limiter.WithLabelValues(app.Name, "waited").Inc()
	case decide.StepDefer:
		w.m.limiter.WithLabelValues(app.Name, "deferred").Inc()
	case decide.StepExpire:
		w.m.limiter.WithLabelValues(app.Name, "expired").Inc()
	case decide.StepFull:
		w.m.limiter.WithLabelValues(app.Name, "full").Inc()
	case decide.StepCollapsed:
		w.m.limiter.WithLabelValues(app.Name, "collapsed").Inc()
	case decide.StepOptedOut:
		w.m.limiter.WithLabelValues(app.Name, "opted_out").Inc()
	case decide.StepRebook, decide.StepNext:
		w.m.limiter.WithLabelValues(app.Name, "rebooked").Inc()
	}
	if !res.Existing && res.Refused == "" && res.Wait > 0 {
		w.m.deferral.Observe(res.Wait.Seconds())
	}
}

// drop ends d without sending, with reason task.Expired (its deadline
// passed, or its earliest slot is after it), task.ThrottleFull (the user
// holds the most bookings allowed), task.Collapsed (a newer push with its
// collapse key took its place), task.Cancelled (its job was cancelled) or
// task.OptedOut (the user opted out of its category); by is the member of
// the push that took a collapsed one's place, which its event names. It gives the attempt's booking back, unless the attempt is
// unsettled (its push may have gone out at that slot). A device that
// already has the push makes it a delivery. The dropped event is appended
// before the state is recorded, so it is never lost (a re-run may emit it
// twice).
func (w *Worker) drop(ctx context.Context, d *task.Delivery, st recipientState, reason, by string) error {
	if slices.Contains(st.devices, task.Delivered) {
		// A retry for the rest of the devices ran out of time, but the user
		// got the push on another device: that is a delivery, and the
		// limiter entry it went out under records a real push. The
		// attempt's own booking goes back unless it is that one.
		if !st.attempts.Carries(st.devices) {
			if err := w.release(ctx, "dropped", failureReturned, st.attempts.N, d); err != nil {
				return err
			}
		}
		w.log.Info("delivery expired before every device was reached", withDeadline([]any{"delivery", d.Member(), "user_id", d.UserID}, d.Deadline)...)
		return w.finish(ctx, d, task.Delivered, "")
	}
	if !st.attempts.Unsettled {
		if err := w.release(ctx, "dropped", failureReturned, st.attempts.N, d); err != nil {
			return err
		}
	}
	w.log.Info("delivery dropped", withDeadline([]any{"reason", reason, "delivery", d.Member(), "app", d.AppName(), "user_id", d.UserID}, d.Deadline)...)
	about := d.About(w.now(), "")
	if job, _, _, ok := task.ParseMember(by); ok {
		about.ReplacedBy = job
	}
	if mutant.On("replacedBySelf") && reason == task.Collapsed {
		about.ReplacedBy = d.Job
	}
	return w.record(ctx, d, reason, about)
}

// withDeadline is attrs with a delivery's deadline when it has one: a job
// without a ttl or expires_at has none, and its lines name none.
func withDeadline(attrs []any, deadline time.Time) []any {
	if deadline.IsZero() {
		return attrs
	}
	return append(attrs, "deadline", deadline)
}

// logDeferred says, at info level, that d waits for its booked slot, and
// the rule that holds it: the line that shows a user's pacing in the log.
// A slot booked before (a held push woken) names no rule: the limiter
// says which only when it books.
func (w *Worker) logDeferred(d *task.Delivery, p decide.Planned) {
	attrs := []any{"delivery", d.Member(), "app", d.AppName(), "user_id", d.UserID,
		"slot", p.Slot.UTC().Format(time.RFC3339Nano), "wait", p.Wait.Round(time.Millisecond)}
	if p.HeldBy != "" {
		attrs = append(attrs, "rule", p.HeldBy)
	}
	w.log.Info("delivery deferred until its slot", attrs...)
}
