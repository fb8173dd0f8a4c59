package throttle

import "time"

// Limit is one rolling-window cap: at most N recorded actions in any window
// of length Window.
type Limit struct {
	N      int
	Window time.Duration
}

// Policy is the set of rules a limiter enforces for every user: all Limits
// at once, plus at least MinGap between two recorded actions (the global
// rules), the rules of each category on top of them, and quiet hours.
type Policy struct {
	Limits []Limit
	MinGap time.Duration
	// Quiet are the quiet hours: Reserve books no slot at an instant whose
	// wall-clock time in the request's Location falls inside them. The zero
	// Quiet has none. Allow and Peek do not apply them.
	Quiet Quiet
	// Categories are named rule sets a Request may name (Request.Category):
	// a booking of category c keeps c's rules among the bookings of c, and
	// the global rules among every booking that keeps them. Names are 1 to
	// 32 of a-z, 0-9, _ and -.
	Categories map[string]Category
}

// Category is the rules of one category: its own Limits and MinGap,
// counted among the bookings of this category only, whether the global
// rules apply too, and its quiet hours.
type Category struct {
	Limits []Limit
	MinGap time.Duration
	// SkipGlobal exempts the category from the global rules: its bookings
	// neither wait for the global Limits and MinGap nor count toward them.
	SkipGlobal bool
	// Quiet, when not nil, replaces the policy's quiet hours for this
	// category; a pointer to the zero Quiet turns them off.
	Quiet *Quiet
	// Required: a user's Preferences cannot opt out of this category
	// (security notices, receipts); its bookings ignore OptOut.
	Required bool
}

// Quiet is a daily window of wall-clock time, [From, To), each an offset
// from midnight (whole milliseconds, under 24 h). From after To wraps
// midnight: {22h, 8h} is 22:00 to 08:00 the next morning. An instant is
// quiet when its wall-clock time in a location falls inside the window, so
// on the nights clocks change the window lasts an hour more or less in
// real time, and a wall-clock time that does not exist that night is
// skipped. From == To means no quiet hours.
type Quiet struct {
	From, To time.Duration
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
	// HeldBy names what holds a new booking's slot, or a RefusedLate
	// one's, after now: the rule that rules out the instant just before
	// At, as DeniedBy names it ("10/1m", "min-gap 3s", a category's
	// "marketing 2/1d"; the request's sets in order, limits before the
	// gap), else its quiet hours ("quiet 22:00-08:00"), or HeldBySendAt
	// when At is the request's NotBefore. Empty when At is now, and on an
	// Existing, RefusedFull or RefusedCollapsed answer (held.go).
	HeldBy string
	// Collapsed is the member of the held booking this one replaced: the
	// same user's booking of the same Category and CollapseKey, more than
	// Options.CollapseMargin ahead, removed by this Reserve. Empty when
	// none (and always on an Existing answer).
	Collapsed string
	// ReplacedBy, on a RefusedCollapsed answer, is the member of the newer
	// push that took this one's place; empty when its record is gone.
	ReplacedBy string
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
	// RefusedCollapsed: a newer booking with the same CollapseKey replaced
	// this member's (see Reservation.Collapsed), or the key names a push
	// accepted after this one (Request.Accepted); it must not be sent. At
	// is the limiter's now.
	RefusedCollapsed Refusal = "collapsed"
	// RefusedOptedOut: the user's Preferences opt out of the request's
	// Category (not Required, and the request not Critical). Nothing is
	// booked, no budget is used, and a booking the member held is given
	// back: a held push whose category the user opted out of since is
	// refused when it wakes to check its slot. At is the limiter's now.
	RefusedOptedOut Refusal = "opted_out"
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
	// NotBefore, when not zero, is the earliest slot a new member may get
	// (a scheduled send), in whole milliseconds.
	NotBefore time.Time
	// Category names one of Policy.Categories; "" books under the global
	// rules alone. An unknown category is an error (ErrUnknownCategory).
	Category string
	// Location is the user's time zone for the quiet hours (nil: UTC).
	Location *time.Location
	// CollapseKey, when set, lets this booking replace the user's held
	// booking of the same Category and CollapseKey (Reservation.Collapsed)
	// and be replaced by a later one.
	CollapseKey string
	// Accepted, with CollapseKey, orders the pushes of one collapse key:
	// when the push was accepted, in whole milliseconds (the zero time is
	// the oldest). The newest accepted push wins whatever books later: a
	// booking takes the place of the held booking its key names only when
	// it was accepted no earlier (on a tie the later booking wins), and a
	// booking accepted before the one its key names is RefusedCollapsed.
	Accepted time.Time
	// Critical marks a push of critical priority: the user's opt-outs do
	// not apply to it (as to a Required category).
	Critical bool
}

// Held names one user's booking: what ReleaseBatch gives back.
type Held struct {
	User, Member string
}

// Entry is one recorded action or booking in a user's set.
type Entry struct {
	Member string
	At     time.Time
	// HeldBy, in a Status, names for an entry after Now the rule of its
	// set that rules out the instant just before it among the set's other
	// entries, as Reservation.HeldBy names a rule; empty when none does
	// (its quiet hours or send_at held it, or the entries that did are
	// gone), and for an entry at or before Now.
	HeldBy string
}

// Status describes one user's state.
type Status struct {
	// Entries are the recorded and booked entries of the global rules still
	// inside their longest window, oldest first (future bookings
	// included).
	Entries []Entry
	// Remaining is, per Policy.Limits, how many more actions the window
	// ending now would accept.
	Remaining []int
	// Counts are, per Policy.Limits, the sends and bookings around Now and
	// what is left once the bookings are kept.
	Counts []RuleCount
	// NextAllowed is the earliest instant a booking without a category
	// would get (Now when it would be allowed now), quiet hours included.
	NextAllowed time.Time
	// Quiet reports whether Now is inside the policy's quiet hours in the
	// location asked about.
	Quiet bool
	// Categories describe each of Policy.Categories, by name.
	Categories []CategoryStatus
	Now        time.Time
}

// RuleCount is one limit's part of a Status.
type RuleCount struct {
	// Sent are the entries inside the window ending Now (bookings whose
	// slot has come included).
	Sent int
	// Booked are the entries after Now inside the window starting Now:
	// deferred deliveries holding a slot.
	Booked int
	// Left is how many more pushes Now would accept with the bookings
	// kept: N minus the fullest window that contains Now. Remaining, which
	// counts the window ending Now alone, ignores the bookings.
	Left int
}

// CategoryStatus is one category's part of a Status.
type CategoryStatus struct {
	Name string
	// Entries are the category's own entries (empty when it has no rules
	// of its own and keeps the global ones: its bookings are among the
	// global Entries).
	Entries []Entry
	// Remaining is, per the category's Limits, how many more actions the
	// window ending now would accept.
	Remaining []int
	// Counts are, per the category's Limits, the sends and bookings
	// around Now and what is left once the bookings are kept.
	Counts []RuleCount
	// NextAllowed is the earliest instant a booking of this category would
	// get, every rule and its quiet hours included.
	NextAllowed time.Time
	// Quiet reports whether Now is inside the category's quiet hours.
	Quiet bool
}

// DefaultMaxPending is Options.MaxPending when it is 0: the cap on one
// user's entries after now that `hush serve` also uses
// (HUSH_THROTTLE_MAX_PENDING's default).
const DefaultMaxPending = 100

// NoMaxPending as Options.MaxPending lifts the cap: nothing then bounds a
// user's bookings, nor what they cost each decision for that user.
const NoMaxPending = -1

// Options configure a limiter.
type Options struct {
	// Prefix is the key prefix; the user's key is Prefix + "{" + tag +
	// "}", where the tag is the user's id, or its scope and id (see Scope
	// and the package's Redis schema). Default "hush:throttle:". It has
	// no "{" or "}", so the braces after it are the key's hash tag.
	Prefix string
	// Scope, when set, puts the user's keys under it: Prefix + "{" +
	// Scope + ":" + user + "}" (one app's users, or a group of apps that
	// share one budget per user). 1 to 32 of a-z, 0-9, _ and -. Without a
	// scope a user's key is Prefix + "{" + user + "}" when no scoped key
	// can read the same (the id neither starts with ":" or "}" nor has a
	// scope name before its first ":"), else Prefix + "{:" + user + "}":
	// no two scopes or users share a key, whatever the ids hold.
	Scope string
	// Clock, when set, supplies the time of every decision (tests, simulation,
	// replay). When nil the Redis limiter uses the Redis server's TIME and the
	// in-memory limiter uses time.Now.
	Clock func() time.Time
	// MaxPending is the most entries after the limiter's now one user may
	// hold: when a user holds that many, Reserve and ReserveBatch book
	// nothing for a new member and answer RefusedFull (an existing member
	// still gets its slot). It bounds what one user's bookings cost every
	// decision; see the package documentation. 0 means DefaultMaxPending;
	// NoMaxPending means no cap; any other negative value is an error.
	MaxPending int
	// CollapseMargin: a held booking whose slot is at most this far after
	// now counts as on its way and is never collapsed (its sender may be
	// past its last look at the limiter). 0: any booking after now may be.
	CollapseMargin time.Duration
}
