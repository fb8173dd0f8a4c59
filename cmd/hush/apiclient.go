package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
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

// apiClient calls a running hush's HTTP API.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

func newAPIClient(server string) *apiClient {
	return &apiClient{
		base:  serverURL(server, os.Getenv("HUSH_HTTP_ADDR")),
		token: os.Getenv("HUSH_API_TOKEN"),
		http:  &http.Client{Timeout: 30 * time.Second},
	}
}

// do sends one request and returns the answer's status and body. A transport
// failure is an error; an HTTP error status is not (the caller knows which
// statuses it expects and turns the rest into an *apiError).
func (c *apiClient) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s (is hush serve running there? set --server or HUSH_HTTP_ADDR): %w", method, c.base+path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: reading the answer: %w", method, c.base+path, err)
	}
	return resp.StatusCode, b, nil
}

// fieldProblem is one entry of a 400 answer's "errors" list.
type fieldProblem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// apiError is an answer with an unexpected status, made readable.
type apiError struct {
	Status   int
	Problems []fieldProblem
	Message  string
}

// newAPIError interprets an error answer: {"errors":[{"field","message"}]}
// or {"error": "..."}, else the body's text.
func newAPIError(status int, body []byte) *apiError {
	e := &apiError{Status: status}
	var doc struct {
		Errors  []fieldProblem `json:"errors"`
		Error   string         `json:"error"`
		Message string         `json:"message"`
	}
	if json.Unmarshal(body, &doc) == nil {
		e.Problems = doc.Errors
		e.Message = doc.Error
		if e.Message == "" {
			e.Message = doc.Message
		}
	} else {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 300 {
			e.Message = e.Message[:300] + "…"
		}
	}
	return e
}

func (e *apiError) Error() string {
	var b strings.Builder
	switch e.Status {
	case http.StatusBadRequest:
		b.WriteString("the server rejected the request (400)")
	case http.StatusUnauthorized:
		b.WriteString("unauthorized (401): set HUSH_API_TOKEN to the server's API token")
	case http.StatusRequestEntityTooLarge:
		b.WriteString("the job is too large for the server (413)")
	case http.StatusNotFound:
		b.WriteString("not found (404)")
	default:
		fmt.Fprintf(&b, "the server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	for _, p := range e.Problems {
		field := p.Field
		if field == "" {
			field = "(job)"
		}
		fmt.Fprintf(&b, "\n  %s: %s", field, p.Message)
	}
	return b.String()
}
