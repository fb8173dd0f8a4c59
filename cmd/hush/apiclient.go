package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/hushpush/hush/client"
)

// defaultServer is where send and throttle look for the API when neither
// --server nor HUSH_HTTP_ADDR says otherwise.
const defaultServer = "http://127.0.0.1:8080"

// serverURL resolves the API's base URL: the --server flag, else the
// HUSH_HTTP_ADDR the local serve would listen on, else defaultServer.
func serverURL(flagValue, httpAddr string) string {
	if flagValue != "" {
		if !strings.Contains(flagValue, "://") {
			flagValue = "http://" + flagValue
		}
		return strings.TrimRight(flagValue, "/")
	}
	if httpAddr == "" {
		return defaultServer
	}
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return defaultServer
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// newClient returns a client of the API at serverURL(server,
// $HUSH_HTTP_ADDR), sending $HUSH_API_TOKEN when it is set.
func newClient(server string) *client.Client {
	return client.New(serverURL(server, os.Getenv("HUSH_HTTP_ADDR")), client.WithToken(os.Getenv("HUSH_API_TOKEN")))
}

// readable makes an API call's error readable on the command line: an
// error answer with a hint for the statuses a person can act on and a 400's
// problems one a line; a server that cannot be reached with a pointer to
// --server.
func readable(err error) error {
	if apiErr, ok := errors.AsType[*client.Error](err); ok {
		return &apiError{apiErr}
	}
	if _, ok := errors.AsType[*url.Error](err); ok {
		return fmt.Errorf("%w (is hush serve running there? set --server or HUSH_HTTP_ADDR)", err)
	}
	return err
}

// apiError is an error answer, as the command line shows it.
type apiError struct{ err *client.Error }

func (e *apiError) Unwrap() error { return e.err }

func (e *apiError) Error() string {
	var b strings.Builder
	switch e.err.Status {
	case http.StatusBadRequest:
		b.WriteString("the server rejected the request (400)")
	case http.StatusUnauthorized:
		b.WriteString("unauthorized (401): set HUSH_API_TOKEN to the server's API token")
	case http.StatusRequestEntityTooLarge:
		b.WriteString("the job is too large for the server (413)")
	case http.StatusNotFound:
		b.WriteString("not found (404)")
	default:
		fmt.Fprintf(&b, "the server answered %d %s", e.err.Status, http.StatusText(e.err.Status))
	}
	if e.err.Message != "" {
		b.WriteString(": " + e.err.Message)
	}
	for _, p := range e.err.Problems {
		field := p.Field
		if field == "" {
			field = "(job)"
		}
		fmt.Fprintf(&b, "\n  %s: %s", field, p.Message)
	}
	return b.String()
}
