// Package cmdkit holds the small helpers that hush's commands share: cmd/hush
// and the packages it hands a command to (internal/demo, internal/bench).
// They find a free loopback port for an in-process worker, keep the tail of
// its logs for an error message, and count nouns in output. It imports only
// the standard library.
package cmdkit
