package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/providers"
)

// sendTimeout bounds one provider call.
const sendTimeout = 30 * time.Second

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

// send pushes to every device of the delivery not yet settled by an earlier
// run, concurrently, records each settled device right after the provider's
// answer, and turns the answers into the task's result. slot is the
// delivery's booked instant on the local clock (zero when it bypasses the
// limiter): when the providers would be called more than lateRebook after
// it and no device has the push yet, nothing is sent and errLate asks for a
// new booking.
func (w *Worker) send(ctx context.Context, d *delivery, slot time.Time) error {
	ttl := ttlFor(d.AcceptedAt, d.Deadline)
	states, err := w.store.devices(ctx, d.Job, d.Index, len(d.Devices))
	if err != nil {
		return err
	}
	if !slot.IsZero() && time.Since(slot) > lateRebook && !slices.Contains(states, stateDelivered) {
		return errLate
	}
	results := make([]*providers.Result, len(d.Devices))
	var calls []func()
	for i, dev := range d.Devices {
		if states[i] != "" {
			continue
		}
		calls = append(calls, func() {
			r := w.sendOne(ctx, d, i)
			results[i] = &r
			if st := deviceState(r.Outcome); st != "" {
				if err := w.store.setDevice(ctx, d.Job, d.Index, i, st, ttl); err != nil {
					// The next run may send to this device again; nothing
					// better can be done when Redis is gone.
					w.log.Warn("device outcome not recorded", "delivery", d.member(), "device", i, "err", err)
				} else {
					states[i] = st
				}
			}
			if r.Outcome == providers.TokenInvalid {
				w.log.Info("token invalid", "delivery", d.member(), "platform", dev.Platform, "token", shortToken(dev.Token), "reason", r.Reason)
				ev := Event{Type: EventTokenInvalid, Platform: dev.Platform, Token: dev.Token, UserID: d.UserID, Reason: r.Reason, Job: d.Job, At: time.Now().UTC()}
				if err := w.events.emit(ctx, ev); err != nil {
					w.log.Warn("event lost", "err", err)
				}
			}
		})
	}
	w.pool.all(calls)
	return w.settle(ctx, d, states, results)
}

func deviceState(o providers.Outcome) string {
	switch o {
	case providers.Delivered:
		return stateDelivered
	case providers.TokenInvalid:
		return stateTokenInvalid
	}
	return ""
}

func (w *Worker) sendOne(ctx context.Context, d *delivery, i int) providers.Result {
	dev := d.Devices[i]
	s, ok := w.senders[dev.Platform]
	if !ok {
		return providers.Result{Outcome: providers.Permanent, Reason: "no sender for " + string(dev.Platform), Err: errNoSender}
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	start := time.Now()
	r := s.Send(ctx, providers.Push{
		ID:       d.member() + "/" + strconv.Itoa(i),
		Platform: dev.Platform,
		Token:    dev.Token,
		Content:  &d.Content,
		Expiry:   d.Deadline,
	})
	w.m.latency.WithLabelValues(string(dev.Platform)).Observe(time.Since(start).Seconds())
	w.m.deliveries.WithLabelValues(string(dev.Platform), outcomeNames[r.Outcome]).Inc()
	if r.Credential {
		w.credentialFail.Store(time.Now().UnixNano())
	}
	return r
}

// settle decides the task's result from the device states (recorded, and
// this run's answers for the rest).
func (w *Worker) settle(ctx context.Context, d *delivery, states []string, results []*providers.Result) error {
	var throttled, transient, permanent *providers.Result
	delivered, pending := false, false
	for i, st := range states {
		switch st {
		case stateDelivered:
			delivered = true
			continue
		case stateTokenInvalid:
			continue
		}
		pending = true
		r := results[i]
		if r == nil {
			continue
		}
		switch r.Outcome {
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
	if !pending {
		state := stateDelivered
		if !delivered {
			// Every token is dead: nothing reached the user, so the slot
			// goes back to them.
			state = stateTokenInvalid
			if !w.bypass[d.Priority] {
				if _, err := w.limiter.Release(ctx, d.UserID, d.member()); err != nil {
					return fmt.Errorf("limiter release for %s: %w", d.member(), err)
				}
			}
		}
		return w.finish(ctx, d, state)
	}
	if err := ctx.Err(); err != nil {
		// Shutdown or the task's timeout interrupted the sends: hand the
		// delivery back (a cancel is not the delivery's failure).
		return fmt.Errorf("delivery %s interrupted: %w", d.member(), err)
	}
	switch {
	case throttled != nil:
		return &ThrottledError{RetryAfter: throttled.RetryAfter, Reason: reasonOf(throttled)}
	case transient != nil:
		retried, _ := asynq.GetRetryCount(ctx)
		retried += d.Attempts
		cause := fmt.Errorf("transient provider failure (%s): %w", reasonOf(transient), errOf(transient))
		if retried < w.maxRetry {
			return cause
		}
		if err := w.finish(ctx, d, failedOr(delivered)); err != nil {
			return err
		}
		return fmt.Errorf("giving up after %d retries: %w: %w", retried, cause, asynq.SkipRetry)
	case permanent != nil:
		if err := w.finish(ctx, d, failedOr(delivered)); err != nil {
			return err
		}
		return fmt.Errorf("permanent provider failure (%s): %w: %w", reasonOf(permanent), errOf(permanent), asynq.SkipRetry)
	}
	// Unreachable: every pending device has a result.
	return fmt.Errorf("delivery %s: devices left without an answer", d.member())
}

func failedOr(delivered bool) string {
	if delivered {
		return stateDelivered
	}
	return stateFailed
}

func (w *Worker) finish(ctx context.Context, d *delivery, state string) error {
	recorded, err := w.store.finalize(ctx, d.Job, d.Index, state, ttlFor(d.AcceptedAt, d.Deadline))
	if err != nil {
		return err
	}
	if recorded {
		w.m.recipients.WithLabelValues(state).Inc()
	}
	return nil
}

func reasonOf(r *providers.Result) string {
	switch {
	case r.Reason != "":
		return r.Reason
	case r.StatusCode != 0:
		return "status " + strconv.Itoa(r.StatusCode)
	case r.Err != nil:
		return "error"
	}
	return "unknown"
}

// errOf is the result's error, or a sentinel naming the outcome.
func errOf(r *providers.Result) error {
	if r.Err != nil {
		return r.Err
	}
	return errProvider
}

var errProvider = errors.New("provider answer")
