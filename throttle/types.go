package throttle

import "time"

// Limit is one rolling-window cap: at most N recorded actions in any window
// of length Window.
type Limit struct {
	N      int
	Window time.Duration
}

// Policy is the set of rules a limiter enforces for every user: all Limits
// at once, plus at least MinGap between two recorded actions.
type Policy struct {
	Limits []Limit
	MinGap time.Duration
}

// Decision is the answer to Allow or Peek. Being limited is a result, not an
// error.
type Decision struct {
	Allowed bool
	// RetryAfter is the time left until the action would be allowed; 0 when
	// allowed.
	RetryAfter time.Duration
	// DeniedBy names the rule that set RetryAfter: a Limit's String ("10/1m")
	// or "min-gap 3s". Empty when allowed.
	DeniedBy string
	// Remaining is, per Policy.Limits in order, how many more actions the
	// window ending now would accept (after this decision was recorded).
	Remaining []int
	// Now is the limiter's clock at the decision.
	Now time.Time
}

// Reservation is the answer to Reserve: a booked slot, or, when Refused is
// set, the reason nothing was booked.
type Reservation struct {
	// At is the booked instant (the recorded entry's timestamp). When
	// Refused is set nothing was booked and At is the instant its Refusal
	// names.
	At time.Time
	// Wait is At minus the limiter's now, 0 when the slot is now or past.
	// Callers act on Wait rather than At, so their own clock skew is harmless.
	Wait time.Duration
	// Existing is true when the member already held this slot (idempotent
	// re-booking). An existing booking is never refused.
	Existing bool
	// Refused is why nothing was booked for a new member; empty when the
	// member holds the slot At (booked now or, with Existing, before).
	Refused Refusal
	// Now is the limiter's clock at the booking.
	Now time.Time
}

// Refusal says why Reserve or ReserveBatch booked nothing for a new member.
// The empty Refusal means the reservation holds its slot; a refused
// reservation is told apart from a booked one by this field alone (its At
// and Wait are set too, with the meaning below).
type Refusal string

const (
	// RefusedFull: the user already holds Options.MaxPending entries after
	// now. At is the earliest of them: the cap frees no place before it
	// comes due, unless a booking is released. The limiter decided this
	// without looking for a slot.
	RefusedFull Refusal = "full"
	// RefusedLate: the earliest slot the member could have had is after
	// Request.NotAfter. At and Wait are that slot.
	RefusedLate Refusal = "late"
)

// Request is one user's part of a batch.
type Request struct {
	User string
	// Member identifies the booking for ReserveBatch (idempotency key).
	// Ignored by AllowBatch.
	Member string
	// NotAfter, when not zero, is the latest slot ReserveBatch may book for
	// a new member: when the earliest slot is after it (exactly NotAfter is
	// still booked), nothing is booked and the Reservation is RefusedLate.
	// A member already booked gets its slot back whatever NotAfter says.
	// The limiter compares it in whole milliseconds (NotAfter's UnixMilli).
	// Ignored by AllowBatch.
	NotAfter time.Time
}

// Entry is one recorded action or booking in a user's set.
type Entry struct {
	Member string
	At     time.Time
}

// Status describes one user's state.
type Status struct {
	// Entries are the recorded and booked entries still inside the longest
	// window, oldest first (future bookings included).
	Entries []Entry
	// Remaining is, per Policy.Limits, how many more actions the window
	// ending now would accept.
	Remaining []int
	// NextAllowed is the earliest instant an action would be allowed (Now
	// when allowed now).
	NextAllowed time.Time
	Now         time.Time
}

// Options configure a limiter.
type Options struct {
	// Prefix is the key prefix; the user's key is Prefix + "{" + user + "}".
	// Default "hush:throttle:".
	Prefix string
	// Clock, when set, supplies the time of every decision (tests, simulation,
	// replay). When nil the Redis limiter uses the Redis server's TIME and the
	// in-memory limiter uses time.Now.
	Clock func() time.Time
	// MaxPending, when positive, is the most entries after the limiter's
	// now one user may hold: when a user holds that many, Reserve and
	// ReserveBatch book nothing for a new member and answer RefusedFull
	// (an existing member still gets its slot). It bounds what one user's
	// bookings cost every decision; see the package documentation. 0 means
	// no cap; a negative value is an error.
	MaxPending int
}
