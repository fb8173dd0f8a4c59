package decide

import (
	"time"

	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/task"
)

// Holder is who routes a plan (RoutePlan): what it does itself, and what
// it leaves to the delivery's own task.
type Holder int

const (
	// ByDelivery: a delivery task, which carries out every step itself.
	ByDelivery Holder = iota
	// ByWave: a chunk's wave, with fresh first bookings: it sends what is
	// due now, holds back a near or far slot (held tasks), and leaves
	// every other step to the delivery task.
	ByWave
	// ByHeld: a held task's wave (or a hush:waiting-jobs member), woken
	// for its slots: it waits for a near slot itself; a far one means it
	// was woken early (a cancellation or a collapse woke it), and the
	// delivery task waits for the slot. The deferral was counted and
	// logged when the recipient was first held back.
	ByHeld
	// ByTurn: a wave booking again from a paced turn: it sends a near
	// slot; the delivery task takes the rest.
	ByTurn
)

// Move is what the holder of a booking does with it.
type Move int

const (
	// MoveSend: send at the slot, now or after waiting for it in place.
	MoveSend Move = iota
	// MoveNear: the slot is near: wait for it in a held task of this
	// second (or in the delivery task, in place).
	MoveNear
	// MoveDefer: the slot is far: come back after delay, shortly before
	// it (a delivery task's DeferError, a wave's held task).
	MoveDefer
	// MoveHand: hand the recipient to its delivery task, to run after
	// delay, which plans its booking again.
	MoveHand
	// MoveDrop: drop the delivery with the final state reason.
	MoveDrop
	// MoveRebook: give the booking back and book again, same attempt.
	MoveRebook
	// MoveNext: book under the next attempt's member, keeping this one.
	MoveNext
)

var moveNames = [...]string{"send", "near", "defer", "hand", "drop", "rebook", "next"}

// String names the move, as logs and tests print it.
func (m Move) String() string { return moveNames[m] }

// PlansItself reports whether holder by plans reservation r itself
// (Plan, then RoutePlan); when not, it hands the recipient to its delivery
// task unplanned, which books again and knows what its slot means. Every
// holder hands over a failed booking. A wave hands over a slot an earlier
// run booked (only a held task's wave expects to find its chunk's
// bookings); a wave booking again from a turn hands over a found or
// refused one too, which its task books again and reports.
func PlansItself(r throttle.Reservation, by Holder) bool {
	if r.Now.IsZero() && r.Refused == "" {
		return false
	}
	switch by {
	case ByWave:
		return !r.Existing
	case ByTurn:
		return !r.Existing && r.Refused == ""
	}
	return true
}

// RouteTurn is RoutePlan for a wave booking again from a paced turn
// (ByTurn): a send whose slot at the user's rules moved more than PaceLate
// past its turn (both on the limiter's clock) is handed over: its task
// finds the booking, waits for it and paces again there.
func RouteTurn(p Planned, at, turn time.Time) Routed {
	rt := RoutePlan(p, ByTurn)
	if rt.Move == MoveSend && at.Sub(turn) > PaceLate {
		return Routed{Move: MoveHand}
	}
	return rt
}

// Routed is RoutePlan's answer.
type Routed struct {
	Move Move
	// Delay before the delivery runs again (MoveDefer, MoveHand).
	Delay time.Duration
	// Reason is the final state of a drop (MoveDrop); ReplacedBy, for
	// task.Collapsed, the member of the push that took its place.
	Reason, ReplacedBy string
	// Deferred: the delivery starts waiting for a far slot, which is
	// logged with its slot.
	Deferred bool
}

// RoutePlan turns plan p into what holder by does: the one route from a
// booking's plan to an action, which every path that books (a chunk's
// waves, held tasks, a wave rebooking at a paced turn, delivery tasks)
// takes.
func RoutePlan(p Planned, by Holder) Routed {
	switch p.Step {
	case StepSend:
		return Routed{Move: MoveSend}
	case StepWait:
		if by == ByWave {
			return Routed{Move: MoveNear}
		}
		return Routed{Move: MoveSend}
	case StepDefer:
		switch by {
		case ByDelivery:
			return Routed{Move: MoveDefer, Delay: p.Wait, Deferred: true}
		case ByWave:
			return Routed{Move: MoveDefer, Delay: DeferDelay(p.Wait), Deferred: true}
		case ByHeld:
			return Routed{Move: MoveHand, Delay: DeferDelay(p.Wait)}
		}
		return Routed{Move: MoveHand, Delay: DeferDelay(p.Wait), Deferred: true}
	}
	if by != ByDelivery {
		// Expired, full, collapsed or opted out (dropped there), or
		// stalled (booked again there).
		return Routed{Move: MoveHand}
	}
	switch p.Step {
	case StepFull:
		return Routed{Move: MoveDrop, Reason: task.ThrottleFull}
	case StepExpire:
		return Routed{Move: MoveDrop, Reason: task.Expired}
	case StepCollapsed:
		return Routed{Move: MoveDrop, Reason: task.Collapsed, ReplacedBy: p.ReplacedBy}
	case StepOptedOut:
		return Routed{Move: MoveDrop, Reason: task.OptedOut}
	case StepRebook:
		return Routed{Move: MoveRebook}
	}
	return Routed{Move: MoveNext}
}

// DeferDelay turns a wait into the Asynq retry delay: WakeMargin early, at
// least 1 s.
func DeferDelay(wait time.Duration) time.Duration {
	return max(wait-WakeMargin, time.Second)
}

// Dest is where a chunk's run puts a recipient it hands off.
type Dest int

const (
	// ToWaitingJobs: the hush:waiting-jobs group of its second of waking,
	// for a single-recipient job that a batch or job task runs.
	ToWaitingJobs Dest = iota
	// ToHeld: the hush:held task of its chunk and second of waking.
	ToHeld
	// ToOwner: the task its held marker names already (a held task's
	// recipient given to its delivery task before): created again, the
	// marker kept.
	ToOwner
	// ToDelivery: its own hush:delivery task, marked as its owner first.
	ToDelivery
)

var destNames = [...]string{"waiting-jobs", "held", "owner", "delivery"}

// String names the destination, as logs and tests print it.
func (d Dest) String() string { return destNames[d] }

// HandoffDest is where a handed-off recipient goes: deferred (its slot is
// further than a wait in place) or near (within one), foreign (its marker
// names its delivery task already); the run takes single-recipient jobs
// into waiting-jobs groups (jobs), runs a held task (held), or groups its
// deferred recipients into held tasks (grouping). A near recipient waits
// in a held task too where the run groups: in its delivery task it would
// wait in place in a delivery slot, and a burst of them takes every slot.
func HandoffDest(deferred, near, foreign, jobs, held, grouping bool) Dest {
	switch {
	case deferred && jobs && !held:
		return ToWaitingJobs
	case (deferred || near && !jobs) && grouping:
		return ToHeld
	case foreign:
		return ToOwner
	}
	return ToDelivery
}

// PacedNear reports whether a recipient the send rate held, whose turn is
// at turn, is booked again by its wave (its turn within MaxInlineWait of
// now, and before its deadline) rather than handed to its delivery task.
func PacedNear(turn, now, deadline time.Time) bool {
	return turn.Sub(now) <= MaxInlineWait && (deadline.IsZero() || turn.Before(deadline))
}
