package client

import "github.com/hushpush/hush/wire"

// The API's answers are package wire's types, which the server encodes;
// these names keep them where client's users have always found them.
type (
	// Accepted is the answer to a submitted job.
	Accepted = wire.Accepted
	// JobStatus is a job's state and its counts per delivery state.
	JobStatus = wire.JobStatus
	// CancelResult is the answer to Cancel: the job's status once nothing
	// more of it can be sent. Its Counts may still show deliveries
	// pending: they are being dropped, and end cancelled (or delivered,
	// when a device already had the push from an earlier attempt).
	CancelResult = wire.CancelResult
	// ThrottleStatus is what the limiter knows about one user: the global
	// rules, then each category's.
	ThrottleStatus = wire.ThrottleStatus
	// CategoryThrottle is one category's part of a ThrottleStatus.
	CategoryThrottle = wire.CategoryThrottle
	// RuleRemaining is what one rule ("10/1m") has used and left now.
	RuleRemaining = wire.RuleRemaining
	// ThrottleEntry is one recorded send or booked slot; Member is
	// "<job id>/<recipient index>".
	ThrottleEntry = wire.ThrottleEntry
	// Problem is one problem with one field of a submitted job.
	Problem = wire.Problem
	// Event is one event hush emitted (docs/events.md).
	Event = wire.Event
	// EventsPage is one page of Events; EventEntry one event in it with
	// its cursor.
	EventsPage = wire.EventsPage
	EventEntry = wire.EventEntry
	// WebhookStatus is the webhook's state; WebhookDisabled says why it
	// is disabled.
	WebhookStatus   = wire.WebhookStatus
	WebhookDisabled = wire.WebhookDisabled
)

// Job states (JobStatus.State).
const (
	StateQueued     = wire.StateQueued     // accepted, not yet fanned out
	StateFanningOut = wire.StateFanningOut // deliveries being created
	StateFannedOut  = wire.StateFannedOut  // every delivery created
	StateDone       = wire.StateDone       // every recipient has a final state
	StateCancelled  = wire.StateCancelled  // cancelled (JobStatus.CancelledAt)
)

// Job outcomes (JobStatus.Outcome), once no recipient is pending.
const (
	OutcomeDelivered       = wire.OutcomeDelivered       // every recipient delivered
	OutcomePartlyDelivered = wire.OutcomePartlyDelivered // some recipients delivered
	OutcomeUndelivered     = wire.OutcomeUndelivered     // no recipient delivered
)

// The values of ThrottleStatus.TimezoneFrom.
const (
	TimezoneFromRequest       = wire.TimezoneFromRequest
	TimezoneFromServerDefault = wire.TimezoneFromServerDefault
)
