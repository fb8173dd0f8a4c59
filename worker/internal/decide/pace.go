package decide

import "time"

// PaceLate is the most a paced send leaves after its turn; a call that
// would leave later is not made then. It sets the rate bound
// (worker.MaxRateBound).
const PaceLate = 25 * time.Millisecond

// PaceSlack is the most a turn may be after its recipient's slot for the
// recipient to be sent at it: the send then leaves at most LateRebook
// after its slot.
const PaceSlack = LateRebook - PaceLate

// PaceVerdict decides what a recipient's earliest turn means: hold is
// true when the turn (first, on the limiter's clock) is more than
// PaceSlack after its slot (at, the limiter's clock; zero: no slot), or
// the same instant on the local clock (local) is at or after its deadline
// (zero: none). Its other devices' turns follow, 1/rate apart on one
// platform; one that would leave more than LateRebook after the slot is
// not made then (the booking's send bound) and goes under the next
// attempt.
func PaceVerdict(at, first, local, deadline time.Time) (hold bool) {
	return !at.IsZero() && first.Sub(at) > PaceSlack || !deadline.IsZero() && !local.Before(deadline)
}
