package wire

import "time"

// Accepted is the answer to a submitted job (the schema Accepted).
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

// Job outcomes (JobStatus.Outcome): what a job with no recipient pending
// came to, whatever its state (done or cancelled).
const (
	// OutcomeDelivered: every recipient was delivered.
	OutcomeDelivered = "delivered"
	// OutcomePartlyDelivered: some recipients were delivered, the others
	// ended in another final state (expired, failed, collapsed, ...).
	OutcomePartlyDelivered = "partly_delivered"
	// OutcomeUndelivered: no recipient was delivered.
	OutcomeUndelivered = "undelivered"
)

// JobStatus is a job's state and its counts per delivery state (the
// schema JobStatus).
type JobStatus struct {
	ID string `json:"id"`
	// App is the job's app (empty for a job recorded by a server before
	// records kept it).
	App   string `json:"app,omitempty"`
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
	// token_invalid, failed, throttle_full, collapsed, cancelled,
	// opted_out) and pending: those without a final state yet.
	Counts map[string]int `json:"counts"`
	// Deferrals counts how often a delivery of the job was deferred by the
	// limiter.
	Deferrals int `json:"deferrals"`
}

// CancelResult is the answer to a cancellation (the schema CancelResult):
// the job's status once nothing more of it can be sent. Its Counts may
// still show deliveries pending: they are being dropped, and end cancelled
// (or delivered, when a device already had the push from an earlier
// attempt).
type CancelResult struct {
	JobStatus
	// Cancelled is true when this call cancelled the job, false when an
	// earlier one had.
	Cancelled bool `json:"cancelled"`
}

// BatchResults is the answer to POST /v1/notifications:batch: one answer
// per job, in the order of the jobs sent.
type BatchResults struct {
	Results []BatchAnswer `json:"results"`
}

// BatchAnswer is one job's answer in a batch (the schema BatchAnswer): the
// answer POST /v1/notifications would give, Status its HTTP status, with
// the job's id, or the error.
type BatchAnswer struct {
	Status    int          `json:"status"`
	ID        string       `json:"id,omitempty"`
	Duplicate bool         `json:"duplicate,omitempty"`
	Error     *ErrorDetail `json:"error,omitempty"`
}

// ErrorBody is the envelope of every error answer (the schema Error).
type ErrorBody struct {
	Error *ErrorDetail `json:"error"`
}

// ErrorDetail is what went wrong (the schema ErrorDetail).
type ErrorDetail struct {
	Message string `json:"message"`
	// Problems are a rejected job's field problems, in document order;
	// only 400 answers have them, at most payload.MaxProblems of them.
	Problems []Problem `json:"problems,omitempty"`
	// Omitted counts the problems found past those listed.
	Omitted int `json:"omitted,omitempty"`
}

// Problem is one problem with one field of a submitted job (the schema
// Problem).
type Problem struct {
	// Field is the field's path as written in JSON:
	// "recipients[3].devices[0].token", `data["google.x"]`.
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ThrottleStatus is what the limiter knows about one user (the schema
// ThrottleStatus): the global rules, then each category's.
type ThrottleStatus struct {
	UserID string `json:"user_id"`
	// App is the app whose limiter this is (?app=).
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
	// Timezone is the zone the quiet hours were read in (?timezone=, else
	// the server's HUSH_DEFAULT_TIMEZONE); QuietHours the global ones
	// ("22:00-08:00", empty: none); Quiet whether the user is inside them
	// now.
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

// The values of ThrottleStatus.TimezoneFrom.
const (
	TimezoneFromRequest       = "request"        // the timezone query parameter
	TimezoneFromServerDefault = "server_default" // HUSH_DEFAULT_TIMEZONE
)

// CategoryThrottle is one category's part of a ThrottleStatus (the schema
// CategoryThrottle).
type CategoryThrottle struct {
	Name string `json:"name"`
	// Rules are the category's rules in HUSH_THROTTLE_CATEGORIES's
	// grammar, canonical ("2/24h,1/4h@1h global=off quiet=off").
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

// RuleRemaining is what one rule ("10/1m") has used and left around now
// (the schema RuleRemaining).
type RuleRemaining struct {
	Rule string `json:"rule"`
	// Remaining is how many more sends the window ending now accepts,
	// bookings after now not counted.
	Remaining int `json:"remaining"`
	// Sent are the sends inside the window ending now, Booked the
	// deferred deliveries holding a slot after now inside the window
	// starting now, AfterBookings how many more sends now accepts with
	// those bookings kept. The server always sends them; nil from a server
	// before them.
	Sent          *int `json:"sent,omitempty"`
	Booked        *int `json:"booked,omitempty"`
	AfterBookings *int `json:"after_bookings,omitempty"`
}

// ThrottleEntry is one recorded send or booked slot (the schema
// ThrottleEntry); Member is "<job id>/<recipient index>", with
// "#<attempt>" for a retry's own booking.
type ThrottleEntry struct {
	Member string    `json:"member"`
	At     time.Time `json:"at"`
	// HeldBy names, for a booking, the rule that holds it (absent when
	// none of the rules among the other entries does).
	HeldBy string `json:"held_by,omitempty"`
}

// ThrottleReset is the answer to DELETE /v1/users/{id}/throttle (the
// schema ThrottleReset); Status is "reset". The fields are in the order
// the server has always written them.
type ThrottleReset struct {
	Status string `json:"status"`
	UserID string `json:"user_id"`
}

// Health is the answer of GET /healthz (Status "ok") and of GET /readyz
// when ready (Status "ready", with Warnings saying what puts the work at
// risk, if anything): the schema Health.
type Health struct {
	Status   string   `json:"status"`
	Warnings []string `json:"warnings,omitempty"`
}
