package payload

import (
	"errors"
	"fmt"
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

// ValidationError lists the problems found in a job, in document order:
// the first MaxProblems of them, and how many more there are.
type ValidationError struct {
	Problems []FieldError
	// Omitted counts the problems found past the first MaxProblems, which
	// are not listed: a bad request's answer stays small however bad it is.
	Omitted int
}

// NewValidationError returns a ValidationError of ps and omitted more,
// keeping at most MaxProblems of ps listed and counting the rest.
func NewValidationError(ps []FieldError, omitted int) *ValidationError {
	if len(ps) > MaxProblems {
		omitted += len(ps) - MaxProblems
		ps = ps[:MaxProblems:MaxProblems]
	}
	return &ValidationError{Problems: ps, Omitted: omitted}
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Problems), len(e.Problems)+1)
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	if e.Omitted > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more problems", e.Omitted))
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

// problems collects FieldErrors: the first MaxProblems, and a count of
// the others.
type problems struct {
	list    []FieldError
	omitted int
}

func (ps *problems) add(field, msg string) {
	if len(ps.list) == MaxProblems {
		ps.omitted++
		return
	}
	ps.list = append(ps.list, FieldError{Field: field, Message: msg})
}

// err returns nil when there are no problems, else a *ValidationError.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps.list, Omitted: ps.omitted}
}
