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
func (w *Worker) handleDelivery(ctx context.Context, t *asynq.Task) error {
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
	if d.expired(time.Now()) {
		return w.drop(ctx, &d, 0)
	}
	if w.bypass[d.Priority] {
		w.m.limiter.WithLabelValues("bypass").Inc()
	} else if err := w.awaitSlot(ctx, &d); errors.Is(err, errDropped) {
		return nil
	} else if err != nil {
		return err
	}
	return w.send(ctx, &d)
}

func (d *delivery) expired(at time.Time) bool {
	return !d.Deadline.IsZero() && !at.Before(d.Deadline)
}

// errDropped ends a delivery that was dropped as expired.
var errDropped = errors.New("dropped")

// awaitSlot books the delivery's slot and waits for it: in place when it is
// near, else by deferring the task (a *DeferError). It returns errDropped
// (after dropping the delivery) when the slot is after the deadline.
func (w *Worker) awaitSlot(ctx context.Context, d *delivery) error {
	res, err := w.limiter.Reserve(ctx, d.UserID, d.member())
	if err != nil {
		return fmt.Errorf("limiter reserve for %s: %w", d.member(), err)
	}
	if late := res.Now.Sub(res.At); res.Existing && late > lateRebook {
		sent, err := w.store.anyDelivered(ctx, d.Job, d.Index, len(d.Devices))
		if err != nil {
			return err
		}
		// A delivery that already reached the user keeps its entry: it
		// records a real push.
		if !sent {
			if res, err = w.rebook(ctx, d); err != nil {
				return err
			}
			w.log.Debug("late delivery rebooked", "delivery", d.member(), "late", late, "wait", res.Wait)
		}
	}
	if d.expired(time.Now().Add(res.Wait)) {
		w.m.limiter.WithLabelValues("expired").Inc()
		if err := w.drop(ctx, d, res.Wait); err != nil {
			return err
		}
		return errDropped
	}
	if !res.Existing && res.Wait > 0 {
		w.m.deferral.Observe(res.Wait.Seconds())
	}
	switch {
	case res.Wait <= 0:
		w.m.limiter.WithLabelValues("allowed").Inc()
		return nil
	case res.Wait > maxInlineWait:
		w.m.limiter.WithLabelValues("deferred").Inc()
		if err := w.store.countDeferral(ctx, d.Job); err != nil {
			return err
		}
		w.log.Debug("delivery deferred", "delivery", d.member(), "wait", res.Wait)
		return &DeferError{Delay: res.Wait}
	}
	w.m.limiter.WithLabelValues("waited").Inc()
	timer := time.NewTimer(res.Wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		// Shutdown or timeout: the task goes back to its queue and gets the
		// same booking on its next run.
		return fmt.Errorf("waiting for the slot of %s: %w", d.member(), ctx.Err())
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
