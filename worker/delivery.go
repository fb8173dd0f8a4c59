package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/throttle"
)

// handleDelivery takes one recipient of a job through the limiter and the
// providers. See SPEC.md "Delivery semantics".
func (w *Worker) handleDelivery(ctx context.Context, t *asynq.Task) (err error) {
	w.pool.Run(func() { err = w.deliveryTask(ctx, t) })
	return err
}

func (w *Worker) deliveryTask(ctx context.Context, t *asynq.Task) error {
	var d delivery
	if err := json.Unmarshal(t.Payload(), &d); err != nil {
		return fmt.Errorf("undecodable delivery payload: %w: %w", err, asynq.SkipRetry)
	}
	if err := d.check(); err != nil {
		return fmt.Errorf("invalid delivery payload: %w: %w", err, asynq.SkipRetry)
	}
	final, err := w.store.final(ctx, d.Job, d.Index)
	if err != nil {
		return err
	}
	if final != "" {
		return nil // already settled by an earlier run
	}
	if d.Failed != "" {
		// A chunk met a failure that ends the delivery.
		sent, err := w.store.anyDelivered(ctx, d.Job, d.Index, len(d.Devices))
		if err != nil {
			return err
		}
		if err := w.finish(ctx, &d, failedOr(sent)); err != nil {
			return err
		}
		return fmt.Errorf("%s: %w", d.Failed, asynq.SkipRetry)
	}
	if d.expired(time.Now()) {
		return w.drop(ctx, &d, 0)
	}
	if w.bypass[d.Priority] {
		w.m.limiter.WithLabelValues("bypass").Inc()
		return w.send(ctx, &d, time.Time{})
	}
	rebook := false
	for {
		slot, err := w.awaitSlot(ctx, &d, rebook)
		if errors.Is(err, errDropped) {
			return nil
		}
		if err != nil {
			return err
		}
		err = w.send(ctx, &d, slot)
		if !errors.Is(err, errLate) {
			return err
		}
		// Something (a Redis outage, a stalled process) held the delivery
		// past its slot after the wait: sending now could land on top of
		// the user's next booking, so book a new slot instead.
		rebook = true
	}
}

func (d *delivery) expired(at time.Time) bool {
	return !d.Deadline.IsZero() && !at.Before(d.Deadline)
}

// errDropped ends a delivery that was dropped as expired.
var errDropped = errors.New("dropped")

// errLate says the delivery reached the providers too long after its slot
// and nothing was sent; it must be booked again.
var errLate = errors.New("late for its slot")

// awaitSlot books the delivery's slot and waits for it: in place when it is
// near, else by deferring the task (a *DeferError). It returns the slot on
// the local clock, or errDropped (after dropping the delivery) when the
// slot is after the deadline. The local slot is measured from the
// middle of the booking's round trip, where the limiter's clock most likely
// read Now. With rebook, an existing booking is given back and a new one
// taken.
func (w *Worker) awaitSlot(ctx context.Context, d *delivery, rebook bool) (time.Time, error) {
	asked := time.Now()
	res, err := w.limiter.Reserve(ctx, d.UserID, d.member())
	if err != nil {
		return time.Time{}, fmt.Errorf("limiter reserve for %s: %w", d.member(), err)
	}
	if late := res.Now.Sub(res.At); res.Existing && (rebook || late > lateRebook) {
		sent, err := w.store.anyDelivered(ctx, d.Job, d.Index, len(d.Devices))
		if err != nil {
			return time.Time{}, err
		}
		// A delivery that already reached the user keeps its entry: it
		// records a real push.
		if !sent {
			asked = time.Now()
			if res, err = w.rebook(ctx, d); err != nil {
				return time.Time{}, err
			}
			w.log.Debug("late delivery rebooked", "delivery", d.member(), "late", late, "wait", res.Wait)
		}
	}
	if d.expired(time.Now().Add(res.Wait)) {
		w.m.limiter.WithLabelValues("expired").Inc()
		if err := w.drop(ctx, d, res.Wait); err != nil {
			return time.Time{}, err
		}
		return time.Time{}, errDropped
	}
	if !res.Existing && res.Wait > 0 {
		w.m.deferral.Observe(res.Wait.Seconds())
	}
	slot := asked.Add(time.Since(asked)/2 + res.Wait)
	switch {
	case res.Wait <= 0:
		w.m.limiter.WithLabelValues("allowed").Inc()
		return slot, nil
	case res.Wait > maxInlineWait:
		w.m.limiter.WithLabelValues("deferred").Inc()
		if err := w.store.countDeferral(ctx, d.Job); err != nil {
			return time.Time{}, err
		}
		w.log.Debug("delivery deferred", "delivery", d.member(), "wait", res.Wait)
		return time.Time{}, &DeferError{Delay: res.Wait}
	}
	w.m.limiter.WithLabelValues("waited").Inc()
	timer := time.NewTimer(res.Wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return slot, nil
	case <-ctx.Done():
		// Shutdown or timeout: the task goes back to its queue and gets the
		// same booking on its next run.
		return time.Time{}, fmt.Errorf("waiting for the slot of %s: %w", d.member(), ctx.Err())
	}
}

// rebook gives the delivery's slot back and books a new one.
func (w *Worker) rebook(ctx context.Context, d *delivery) (throttle.Reservation, error) {
	w.m.limiter.WithLabelValues("rebooked").Inc()
	if _, err := w.limiter.Release(ctx, d.UserID, d.member()); err != nil {
		return throttle.Reservation{}, fmt.Errorf("limiter release for %s: %w", d.member(), err)
	}
	res, err := w.limiter.Reserve(ctx, d.UserID, d.member())
	if err != nil {
		return throttle.Reservation{}, fmt.Errorf("limiter reserve for %s: %w", d.member(), err)
	}
	return res, nil
}

// drop ends an expired delivery: its slot is given back, an event and a
// metric say so, and the recipient's final state is expired.
func (w *Worker) drop(ctx context.Context, d *delivery, wait time.Duration) error {
	sent, err := w.store.anyDelivered(ctx, d.Job, d.Index, len(d.Devices))
	if err != nil {
		return err
	}
	if sent {
		// A retry for the rest of the devices ran out of time, but the user
		// got the push on another device: that is a delivery, and its
		// limiter entry records a real push.
		w.log.Info("delivery expired before every device was reached", "delivery", d.member(), "deadline", d.Deadline)
		return w.finish(ctx, d, stateDelivered)
	}
	if !w.bypass[d.Priority] {
		if _, err := w.limiter.Release(ctx, d.UserID, d.member()); err != nil {
			return fmt.Errorf("limiter release for %s: %w", d.member(), err)
		}
	}
	recorded, err := w.store.finalize(ctx, d.Job, d.Index, stateExpired, ttlFor(d.AcceptedAt, d.Deadline))
	if err != nil {
		return err
	}
	if !recorded {
		return nil
	}
	w.m.recipients.WithLabelValues(stateExpired).Inc()
	w.log.Info("delivery dropped: expired", "delivery", d.member(), "deadline", d.Deadline, "slot_in", wait)
	if err := w.events.emit(ctx, Event{Type: EventDropped, Reason: stateExpired, Job: d.Job, UserID: d.UserID, At: time.Now().UTC()}); err != nil {
		w.log.Warn("event lost", "err", err)
	}
	return nil
}
