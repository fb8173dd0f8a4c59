package decide

import (
	"time"

	"github.com/hushpush/hush/internal/mutant"
	"github.com/hushpush/hush/throttle"
)

// WakeMargin is how much earlier than its slot a deferred delivery asks
// Asynq to wake it. Asynq stores retry times in whole seconds (truncated:
// up to 1 s early), moves due tasks every half second, and a worker polls
// its empty queues every 125-375 ms and spares a queue found empty a
// while, so the delivery wakes between WakeMargin+1 s before its slot and
// about 0.1 s before it, and sleeps the rest in the handler.
const WakeMargin = time.Second

// MaxInlineWait is the longest wait done inside the handler instead of
// deferring through Asynq; it covers the wake-up window of WakeMargin.
const MaxInlineWait = WakeMargin + 1500*time.Millisecond

// LateRebook: a delivery that finds its booked slot more than this in the
// past (it woke late: the queue was busy, the process was restarted) books
// a new slot instead of sending now, because a late send could land too
// close to the user's next booked push. Well under the 250 ms tolerance.
const LateRebook = 100 * time.Millisecond

// Step is what a delivery does with its booking.
type Step int

const (
	// StepSend: the slot is now (or just past): send.
	StepSend Step = iota
	// StepWait: the slot is near (at most MaxInlineWait): wait for it in
	// place, then send.
	StepWait
	// StepDefer: the slot is far: come back shortly before it.
	StepDefer
	// StepExpire: the slot is at or after the deadline: drop as expired.
	StepExpire
	// StepFull: the user holds the most bookings allowed: drop.
	StepFull
	// StepRebook: an existing booking is late and nothing has reached the
	// user under it: give it back and book again under the same member.
	StepRebook
	// StepNext: an existing booking is late and a device has, or may have,
	// the push under it (Attempts.Carries): book under the next attempt's
	// member, keeping this one.
	StepNext
	// StepCollapsed: a newer push for the user with the same collapse key
	// took this one's place while it was held: drop.
	StepCollapsed
	// StepOptedOut: the user opted out of the push's category (the
	// limiter booked nothing, and gave back a booking the member held):
	// drop.
	StepOptedOut
)

var stepNames = [...]string{"send", "wait", "defer", "expire", "full", "rebook", "next", "collapsed", "opted_out"}

// String names the step, as logs and tests print it.
func (s Step) String() string { return stepNames[s] }

// Planned is Plan's answer.
type Planned struct {
	Step Step
	// Slot is the booked instant on the local clock (StepSend, StepWait,
	// StepDefer).
	Slot time.Time
	// Wait is Slot - now (StepWait, StepDefer).
	Wait time.Duration
	// HeldBy names the limiter's rule that holds the slot
	// (throttle.Reservation.HeldBy; StepWait, StepDefer, StepExpire).
	HeldBy string
	// ReplacedBy is the limiter member of the push that took this one's
	// place (throttle.Reservation.ReplacedBy; StepCollapsed).
	ReplacedBy string
}

// Plan decides what reservation r means at now. mid is the local instant
// the limiter most likely read its clock (the middle of the booking's round
// trip), so the slot on the local clock is about mid + r.Wait whatever the
// skew between the two clocks: lateness is measured from there. answered
// is when the booking's answer arrived; the limiter read its clock before
// that, so the slot a push waits for (Planned.Slot) is answered + r.Wait,
// never before the limiter's slot (at most the round trip after it).
// deadline is the delivery's expiry (zero: none); carried says a device
// of the recipient has, or may have, the push under this booking
// (Attempts.Carries): a late one is kept then (StepNext).
func Plan(r throttle.Reservation, mid, answered, now, deadline time.Time, carried bool) Planned {
	switch r.Refused {
	case throttle.RefusedFull:
		return Planned{Step: StepFull}
	case throttle.RefusedLate:
		return Planned{Step: StepExpire, HeldBy: r.HeldBy}
	case throttle.RefusedCollapsed:
		return Planned{Step: StepCollapsed, ReplacedBy: r.ReplacedBy}
	case throttle.RefusedOptedOut:
		if mutant.On("optOutIgnored") {
			break // sent as if the user had not opted out
		}
		return Planned{Step: StepOptedOut}
	}
	slot := answered.Add(r.Wait)
	late := now.Sub(mid.Add(r.Wait))
	if r.Existing {
		late = max(late, r.Now.Sub(r.At))
	}
	if late > LateRebook {
		if r.Existing && carried {
			return Planned{Step: StepNext}
		}
		// A new booking only goes late when this process stalled between
		// booking and now; either way nothing was sent under it yet (a
		// device that has the push got it under an earlier attempt's
		// booking, which stays).
		return Planned{Step: StepRebook}
	}
	if !deadline.IsZero() && !slot.Before(deadline) {
		return Planned{Step: StepExpire, HeldBy: r.HeldBy}
	}
	wait := slot.Sub(now)
	switch {
	case wait <= 0:
		return Planned{Step: StepSend, Slot: slot}
	case wait <= MaxInlineWait:
		return Planned{Step: StepWait, Slot: slot, Wait: wait, HeldBy: r.HeldBy}
	}
	return Planned{Step: StepDefer, Slot: slot, Wait: wait, HeldBy: r.HeldBy}
}
