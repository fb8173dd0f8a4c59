package client

import "time"

// Accepted is the answer to a submitted job.
type Accepted struct {
	// ID is the job's id: the one submitted, or the one the server generated.
	ID string `json:"id"`
	// Duplicate is true when a job with this id was already accepted; the
	// submission changed nothing.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Job states (JobStatus.State).
const (
	StateQueued     = "queued"      // accepted, not yet fanned out
	StateFanningOut = "fanning_out" // deliveries being created
	StateFannedOut  = "fanned_out"  // every delivery created
	StateDone       = "done"        // every recipient has a final state
	StateCancelled  = "cancelled"   // cancelled (JobStatus.CancelledAt)
)

// Job outcomes (JobStatus.Outcome), once no recipient is pending.
const (
	OutcomeDelivered       = "delivered"        // every recipient delivered
	OutcomePartlyDelivered = "partly_delivered" // some recipients delivered
	OutcomeUndelivered     = "undelivered"      // no recipient delivered
)

// JobStatus is a job's state and its counts per delivery state.
type JobStatus struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// Outcome, once no recipient is pending, is what the job came to:
	// OutcomeDelivered, OutcomePartlyDelivered or OutcomeUndelivered;
	// empty before (and from a server before it). StateDone says only
	// that every recipient has a final state.
	Outcome    string    `json:"outcome,omitempty"`
	Queue      string    `json:"queue"`
	AcceptedAt time.Time `json:"accepted_at"`
	// Deadline is when undelivered recipients expire (zero: none).
	Deadline time.Time `json:"deadline,omitzero"`
	// CancelledAt is when the job was cancelled (State is then
	// StateCancelled); zero when it was not.
	CancelledAt time.Time `json:"cancelled_at,omitzero"`
	Recipients  int       `json:"recipients"`
	// Counts has the recipients per final state (delivered, expired,
	// token_invalid, failed, throttle_full, collapsed, cancelled) and
	// pending: those without a final state yet.
	Counts map[string]int `json:"counts"`
	// Deferrals counts how often a delivery of the job was deferred by the
	// limiter.
	Deferrals int `json:"deferrals"`
}

// CancelResult is the answer to Cancel: the job's status once nothing more
// of it can be sent. Its Counts may still show deliveries pending: they
// are being dropped, and end cancelled (or delivered, when a device
// already had the push from an earlier attempt).
type CancelResult struct {
	JobStatus
	// Cancelled is true when this call cancelled the job, false when an
	// earlier one had.
	Cancelled bool `json:"cancelled"`
}

// ThrottleStatus is what the limiter knows about one user: the global
// rules, then each category's.
type ThrottleStatus struct {
	UserID string `json:"user_id"`
	// App is the app whose limiter this is.
	App string `json:"app"`
	// Now is the limiter's clock, the one that counts.
	Now time.Time `json:"now"`
	// NextAllowed is the earliest instant a push without a category would
	// be allowed (Now when allowed now), quiet hours included.
	NextAllowed time.Time `json:"next_allowed"`
	// Remaining is, per global rule, how many more sends the window ending
	// now accepts.
	Remaining []RuleRemaining `json:"remaining"`
	// MinGap is the least time between two sends ("3s"); empty when none.
	MinGap string `json:"min_gap,omitempty"`
	// Timezone is the zone the quiet hours were read in (the one asked
	// for, else the server's HUSH_DEFAULT_TIMEZONE); QuietHours the global
	// ones ("22:00-08:00", empty: none); Quiet whether the user is inside
	// them now.
	Timezone string `json:"timezone"`
	// TimezoneFrom says where Timezone comes from: TimezoneFromRequest
	// (the one asked for) or TimezoneFromServerDefault (the server does
	// not know the user's zone; only their jobs carry it). Empty from a
	// server before it.
	TimezoneFrom string `json:"timezone_from,omitempty"`
	QuietHours   string `json:"quiet_hours,omitempty"`
	Quiet        bool   `json:"quiet"`
	// Held are the bookings after Now: pushes held for their slot.
	Held []ThrottleEntry `json:"held"`
	// Entries are the recorded sends and booked slots inside the longest
	// window, oldest first; those after Now are bookings of deferred
	// deliveries.
	Entries []ThrottleEntry `json:"entries"`
	// Categories are the server's categories (HUSH_THROTTLE_CATEGORIES),
	// by name; nil when it has none.
	Categories []CategoryThrottle `json:"categories,omitempty"`
}

// CategoryThrottle is one category's part of a ThrottleStatus.
type CategoryThrottle struct {
	Name string `json:"name"`
	// Rules are the category's rules as HUSH_THROTTLE_CATEGORIES writes
	// them ("2/24h,1/4h@1h global=off").
	Rules string `json:"rules"`
	// Remaining is, per rule of the category's own, how many more sends
	// the window ending now accepts.
	Remaining []RuleRemaining `json:"remaining"`
	// NextAllowed is the earliest instant a push of this category would be
	// allowed.
	NextAllowed time.Time `json:"next_allowed"`
	// QuietHours are the category's quiet hours (its own, else the global
	// ones; empty: none); Quiet whether the user is inside them now.
	QuietHours string `json:"quiet_hours,omitempty"`
	Quiet      bool   `json:"quiet"`
	// Held and Entries are the category's own bookings after Now and
	// recorded sends and bookings (empty when it keeps only the global
	// rules: its pushes are among the global ones).
	Held    []ThrottleEntry `json:"held"`
	Entries []ThrottleEntry `json:"entries"`
}

// The values of ThrottleStatus.TimezoneFrom.
const (
	TimezoneFromRequest       = "request"
	TimezoneFromServerDefault = "server_default"
)

// RuleRemaining is what one rule ("10/1m") has used and left now.
type RuleRemaining struct {
	Rule string `json:"rule"`
	// Remaining is how many more sends the window ending now accepts,
	// bookings after now not counted.
	Remaining int `json:"remaining"`
	// Sent are the sends inside the window ending now, Booked the
	// deferred deliveries holding a slot inside the window starting now,
	// AfterBookings how many more sends now accepts with those bookings
	// kept. Nil from a server before them.
	Sent          *int `json:"sent,omitempty"`
	Booked        *int `json:"booked,omitempty"`
	AfterBookings *int `json:"after_bookings,omitempty"`
}

// ThrottleEntry is one recorded send or booked slot; Member is
// "<job id>/<recipient index>".
type ThrottleEntry struct {
	Member string    `json:"member"`
	At     time.Time `json:"at"`
}
