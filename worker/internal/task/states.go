package task

import "slices"

// Final states of a recipient's delivery.
const (
	Delivered    = "delivered"
	Expired      = "expired"
	TokenInvalid = "token_invalid"
	Failed       = "failed"
	// ThrottleFull: dropped because the user already held the most
	// bookings the limiter allows (HUSH_THROTTLE_MAX_PENDING).
	ThrottleFull = "throttle_full"
	// Collapsed: dropped while held, because a newer push for the same
	// user with the same collapse key (and category) took its place.
	Collapsed = "collapsed"
	// Cancelled: dropped unsent because its job was cancelled.
	Cancelled = "cancelled"
	// OptedOut: dropped unsent because the user opted out of the push's
	// category, before it was booked or while it was held.
	OptedOut = "opted_out"
)

// finalStates is the one list of final states. Its order is the order of
// the counts in a finished job's done-hash entry (retire.lua writes them,
// the compact status reads them): a new state goes at its end.
var finalStates = []string{Delivered, Expired, TokenInvalid, Failed, ThrottleFull, Collapsed, Cancelled, OptedOut}

// FinalStates returns the final states in their one order. The slice is a
// copy.
func FinalStates() []string { return slices.Clone(finalStates) }
