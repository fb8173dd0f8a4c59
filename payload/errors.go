package payload

import (
	"errors"
	"strings"
)

// ErrMalformed is wrapped by Decode's errors for input that is not one JSON
// object: syntax errors, empty input, trailing data.
var ErrMalformed = errors.New("malformed job JSON")

// FieldError is one problem with one field of a job.
type FieldError struct {
	// Field is the path of the field as written in JSON:
	// "recipients[3].devices[0].token", `data["google.x"]`.
	Field   string
	Message string
}

func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// ValidationError lists every problem found in a job, in document order.
type ValidationError struct {
	Problems []FieldError
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return "invalid job: " + strings.Join(msgs, "; ")
}

// Unwrap returns the problems, so errors.As can find a FieldError.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// problems collects FieldErrors.
type problems []FieldError

func (ps *problems) add(field, msg string) {
	*ps = append(*ps, FieldError{Field: field, Message: msg})
}

// err returns nil when there are no problems, else a *ValidationError.
func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps}
}
