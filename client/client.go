package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
)

// TimeoutDefault bounds each call of a Client made without WithHTTPClient.
const TimeoutDefault = 30 * time.Second

// maxAnswerBytes bounds the answer body read.
const maxAnswerBytes = 16 << 20

// Client calls one hush server's HTTP API. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends token as the bearer token (the server's HUSH_API_TOKEN).
func WithToken(token string) Option {
	return func(c *Client) { c.token = token }
}

// WithHTTPClient makes the calls with hc (default: an http.Client with
// TimeoutDefault).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// New returns a Client of the API at baseURL ("http://127.0.0.1:8080").
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: &http.Client{Timeout: TimeoutDefault}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL returns the API's base URL, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// Submit submits job (POST /v1/notifications). A job whose id the server
// accepted before comes back with Accepted.Duplicate set; an invalid job is
// a *Error with Status 400 and its Problems.
func (c *Client) Submit(ctx context.Context, job payload.Job) (Accepted, error) {
	body, err := json.Marshal(job)
	if err != nil {
		return Accepted{}, fmt.Errorf("encode job: %w", err)
	}
	return c.SubmitJSON(ctx, body)
}

// SubmitJSON submits a job written as JSON, as it is: the server decodes it
// strictly, so unknown or misspelt fields come back as Problems rather than
// being dropped by a Go decoder on the way.
func (c *Client) SubmitJSON(ctx context.Context, job []byte) (Accepted, error) {
	var acc Accepted
	if err := c.call(ctx, http.MethodPost, "/v1/notifications", job, &acc); err != nil {
		return Accepted{}, err
	}
	if acc.ID == "" {
		return Accepted{}, fmt.Errorf("POST %s/v1/notifications: %w: no job id", c.base, errUnexpected)
	}
	return acc, nil
}

// Status returns a job's state and its counts per delivery state (GET
// /v1/notifications/{id}); an unknown id is a *Error with Status 404.
func (c *Client) Status(ctx context.Context, id string) (JobStatus, error) {
	if id == "" {
		return JobStatus{}, errors.New("client: Status needs a job id")
	}
	var st JobStatus
	err := c.call(ctx, http.MethodGet, "/v1/notifications/"+url.PathEscape(id), nil, &st)
	return st, err
}

// Cancel cancels a job (DELETE /v1/notifications/{id}): every delivery not
// yet sent ends cancelled, those already sent stay delivered. The server
// answers once no push of the job can leave any more, about 3.5 s after
// the cancellation (at once when every delivery was already final), so ctx
// should allow for that. Cancelling again is safe: CancelResult.Cancelled
// then is false. An unknown id is a *Error with Status 404.
func (c *Client) Cancel(ctx context.Context, id string) (CancelResult, error) {
	if id == "" {
		return CancelResult{}, errors.New("client: Cancel needs a job id")
	}
	var res CancelResult
	err := c.call(ctx, http.MethodDelete, "/v1/notifications/"+url.PathEscape(id), nil, &res)
	return res, err
}

// UserThrottle returns what the limiter knows about user (GET
// /v1/users/{id}/throttle), quiet hours read in the server's
// HUSH_DEFAULT_TIMEZONE.
func (c *Client) UserThrottle(ctx context.Context, user string) (ThrottleStatus, error) {
	return c.UserThrottleIn(ctx, user, "")
}

// UserThrottleIn is UserThrottle with the quiet hours read in timezone
// (an IANA name; "" the server's HUSH_DEFAULT_TIMEZONE).
func (c *Client) UserThrottleIn(ctx context.Context, user, timezone string) (ThrottleStatus, error) {
	return c.UserThrottleOf(ctx, "", user, timezone)
}

// UserThrottleOf is UserThrottleIn for the limiter of app ("" the only
// app, else default): a user's budget is per app, or per group of apps
// sharing one.
func (c *Client) UserThrottleOf(ctx context.Context, app, user, timezone string) (ThrottleStatus, error) {
	if user == "" {
		return ThrottleStatus{}, errors.New("client: UserThrottle needs a user id")
	}
	var st ThrottleStatus
	err := c.call(ctx, http.MethodGet, userPath(user)+query("app", app, "timezone", timezone), nil, &st)
	return st, err
}

// query is "?k=v&..." for the pairs whose value is not empty, or "".
func query(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// ResetUserThrottle clears user's recorded sends and bookings (DELETE
// /v1/users/{id}/throttle), so their next notification goes out at once.
func (c *Client) ResetUserThrottle(ctx context.Context, user string) error {
	return c.ResetUserThrottleOf(ctx, "", user)
}

// ResetUserThrottleOf is ResetUserThrottle for the limiter of app ("" the
// only app, else default).
func (c *Client) ResetUserThrottleOf(ctx context.Context, app, user string) error {
	if user == "" {
		return errors.New("client: ResetUserThrottle needs a user id")
	}
	return c.call(ctx, http.MethodDelete, userPath(user)+query("app", app), nil, nil)
}

// Ready returns nil when the server is ready to work (GET /readyz), else
// a *Error with Status 503 whose Message says what is wrong.
func (c *Client) Ready(ctx context.Context) error {
	return c.call(ctx, http.MethodGet, "/readyz", nil, nil)
}

func userPath(user string) string { return "/v1/users/" + url.PathEscape(user) + "/throttle" }

// errUnexpected is wrapped by the error of a success answer whose body is
// not what the API documents.
var errUnexpected = errors.New("unexpected answer")

// call sends one request and decodes a 2xx answer's JSON into out (unless
// out is nil). Any other status is a *Error.
func (c *Client) call(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	target := c.base + path
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, target, err)
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
		return err // a *url.Error, which names the method and URL
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, target, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return newError(resp.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: %w: %d with %.200q: %w", method, target, errUnexpected, resp.StatusCode, b, err)
	}
	return nil
}
