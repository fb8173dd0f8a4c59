package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/task"
)

// The decisions every path that books and sends makes (a chunk's waves,
// held tasks, hush:waiting-jobs members, a wave rebooking at a paced turn,
// delivery tasks), as pure functions of their inputs and the time:
//
//   - plansItself: whether the path holding a booking plans it, or hands
//     it to its delivery task unplanned;
//   - plan: what a booking means now: send, wait in place, come back
//     later, drop, or book again;
//   - routePlan (routeTurn for a booking from a paced turn): what the path
//     holding the booking does with that plan: send, hold it back, hand it
//     to its delivery task, drop, or book again;
//   - judge: what a recipient's device answers mean: done, try again
//     (under a new booking), book again, fail, or stop for shutdown.
//
// Each path calls them and carries out their answer; none decides a step
// itself. They are pure so that a table test covers every case
// (decide_test.go).

// step is what a delivery does with its booking.
type step int

const (
	// stepSend: the slot is now (or just past): send.
	stepSend step = iota
	// stepWait: the slot is near (at most maxInlineWait): wait for it in
	// place, then send.
	stepWait
	// stepDefer: the slot is far: come back shortly before it.
	stepDefer
	// stepExpire: the slot is at or after the deadline: drop as expired.
	stepExpire
	// stepFull: the user holds the most bookings allowed: drop.
	stepFull
	// stepRebook: an existing booking is late and nothing has reached the
	// user under it: give it back and book again under the same member.
	stepRebook
	// stepNext: an existing booking is late and a device has, or may have,
	// the push under it (attempts.carries): book under the next attempt's
	// member, keeping this one.
	stepNext
	// stepCollapsed: a newer push for the user with the same collapse key
	// took this one's place while it was held: drop.
	stepCollapsed
	// stepOptedOut: the user opted out of the push's category (the
	// limiter booked nothing, and gave back a booking the member held):
	// drop.
	stepOptedOut
)

var stepNames = [...]string{"send", "wait", "defer", "expire", "full", "rebook", "next", "collapsed", "opted_out"}

func (s step) String() string { return stepNames[s] }

// planned is plan's answer.
type planned struct {
	step step
	// slot is the booked instant on the local clock (stepSend, stepWait,
	// stepDefer).
	slot time.Time
	// wait is slot - now (stepWait, stepDefer).
	wait time.Duration
	// heldBy names the limiter's rule that holds the slot
	// (throttle.Reservation.HeldBy; stepWait, stepDefer, stepExpire).
	heldBy string
	// replacedBy is the limiter member of the push that took this one's
	// place (throttle.Reservation.ReplacedBy; stepCollapsed).
	replacedBy string
}

// plan decides what reservation r means at now. mid is the local instant
// the limiter most likely read its clock (the middle of the booking's round
// trip), so the slot on the local clock is about mid + r.Wait whatever the
// skew between the two clocks: lateness is measured from there. answered
// is when the booking's answer arrived; the limiter read its clock before
// that, so the slot a push waits for (planned.slot) is answered + r.Wait,
// never before the limiter's slot (at most the round trip after it).
// deadline is the delivery's expiry (zero: none); carried says a device
// of the recipient has, or may have, the push under this booking
// (attempts.carries): a late one is kept then (stepNext).
func plan(r throttle.Reservation, mid, answered, now, deadline time.Time, carried bool) planned {
	switch r.Refused {
	case throttle.RefusedFull:
		return planned{step: stepFull}
	case throttle.RefusedLate:
		return planned{step: stepExpire, heldBy: r.HeldBy}
	case throttle.RefusedCollapsed:
		return planned{step: stepCollapsed, replacedBy: r.ReplacedBy}
	case throttle.RefusedOptedOut:
		if mutant("optOutIgnored") {
			break // sent as if the user had not opted out
		}
		return planned{step: stepOptedOut}
	}
	slot := answered.Add(r.Wait)
	late := now.Sub(mid.Add(r.Wait))
	if r.Existing {
		late = max(late, r.Now.Sub(r.At))
	}
	if late > lateRebook {
		if r.Existing && carried {
			return planned{step: stepNext}
		}
		// A new booking only goes late when this process stalled between
		// booking and now; either way nothing was sent under it yet (a
		// device that has the push got it under an earlier attempt's
		// booking, which stays).
		return planned{step: stepRebook}
	}
	if !deadline.IsZero() && !slot.Before(deadline) {
		return planned{step: stepExpire, heldBy: r.HeldBy}
	}
	wait := slot.Sub(now)
	switch {
	case wait <= 0:
		return planned{step: stepSend, slot: slot}
	case wait <= maxInlineWait:
		return planned{step: stepWait, slot: slot, wait: wait, heldBy: r.HeldBy}
	}
	return planned{step: stepDefer, slot: slot, wait: wait, heldBy: r.HeldBy}
}

// holder is who routes a plan (routePlan): what it does itself, and what it
// leaves to the delivery's own task.
type holder int

const (
	// byDelivery: a delivery task, which carries out every step itself.
	byDelivery holder = iota
	// byWave: a chunk's wave, with fresh first bookings: it sends what is
	// due now, holds back a near or far slot (held tasks), and leaves
	// every other step to the delivery task.
	byWave
	// byHeld: a held task's wave (or a hush:waiting-jobs member), woken
	// for its slots: it waits for a near slot itself; a far one means it
	// was woken early (a cancellation or a collapse woke it), and the
	// delivery task waits for the slot. The deferral was counted and
	// logged when the recipient was first held back.
	byHeld
	// byTurn: a wave booking again from a paced turn (rebookNear): it
	// sends a near slot; the delivery task takes the rest.
	byTurn
)

// move is what the holder of a booking does with it.
type move int

const (
	// moveSend: send at the slot, now or after waiting for it in place.
	moveSend move = iota
	// moveNear: the slot is near: wait for it in a held task of this
	// second (or in the delivery task, in place).
	moveNear
	// moveDefer: the slot is far: come back after delay, shortly before
	// it (a delivery task's DeferError, a wave's held task).
	moveDefer
	// moveHand: hand the recipient to its delivery task, to run after
	// delay, which plans its booking again.
	moveHand
	// moveDrop: drop the delivery with the final state reason.
	moveDrop
	// moveRebook: give the booking back and book again, same attempt.
	moveRebook
	// moveNext: book under the next attempt's member, keeping this one.
	moveNext
)

var moveNames = [...]string{"send", "near", "defer", "hand", "drop", "rebook", "next"}

func (m move) String() string { return moveNames[m] }

// plansItself reports whether holder by plans reservation r itself
// (plan, then routePlan); when not, it hands the recipient to its delivery
// task unplanned, which books again and knows what its slot means. Every
// holder hands over a failed booking. A wave hands over a slot an earlier
// run booked (only a held task's wave expects to find its chunk's
// bookings); a wave booking again from a turn hands over a found or
// refused one too, which its task books again and reports.
func plansItself(r throttle.Reservation, by holder) bool {
	if r.Now.IsZero() && r.Refused == "" {
		return false
	}
	switch by {
	case byWave:
		return !r.Existing
	case byTurn:
		return !r.Existing && r.Refused == ""
	}
	return true
}

// routeTurn is routePlan for a wave booking again from a paced turn
// (byTurn): a send whose slot at the user's rules moved more than paceLate
// past its turn (both on the limiter's clock) is handed over: its task
// finds the booking, waits for it and paces again there.
func routeTurn(p planned, at, turn time.Time) routed {
	rt := routePlan(p, byTurn)
	if rt.move == moveSend && at.Sub(turn) > paceLate {
		return routed{move: moveHand}
	}
	return rt
}

// routed is routePlan's answer.
type routed struct {
	move move
	// delay before the delivery runs again (moveDefer, moveHand).
	delay time.Duration
	// reason is the final state of a drop (moveDrop); replacedBy, for
	// task.Collapsed, the member of the push that took its place.
	reason, replacedBy string
	// deferred: the delivery starts waiting for a far slot, which is
	// logged with its slot (logDeferred).
	deferred bool
}

// routePlan turns plan p into what holder by does: the one route from a
// booking's plan to an action, which every path that books (a chunk's
// waves, held tasks, a wave rebooking at a paced turn, delivery tasks)
// takes.
func routePlan(p planned, by holder) routed {
	switch p.step {
	case stepSend:
		return routed{move: moveSend}
	case stepWait:
		if by == byWave {
			return routed{move: moveNear}
		}
		return routed{move: moveSend}
	case stepDefer:
		switch by {
		case byDelivery:
			return routed{move: moveDefer, delay: p.wait, deferred: true}
		case byWave:
			return routed{move: moveDefer, delay: deferDelay(p.wait), deferred: true}
		case byHeld:
			return routed{move: moveHand, delay: deferDelay(p.wait)}
		}
		return routed{move: moveHand, delay: deferDelay(p.wait), deferred: true}
	}
	if by != byDelivery {
		// Expired, full, collapsed or opted out (dropped there), or
		// stalled (booked again there).
		return routed{move: moveHand}
	}
	switch p.step {
	case stepFull:
		return routed{move: moveDrop, reason: task.ThrottleFull}
	case stepExpire:
		return routed{move: moveDrop, reason: task.Expired}
	case stepCollapsed:
		return routed{move: moveDrop, reason: task.Collapsed, replacedBy: p.replacedBy}
	case stepOptedOut:
		return routed{move: moveDrop, reason: task.OptedOut}
	case stepRebook:
		return routed{move: moveRebook}
	}
	return routed{move: moveNext}
}

// dest is where a chunk's run puts a recipient it hands off.
type dest int

const (
	// toWaitingJobs: the hush:waiting-jobs group of its second of waking,
	// for a single-recipient job that a batch or job task runs.
	toWaitingJobs dest = iota
	// toHeld: the hush:held task of its chunk and second of waking.
	toHeld
	// toOwner: the task its held marker names already (a held task's
	// recipient given to its delivery task before): created again, the
	// marker kept.
	toOwner
	// toDelivery: its own hush:delivery task, marked as its owner first.
	toDelivery
)

var destNames = [...]string{"waiting-jobs", "held", "owner", "delivery"}

func (d dest) String() string { return destNames[d] }

// handoffDest is where a handed-off recipient goes: deferred (its slot is
// further than a wait in place) or near (within one), foreign (its marker
// names its delivery task already); the run takes single-recipient jobs
// into waiting-jobs groups (jobs), runs a held task (held), or groups its
// deferred recipients into held tasks (grouping). A near recipient waits
// in a held task too where the run groups: in its delivery task it would
// wait in place in a delivery slot, and a burst of them takes every slot.
func handoffDest(deferred, near, foreign, jobs, held, grouping bool) dest {
	switch {
	case deferred && jobs && !held:
		return toWaitingJobs
	case (deferred || near && !jobs) && grouping:
		return toHeld
	case foreign:
		return toOwner
	}
	return toDelivery
}

// pacedNear reports whether a recipient the send rate held, whose turn is
// at turn, is booked again by its wave (its turn within maxInlineWait of
// now, and before its deadline) rather than handed to its delivery task.
func pacedNear(turn, now, deadline time.Time) bool {
	return turn.Sub(now) <= maxInlineWait && (deadline.IsZero() || turn.Before(deadline))
}

// action is what a recipient does after an attempt.
type action int

const (
	// actDone: every device is settled; state is final.
	actDone action = iota
	// actRetry: try the devices left again after delay, under the next
	// attempt's booking.
	actRetry
	// actRebook: nothing left for the provider (late for the slot), and
	// nothing reached the user under this attempt's booking: give it back
	// and book again, same attempt.
	actRebook
	// actFail: the delivery ends with state (failed, or delivered when a
	// device has it) and reason; its task is archived.
	actFail
	// actStop: shutdown interrupted the attempt: hand the delivery back as
	// it is.
	actStop
)

var actionNames = [...]string{"done", "retry", "rebook", "fail", "stop"}

func (a action) String() string { return actionNames[a] }

// verdict is judge's answer.
type verdict struct {
	act   action
	state string // actDone, actFail
	// release: the attempt's booking can be given back: nothing reached the
	// user under it (every token dead, or every answer a refusal).
	release bool
	// delay before the retry (actRetry).
	delay time.Duration
	// throttled: the retry is for provider throttling (not a failure);
	// transient: for a transient failure (counts against HUSH_MAX_RETRY).
	throttled, transient bool
	// cause of a retry or failure.
	cause error
}

// attempts is a delivery's attempt history, kept in its job's records.
type attempts struct {
	// n is the number of attempts made before the current one (0 on the
	// first); the current attempt books task.Member(job, index, n).
	n int
	// failures counts attempts that ended in a transient failure.
	failures int
	// refusals counts attempts a provider refused: throttled, or failed
	// transiently. The backoff grows with it, not with n, which counts
	// attempts whose devices were left late for their slot too.
	refusals int
	// throttledSince is when a provider first throttled the delivery (zero:
	// never).
	throttledSince time.Time
	// paced is the send time a pacer granted the delivery's next send, on
	// the limiter's clock (zero: none); its booking is made no earlier.
	// pacedTold: the pacer held that time back (pacedTurn.told).
	paced     time.Time
	pacedTold bool
	// pushedUnder is, per device, the attempt under which its push was
	// recorded delivered (-1: not recorded; nil: none read). Only the
	// booking of such an attempt carries a push; a later attempt that
	// sends nothing gives its own back.
	pushedUnder []int
	// retryAt: the current attempt calls no provider before it (a
	// provider's Retry-After or the backoff, recorded with the attempt by
	// nextAttempt; zero: none), whichever run or process makes it.
	retryAt time.Time
	// unsettled: a run of the current attempt may have ended during its
	// provider call without recording the answer (afterUnsettled), so
	// its booking may carry a push.
	unsettled bool
}

// afterUnsettled reports whether a delivery task's run may follow a run
// that ended during a provider call without recording its answer: Asynq
// counts more failed runs of the task (retried, asynq.GetRetryCount) than
// the transient failures hush recorded for the recipient (failures), and
// each retry hush decides itself records one. A run Asynq counts beyond
// them ended otherwise: its lease expired (its process was killed or
// stalled) or it failed on its own records. Hush's other hand-backs (a
// deferral, a provider's throttling, shutdown) are no failures to Asynq.
func afterUnsettled(retried, failures int) bool { return retried > failures }

// begun reports whether the recipient's records hold any attempt history
// (a retry, a throttling, a paced turn): its delivery task knows what to
// make of it.
func (a attempts) begun() bool {
	return a.n > 0 || a.failures > 0 || !a.throttledSince.IsZero() || !a.paced.IsZero() || a.pacedTold
}

// carries reports whether the booking of the current attempt (a.n) may
// carry a push a device has (states): a device recorded delivered under
// it, or delivered without a record of its attempt (an older process's
// record, or a one-device recipient's, which never needs one). Only such
// a booking is kept when the attempt sends nothing more; every other one
// goes back, so that bookings of attempts that reached nobody do not pile
// up in the user's rules. An unsettled attempt's booking may carry one
// too: the push may have gone out at its slot with nothing recorded.
func (a attempts) carries(states []string) bool {
	if a.unsettled {
		return true
	}
	for j, st := range states {
		if st != task.Delivered {
			continue
		}
		if j >= len(a.pushedUnder) || a.pushedUnder[j] < 0 || a.pushedUnder[j] >= a.n {
			return true
		}
	}
	return false
}

// retryPolicy bounds retries.
type retryPolicy struct {
	// maxRetry is the most retries after transient failures (HUSH_MAX_RETRY).
	maxRetry int
	// maxThrottled is the most time a delivery may spend throttled by a
	// provider before it fails (HUSH_MAX_THROTTLED; 0: no bound besides
	// the delivery's expiry).
	maxThrottled time.Duration
}

// judge turns a recipient's device states (recorded before this attempt,
// "" for unsettled) and this attempt's answers (nil: not sent) into what
// happens next. until is the latest instant a retry may run (retryUntil);
// interrupted says shutdown stopped the attempt.
func judge(states []string, results []*providers.Result, a attempts, p retryPolicy, now, until time.Time, interrupted bool) verdict {
	var throttled, transient, permanent *providers.Result
	delivered, pending, called := false, false, false
	released := true // every call this attempt was refused by the provider
	carried := a.carries(states)
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
			st = deviceState(r.Outcome)
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
		return verdict{act: actDone, state: task.Delivered, release: !carried && (!called || released)}
	case !pending:
		// Every token is dead: nothing reached the user.
		return verdict{act: actDone, state: task.TokenInvalid, release: true}
	case permanent != nil:
		return verdict{act: actFail, state: failedOr(delivered),
			cause: fmt.Errorf("permanent provider failure (%s): %w", reasonOf(permanent), errOf(permanent))}
	case interrupted && throttled == nil:
		return verdict{act: actStop}
	case throttled != nil:
		// Even when shutdown interrupted the attempt: the retry is
		// recorded with the provider's Retry-After (attempts.retryAt), so
		// the run that takes the delivery over waits it out.
		if a.throttledSince.IsZero() {
			a.throttledSince = now
		}
		reason := reasonOf(throttled)
		if spent := now.Sub(a.throttledSince); p.maxThrottled > 0 && spent >= p.maxThrottled {
			return verdict{act: actFail, state: failedOr(delivered),
				cause: fmt.Errorf("throttled by the provider (%s) for %s, HUSH_MAX_THROTTLED is %s", reason, spent.Round(time.Second), p.maxThrottled)}
		}
		delay, past := retryAfterOr(throttled, a.refusals, now, until, a.throttledSince, p.maxThrottled)
		if past {
			return verdict{act: actFail, state: failedOr(delivered),
				cause: fmt.Errorf("throttled by the provider (%s), who asks to wait %s, past HUSH_MAX_THROTTLED (%s)", reason, throttled.RetryAfter, p.maxThrottled)}
		}
		return verdict{act: actRetry, throttled: true, release: called && released && !carried,
			delay: delay, cause: errors.New(reason)}
	case transient != nil:
		kind := "transient provider failure"
		if transient.Credential {
			kind = "credentials refused"
		}
		cause := fmt.Errorf("%s (%s): %w", kind, reasonOf(transient), errOf(transient))
		if a.failures >= p.maxRetry {
			return verdict{act: actFail, state: failedOr(delivered),
				cause: fmt.Errorf("giving up after %d retries: %w", a.failures, cause)}
		}
		delay, _ := retryAfterOr(transient, a.refusals, now, until, time.Time{}, 0)
		return verdict{act: actRetry, transient: true, release: called && released && !carried,
			delay: delay, cause: cause}
	case called && !released, carried:
		// A device has the push under this attempt's booking (answered
		// now, or recorded before), the rest were late: the booking is
		// spent; the rest go under a new one at once.
		return verdict{act: actRetry, cause: errors.New("devices left late for their slot")}
	}
	// Nothing reached the user under this attempt's booking (the devices
	// left were late, and any that has the push got it under an earlier
	// attempt's): book again, same attempt.
	return verdict{act: actRebook}
}

// retryAfterOr is the one home of a retry's delay: the provider's
// Retry-After, else the backoff after n refusals (attempts.refusals),
// clamped so the retry runs
// no later than until (the delivery's deadline or its records' end,
// retryUntil), where it ends in its final state (expired) rather than
// waiting past it. past reports a throttled retry (throttledSince set)
// that would run after HUSH_MAX_THROTTLED (maxThrottled, 0: no bound)
// from throttledSince, before until: the delivery fails now instead.
func retryAfterOr(r *providers.Result, n int, now, until, throttledSince time.Time, maxThrottled time.Duration) (delay time.Duration, past bool) {
	delay = r.RetryAfter
	if delay <= 0 || mutant("retryAfterIgnored") {
		delay = backoff(n)
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

func deviceState(o providers.Outcome) string {
	switch o {
	case providers.Delivered:
		if mutant("countsLost") {
			return task.TokenInvalid
		}
		return task.Delivered
	case providers.TokenInvalid:
		return task.TokenInvalid
	}
	return ""
}

func failedOr(delivered bool) string {
	if delivered {
		return task.Delivered
	}
	return task.Failed
}
