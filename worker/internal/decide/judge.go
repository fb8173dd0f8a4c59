package decide

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/hushpush/hush/internal/mutant"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/worker/internal/task"
)

// Action is what a recipient does after an attempt.
type Action int

const (
	// ActDone: every device is settled; state is final.
	ActDone Action = iota
	// ActRetry: try the devices left again after delay, under the next
	// attempt's booking.
	ActRetry
	// ActRebook: nothing left for the provider (late for the slot), and
	// nothing reached the user under this attempt's booking: give it back
	// and book again, same attempt.
	ActRebook
	// ActFail: the delivery ends with state (failed, or delivered when a
	// device has it) and reason; its task is archived.
	ActFail
	// ActStop: shutdown interrupted the attempt: hand the delivery back as
	// it is.
	ActStop
)

var actionNames = [...]string{"done", "retry", "rebook", "fail", "stop"}

// String names the action, as logs and tests print it.
func (a Action) String() string { return actionNames[a] }

// Verdict is Judge's answer.
type Verdict struct {
	Act   Action
	State string // ActDone, ActFail
	// Release: the attempt's booking can be given back: nothing reached the
	// user under it (every token dead, or every answer a refusal).
	Release bool
	// Delay before the retry (ActRetry).
	Delay time.Duration
	// Throttled: the retry is for provider throttling (not a failure);
	// Transient: for a transient failure (counts against HUSH_MAX_RETRY).
	Throttled, Transient bool
	// Cause of a retry or failure.
	Cause error
}

// Attempts is a delivery's attempt history, kept in its job's records
// (the job store reads it; Judge and Plan decide by it).
type Attempts struct {
	// N is the number of attempts made before the current one (0 on the
	// first); the current attempt books task.Member(job, index, N).
	N int
	// Failures counts attempts that ended in a transient failure.
	Failures int
	// Refusals counts attempts a provider refused: throttled, or failed
	// transiently. The backoff grows with it, not with N, which counts
	// attempts whose devices were left late for their slot too.
	Refusals int
	// ThrottledSince is when a provider first throttled the delivery (zero:
	// never).
	ThrottledSince time.Time
	// Paced is the send time a pacer granted the delivery's next send, on
	// the limiter's clock (zero: none); its booking is made no earlier.
	// PacedTold: the pacer held that time back (a told paced turn).
	Paced     time.Time
	PacedTold bool
	// PushedUnder is, per device, the attempt under which its push was
	// recorded delivered (-1: not recorded; nil: none read). Only the
	// booking of such an attempt carries a push; a later attempt that
	// sends nothing gives its own back.
	PushedUnder []int
	// RetryAt: the current attempt calls no provider before it (a
	// provider's Retry-After or the backoff, recorded with the attempt;
	// zero: none), whichever run or process makes it.
	RetryAt time.Time
	// Unsettled: a run of the current attempt may have ended during its
	// provider call without recording the answer (AfterUnsettled), so
	// its booking may carry a push.
	Unsettled bool
}

// AfterUnsettled reports whether a delivery task's run may follow a run
// that ended during a provider call without recording its answer: Asynq
// counts more failed runs of the task (retried, asynq.GetRetryCount) than
// the transient failures hush recorded for the recipient (failures), and
// each retry hush decides itself records one. A run Asynq counts beyond
// them ended otherwise: its lease expired (its process was killed or
// stalled) or it failed on its own records. Hush's other hand-backs (a
// deferral, a provider's throttling, shutdown) are no failures to Asynq.
func AfterUnsettled(retried, failures int) bool { return retried > failures }

// Begun reports whether the recipient's records hold any attempt history
// (a retry, a throttling, a paced turn): its delivery task knows what to
// make of it.
func (a Attempts) Begun() bool {
	return a.N > 0 || a.Failures > 0 || !a.ThrottledSince.IsZero() || !a.Paced.IsZero() || a.PacedTold
}

// Carries reports whether the booking of the current attempt (a.N) may
// carry a push a device has (states): a device recorded delivered under
// it, or delivered without a record of its attempt (an older process's
// record, or a one-device recipient's, which never needs one). Only such
// a booking is kept when the attempt sends nothing more; every other one
// goes back, so that bookings of attempts that reached nobody do not pile
// up in the user's rules. An unsettled attempt's booking may carry one
// too: the push may have gone out at its slot with nothing recorded.
func (a Attempts) Carries(states []string) bool {
	if a.Unsettled {
		return true
	}
	for j, st := range states {
		if st != task.Delivered {
			continue
		}
		if j >= len(a.PushedUnder) || a.PushedUnder[j] < 0 || a.PushedUnder[j] >= a.N {
			return true
		}
	}
	return false
}

// RetryPolicy bounds retries.
type RetryPolicy struct {
	// MaxRetry is the most retries after transient failures (HUSH_MAX_RETRY).
	MaxRetry int
	// MaxThrottled is the most time a delivery may spend throttled by a
	// provider before it fails (HUSH_MAX_THROTTLED; 0: no bound besides
	// the delivery's expiry).
	MaxThrottled time.Duration
}

// Judge turns a recipient's device states (recorded before this attempt,
// "" for unsettled) and this attempt's answers (nil: not sent) into what
// happens next. until is the latest instant a retry may run
// (task.RetryUntil); interrupted says shutdown stopped the attempt.
func Judge(states []string, results []*providers.Result, a Attempts, p RetryPolicy, now, until time.Time, interrupted bool) Verdict {
	var throttled, transient, permanent *providers.Result
	delivered, pending, called := false, false, false
	released := true // every call this attempt was refused by the provider
	carried := a.Carries(states)
	for j, st := range states {
		r := results[j]
		if r != nil && !errors.Is(r.Err, providers.ErrNotSent) {
			called = true
			if r.Outcome == providers.Delivered || r.StatusCode == 0 {
				// Delivered, or no answer (the push may have arrived).
				released = false
			}
		}
		if st == "" && r != nil {
			st = DeviceState(r.Outcome)
		}
		switch st {
		case task.Delivered:
			delivered = true
			continue
		case task.TokenInvalid:
			continue
		}
		pending = true
		switch {
		case r == nil || errors.Is(r.Err, providers.ErrNotSent):
			// Not called (settled before, shutdown, or late for the
			// slot).
		case r.Outcome == providers.Throttled:
			if throttled == nil || r.RetryAfter > throttled.RetryAfter {
				throttled = r
			}
		case r.Outcome == providers.Transient,
			r.Outcome == providers.Permanent && r.Credential:
			// A refused key, token or certificate is retried like a
			// transient failure: it is what an operator rotates or fixes
			// while pushes wait, and a reload of the apps heals it
			// (docs/delivery.md, "Provider outcomes per device").
			transient = r
		case r.Outcome == providers.Permanent:
			permanent = r
		}
	}
	switch {
	case !pending && delivered:
		// The booking goes back when the push reached the user under
		// earlier attempts' bookings only.
		return Verdict{Act: ActDone, State: task.Delivered, Release: !carried && (!called || released)}
	case !pending:
		// Every token is dead: nothing reached the user.
		return Verdict{Act: ActDone, State: task.TokenInvalid, Release: true}
	case permanent != nil:
		return Verdict{Act: ActFail, State: FailedOr(delivered),
			Cause: fmt.Errorf("permanent provider failure (%s): %w", ReasonOf(permanent), ErrOf(permanent))}
	case interrupted && throttled == nil:
		return Verdict{Act: ActStop}
	case throttled != nil:
		// Even when shutdown interrupted the attempt: the retry is
		// recorded with the provider's Retry-After (Attempts.RetryAt), so
		// the run that takes the delivery over waits it out.
		if a.ThrottledSince.IsZero() {
			a.ThrottledSince = now
		}
		reason := ReasonOf(throttled)
		if spent := now.Sub(a.ThrottledSince); p.MaxThrottled > 0 && spent >= p.MaxThrottled {
			return Verdict{Act: ActFail, State: FailedOr(delivered),
				Cause: fmt.Errorf("throttled by the provider (%s) for %s, HUSH_MAX_THROTTLED is %s", reason, spent.Round(time.Second), p.MaxThrottled)}
		}
		delay, past := RetryAfterOr(throttled, a.Refusals, now, until, a.ThrottledSince, p.MaxThrottled)
		if past {
			return Verdict{Act: ActFail, State: FailedOr(delivered),
				Cause: fmt.Errorf("throttled by the provider (%s), who asks to wait %s, past HUSH_MAX_THROTTLED (%s)", reason, throttled.RetryAfter, p.MaxThrottled)}
		}
		return Verdict{Act: ActRetry, Throttled: true, Release: called && released && !carried,
			Delay: delay, Cause: errors.New(reason)}
	case transient != nil:
		kind := "transient provider failure"
		if transient.Credential {
			kind = "credentials refused"
		}
		cause := fmt.Errorf("%s (%s): %w", kind, ReasonOf(transient), ErrOf(transient))
		if a.Failures >= p.MaxRetry {
			return Verdict{Act: ActFail, State: FailedOr(delivered),
				Cause: fmt.Errorf("giving up after %d retries: %w", a.Failures, cause)}
		}
		delay, _ := RetryAfterOr(transient, a.Refusals, now, until, time.Time{}, 0)
		return Verdict{Act: ActRetry, Transient: true, Release: called && released && !carried,
			Delay: delay, Cause: cause}
	case called && !released, carried:
		// A device has the push under this attempt's booking (answered
		// now, or recorded before), the rest were late: the booking is
		// spent; the rest go under a new one at once.
		return Verdict{Act: ActRetry, Cause: errors.New("devices left late for their slot")}
	}
	// Nothing reached the user under this attempt's booking (the devices
	// left were late, and any that has the push got it under an earlier
	// attempt's): book again, same attempt.
	return Verdict{Act: ActRebook}
}

// RetryAfterOr is the one home of a retry's delay: the provider's
// Retry-After, else the backoff after n refusals (Attempts.Refusals),
// clamped so the retry runs no later than until (the delivery's deadline
// or its records' end, task.RetryUntil), where it ends in its final state
// (expired) rather than waiting past it. past reports a throttled retry
// (throttledSince set) that would run after HUSH_MAX_THROTTLED
// (maxThrottled, 0: no bound) from throttledSince, before until: the
// delivery fails now instead.
func RetryAfterOr(r *providers.Result, n int, now, until, throttledSince time.Time, maxThrottled time.Duration) (delay time.Duration, past bool) {
	delay = r.RetryAfter
	if delay <= 0 || mutant.On("retryAfterIgnored") {
		delay = Backoff(n)
	}
	at := now.Add(delay)
	if !until.IsZero() && at.After(until) {
		at = until
	}
	if !throttledSince.IsZero() && maxThrottled > 0 && at.After(throttledSince.Add(maxThrottled)) {
		return 0, true
	}
	return max(at.Sub(now), 0), false
}

// Backoff is the delay before retry n: exponential with full jitter on
// the upper half, about 1 s, 2 s, 4 s ... capped at 5 minutes, so a
// provider that refuses is asked less and less often.
func Backoff(n int) time.Duration {
	const base, limit = time.Second, 5 * time.Minute
	d := limit
	if n < 20 {
		d = min(base<<n, limit)
	}
	return d/2 + rand.N(d/2+1)
}

// DeviceState is the final state a provider's outcome gives a device:
// delivered, token invalid, or "" (not settled: the device is tried
// again or fails with its recipient).
func DeviceState(o providers.Outcome) string {
	switch o {
	case providers.Delivered:
		if mutant.On("countsLost") {
			return task.TokenInvalid
		}
		return task.Delivered
	case providers.TokenInvalid:
		return task.TokenInvalid
	}
	return ""
}

// FailedOr is the final state of a recipient that fails: delivered when
// a device has the push (delivered), else failed.
func FailedOr(delivered bool) string {
	if delivered {
		return task.Delivered
	}
	return task.Failed
}

// ReasonOf names a provider's answer for logs, events and errors: its
// reason, else its status code, else whether it is an error.
func ReasonOf(r *providers.Result) string {
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

// ErrOf is the result's error, or a sentinel naming the outcome.
func ErrOf(r *providers.Result) error {
	if r.Err != nil {
		return r.Err
	}
	return errProvider
}

var errProvider = errors.New("provider answer")
