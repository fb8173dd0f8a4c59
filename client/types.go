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
)

// JobStatus is a job's state and its counts per delivery state.
type JobStatus struct {
	ID         string    `json:"id"`
	State      string    `json:"state"`
	Queue      string    `json:"queue"`
	AcceptedAt time.Time `json:"accepted_at"`
	// Deadline is when undelivered recipients expire (zero: none).
	Deadline   time.Time `json:"deadline,omitzero"`
	Recipients int       `json:"recipients"`
	// Counts has the recipients per final state (delivered, expired,
	// token_invalid, failed, throttle_full) and pending: those without a
	// final state yet.
	Counts map[string]int `json:"counts"`
	// Deferrals counts how often a delivery of the job was deferred by the
	// limiter.
	Deferrals int `json:"deferrals"`
}

// ThrottleStatus is what the limiter knows about one user.
type ThrottleStatus struct {
	UserID string `json:"user_id"`
	// Now is the limiter's clock, the one that counts.
	Now time.Time `json:"now"`
	// NextAllowed is the earliest instant a send would be allowed (Now when
	// allowed now).
	NextAllowed time.Time       `json:"next_allowed"`
	Remaining   []RuleRemaining `json:"remaining"`
	// MinGap is the least time between two sends ("3s"); empty when none.
	MinGap string `json:"min_gap,omitempty"`
	// Entries are the recorded sends and booked slots inside the longest
	// window, oldest first; those after Now are bookings of deferred
	// deliveries.
	Entries []ThrottleEntry `json:"entries"`
}

// RuleRemaining is how many more sends one rule ("10/1m") accepts now.
type RuleRemaining struct {
	Rule      string `json:"rule"`
	Remaining int    `json:"remaining"`
}

// ThrottleEntry is one recorded send or booked slot; Member is
// "<job id>/<recipient index>".
type ThrottleEntry struct {
	Member string    `json:"member"`
	At     time.Time `json:"at"`
}
