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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/wire"
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
	if err := c.call(ctx, http.MethodPost, "/v1/notifications", job, &acc, acceptedFields...); err != nil {
		return Accepted{}, err
	}
	if acc.ID == "" {
		return Accepted{}, fmt.Errorf("POST %s/v1/notifications: %w: no job id", c.base, errUnexpected)
	}
	return acc, nil
}

// MaxBatch is the most jobs one SubmitBatch call takes (the server's
// limit for POST /v1/notifications:batch).
const MaxBatch = payload.MaxBatchJobs

// BatchAnswer is one job's answer in a batch: Status is the HTTP status
// POST /v1/notifications would have answered it with. 202: accepted; 200:
// Duplicate (a job with its id was accepted before, or earlier in the same
// batch); 400: invalid, Err has its Problems and ID is empty; 503: Redis did
// not answer, submit it again with the same id.
type BatchAnswer struct {
	Status int
	Accepted
	// Err is the job's error when Status is not 200 or 202.
	Err *Error
}

// SubmitBatch submits up to MaxBatch jobs in one request (POST
// /v1/notifications:batch) and returns one answer per job, in jobs' order:
// each job is accepted or refused on its own. The error is for the request
// as a whole: no jobs or too many, a body over the server's limit (*Error
// with Status 413), the server unreachable, or an answer that is not one
// per job.
func (c *Client) SubmitBatch(ctx context.Context, jobs []payload.Job) ([]BatchAnswer, error) {
	raws := make([]json.RawMessage, len(jobs))
	for i := range jobs {
		b, err := json.Marshal(&jobs[i])
		if err != nil {
			return nil, fmt.Errorf("encode job %d: %w", i, err)
		}
		raws[i] = b
	}
	return c.SubmitBatchJSON(ctx, raws)
}

// SubmitBatchJSON is SubmitBatch for jobs written as JSON, sent as they
// are (see SubmitJSON).
func (c *Client) SubmitBatchJSON(ctx context.Context, jobs []json.RawMessage) ([]BatchAnswer, error) {
	if len(jobs) == 0 || len(jobs) > MaxBatch {
		return nil, fmt.Errorf("client: SubmitBatch takes 1 to %d jobs, not %d", MaxBatch, len(jobs))
	}
	body, err := json.Marshal(struct {
		Jobs []json.RawMessage `json:"jobs"`
	}{jobs})
	if err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	const path = "/v1/notifications:batch"
	var ans wire.BatchResults
	if err := c.call(ctx, http.MethodPost, path, body, &ans, "results"); err != nil {
		return nil, err
	}
	unexpected := func(format string, a ...any) error {
		return fmt.Errorf("POST %s%s: %w: %s", c.base, path, errUnexpected, fmt.Sprintf(format, a...))
	}
	if len(ans.Results) != len(jobs) {
		return nil, unexpected("%d answers for %d jobs", len(ans.Results), len(jobs))
	}
	out := make([]BatchAnswer, len(jobs))
	for i, r := range ans.Results {
		a := BatchAnswer{Status: r.Status, Accepted: Accepted{ID: r.ID, Duplicate: r.Duplicate}}
		switch {
		case r.Status == http.StatusOK || r.Status == http.StatusAccepted:
			if r.ID == "" {
				return nil, unexpected("answer %d: status %d without a job id", i, r.Status)
			}
		case r.Status >= 400 && r.Status <= 599 && r.Error != nil:
			a.Err = errorOf(r.Status, r.Error)
		default:
			return nil, unexpected("answer %d: status %d without an error", i, r.Status)
		}
		out[i] = a
	}
	return out, nil
}

// Status returns a job's state and its counts per delivery state (GET
// /v1/notifications/{id}); an unknown id is a *Error with Status 404.
func (c *Client) Status(ctx context.Context, id string) (JobStatus, error) {
	if id == "" {
		return JobStatus{}, errors.New("client: Status needs a job id")
	}
	var st JobStatus
	err := c.call(ctx, http.MethodGet, "/v1/notifications/"+url.PathEscape(id), nil, &st, jobStatusFields...)
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
	err := c.call(ctx, http.MethodDelete, "/v1/notifications/"+url.PathEscape(id), nil, &res, cancelResultFields...)
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
	err := c.call(ctx, http.MethodGet, userPath(user)+query("app", app, "timezone", timezone), nil, &st, throttleStatusFields...)
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

// EventsQuery selects the events Events reads; every filter set must
// match.
type EventsQuery struct {
	// App, Type, Job and User, when set, are the events' app, type
	// (delivered, failed, token_invalid, dropped), job and user.
	App, Type, Job, User string
	// Before reads the events older than this cursor, newest first; After
	// the events newer than it, oldest first. Neither: the newest first.
	Before, After string
	// Limit is the most events in the page (0: the server's 100; at most
	// 1,000).
	Limit int
}

// Events reads a page of the events hush emitted (GET /v1/events). A page
// may hold fewer events than asked, even none, and still have a Next to go
// on from: ask again with Before (After, when reading oldest first) set to
// it. Reading oldest first, Next is always set, so asking again later
// with it reads what came since.
func (c *Client) Events(ctx context.Context, q EventsQuery) (EventsPage, error) {
	limit := ""
	if q.Limit != 0 {
		limit = strconv.Itoa(q.Limit)
	}
	var p EventsPage
	err := c.call(ctx, http.MethodGet, "/v1/events"+query("app", q.App, "type", q.Type, "job", q.Job, "user", q.User,
		"before", q.Before, "after", q.After, "limit", limit), nil, &p, "events")
	return p, err
}

// WebhookStatus reads the webhook's state (GET /v1/webhook): whether the
// endpoint is disabled, and why, and how many events wait for a retry.
func (c *Client) WebhookStatus(ctx context.Context) (WebhookStatus, error) {
	var st WebhookStatus
	err := c.call(ctx, http.MethodGet, "/v1/webhook", nil, &st, "retrying")
	return st, err
}

// EnableWebhook enables a disabled webhook endpoint (POST
// /v1/webhook:enable) and returns its state.
func (c *Client) EnableWebhook(ctx context.Context) (WebhookStatus, error) {
	var st WebhookStatus
	err := c.call(ctx, http.MethodPost, "/v1/webhook:enable", nil, &st, "retrying")
	return st, err
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

// The fields docs/openapi.yaml requires in each success answer: an answer
// without one of them is not from a hush server (a proxy's 200 {}, another
// service), and reading it as zero values would report what did not
// happen ("already cancelled"). The limiter status requires only the
// fields servers answered before time zones, quiet hours and apps.
var (
	acceptedFields       = []string{"id"}
	jobStatusFields      = []string{"id", "state", "queue", "accepted_at", "recipients", "counts", "deferrals"}
	cancelResultFields   = append(slices.Clone(jobStatusFields), "cancelled")
	throttleStatusFields = []string{"user_id", "now", "next_allowed", "remaining", "entries"}
)

// call sends one request and decodes a 2xx answer's JSON into out (unless
// out is nil), after checking that the answer has every field of
// required, none of them null. Any other status is a *Error.
func (c *Client) call(ctx context.Context, method, path string, body []byte, out any, required ...string) error {
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
	if missing := missingFields(b, required); len(missing) > 0 {
		return fmt.Errorf("%s %s: %w: %d with %.200q, which lacks %s", method, target, errUnexpected, resp.StatusCode, b, strings.Join(missing, ", "))
	}
	return nil
}

// missingFields returns the names of required that the JSON object b does
// not have, or has as null.
func missingFields(b []byte, required []string) []string {
	if len(required) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m) // not an object: every field is missing
	var missing []string
	for _, name := range required {
		if v, ok := m[name]; !ok || string(v) == "null" {
			missing = append(missing, name)
		}
	}
	return missing
}
