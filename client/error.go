package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/hushpush/hush/wire"
)

// Error is an answer with an error status. Match it with errors.As.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Message is the answer's error message (or, from something that is
	// not hush, such as a proxy, the start of its body).
	Message string
	// Problems are a rejected job's field problems (Status 400), in
	// document order; nil otherwise. The server lists at most
	// payload.MaxProblems of them and counts the others in Omitted.
	Problems []Problem
	Omitted  int
}

// Error returns "hush API: 400 Bad Request: invalid job: field: message; ...".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hush API: %d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	for i, p := range e.Problems {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		b.WriteString(sep + p.Field + ": " + p.Message)
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "; and %d more problems", e.Omitted)
	}
	return b.String()
}

// newError reads an error answer: the API's envelope
// {"error":{"message","problems"}}, else the body's text.
func newError(status int, body []byte) *Error {
	e := &Error{Status: status}
	var env wire.ErrorBody
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		return errorOf(status, env.Error)
	}
	e.Message = strings.TrimSpace(string(body))
	if r := []rune(e.Message); len(r) > 300 {
		e.Message = string(r[:300]) + "…"
	}
	return e
}

// errorOf is the *Error of an answer with status and the API's error
// detail d.
func errorOf(status int, d *wire.ErrorDetail) *Error {
	return &Error{Status: status, Message: d.Message, Problems: d.Problems, Omitted: d.Omitted}
}
