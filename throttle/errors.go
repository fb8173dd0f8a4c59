package throttle

import (
	"errors"
	"strconv"
)

var (
	// ErrEmptyUser is returned when a user id is empty.
	ErrEmptyUser = errors.New("throttle: empty user id")
	// ErrEmptyMember is returned when a reservation's member id is empty.
	ErrEmptyMember = errors.New("throttle: empty member id")
	// ErrUnknownCategory is wrapped when a Request names a category the
	// policy does not have.
	ErrUnknownCategory = errors.New("throttle: unknown category")
	// ErrInvalidPolicy is wrapped by Policy.Validate's errors.
	ErrInvalidPolicy = errors.New("throttle: invalid policy")
	// ErrUnexpectedReply is wrapped when Redis answers a script with
	// something the limiter did not ask for (a wrong type or length).
	ErrUnexpectedReply = errors.New("throttle: unexpected reply from Redis")
)

// ParseError reports a rule that could not be parsed. Text is the bad part
// of the input, quoted in the message.
type ParseError struct {
	// What names the kind of item: "limit" or "min gap".
	What string
	// Text is the offending item as given.
	Text string
	// Reason says what is wrong with it.
	Reason string
	// Err is the underlying error, if any (e.g. from time.ParseDuration).
	Err error
}

func (e *ParseError) Error() string {
	return "throttle: " + e.What + " " + strconv.Quote(e.Text) + ": " + e.Reason
}

func (e *ParseError) Unwrap() error { return e.Err }
