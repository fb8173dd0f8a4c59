package worker

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hushpush/hush/docs"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
)

// Handler returns the HTTP API, described by docs/openapi.yaml (served at
// GET /openapi.yaml):
//
//	POST   /v1/notifications        submit a job: 202 {"id"}, duplicate 200 {"id","duplicate":true}
//	POST   /v1/notifications:batch  submit up to MaxBatch jobs: 200 {"results"}, one answer per job
//	GET    /v1/notifications/{id}   the job's state and counts per delivery state
//	DELETE /v1/notifications/{id}   cancel the job: nothing of it is sent after the answer
//	GET    /v1/users/{id}/throttle  the limiter status of one user
//	DELETE /v1/users/{id}/throttle  clear one user's limiter state
//	GET    /healthz, /readyz, /metrics, /openapi.yaml
//
// Every error answer is {"error":{"message":"..."}}, with "problems":
// [{"field","message"}] added for a job's field problems (400). A known
// path asked with another method answers 405 with an Allow header; an
// unknown path 404. With Options.APIToken set, /v1/ requires
// "Authorization: Bearer <token>".
func (w *Worker) Handler() http.Handler {
	mux := http.NewServeMux()
	var patterns []string
	byPattern := map[string][]route{}
	for _, rt := range w.routes() {
		if _, seen := byPattern[rt.pattern]; !seen {
			patterns = append(patterns, rt.pattern)
		}
		byPattern[rt.pattern] = append(byPattern[rt.pattern], rt)
	}
	for _, p := range patterns {
		mux.Handle(p, w.byMethod(byPattern[p]))
	}
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		writeError(rw, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// route is one operation of the HTTP API.
type route struct {
	method string
	// pattern is a net/http ServeMux path pattern, written as the path
	// template of docs/openapi.yaml.
	pattern string
	// auth: requires the bearer token when Options.APIToken is set.
	auth  bool
	serve http.HandlerFunc
}

// routes lists every operation Handler serves, in one place: the tests
// check each one against docs/openapi.yaml, and that the description
// documents no other.
func (w *Worker) routes() []route {
	metrics := promhttp.HandlerFor(w.m.reg, promhttp.HandlerOpts{Registry: w.m.reg})
	return []route{
		{http.MethodPost, "/v1/notifications", true, w.postNotification},
		{http.MethodPost, "/v1/notifications:batch", true, w.postNotificationBatch},
		{http.MethodGet, "/v1/notifications/{id}", true, w.getNotification},
		{http.MethodDelete, "/v1/notifications/{id}", true, w.deleteNotification},
		{http.MethodGet, "/v1/users/{id}/throttle", true, w.getThrottle},
		{http.MethodDelete, "/v1/users/{id}/throttle", true, w.deleteThrottle},
		{http.MethodGet, "/healthz", false, healthz},
		{http.MethodGet, "/readyz", false, w.readyz},
		{http.MethodGet, "/metrics", false, metrics.ServeHTTP},
		{http.MethodGet, "/openapi.yaml", false, serveOpenAPI},
	}
}

// byMethod serves the routes of one path by their method, and answers any
// other method with 405 and the Allow header.
func (w *Worker) byMethod(rs []route) http.Handler {
	handlers := make(map[string]http.Handler, len(rs))
	methods := make([]string, 0, len(rs))
	for _, rt := range rs {
		var h http.Handler = rt.serve
		if rt.auth {
			h = w.auth(h)
		}
		handlers[rt.method] = h
		methods = append(methods, rt.method)
	}
	allow := strings.Join(methods, ", ")
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if h, ok := handlers[r.Method]; ok {
			h.ServeHTTP(rw, r)
			return
		}
		rw.Header().Set("Allow", allow)
		writeError(rw, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
	})
}

func (w *Worker) auth(next http.Handler) http.Handler {
	if w.apiToken == "" {
		return next
	}
	want := []byte(w.apiToken)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 7235 §2.1); the token is not.
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		got := []byte(strings.TrimLeft(token, " "))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(got, want) != 1 {
			rw.Header().Set("WWW-Authenticate", `Bearer realm="hush"`)
			writeError(rw, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		next.ServeHTTP(rw, r)
	})
}

func healthz(rw http.ResponseWriter, _ *http.Request) {
	writeJSON(rw, http.StatusOK, map[string]string{"status": "ok"})
}

func serveOpenAPI(rw http.ResponseWriter, _ *http.Request) {
	rw.Header().Set("Content-Type", "application/yaml")
	_, _ = rw.Write(docs.OpenAPI) // the client is gone when this fails
}

// errorBody is the envelope of every error answer (the schema Error of
// docs/openapi.yaml).
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string `json:"message"`
	// Problems are a job's field problems; only 400 answers have them,
	// at most payload.MaxProblems of them.
	Problems []fieldProblem `json:"problems,omitempty"`
	// Omitted counts the problems found past those listed.
	Omitted int `json:"omitted,omitempty"`
}

type fieldProblem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (w *Worker) postNotification(rw http.ResponseWriter, r *http.Request) {
	body := http.MaxBytesReader(rw, r.Body, w.maxBody)
	job, err := payload.Decode(body)
	if err == nil {
		var acc Accepted
		acc, err = w.client.Enqueue(r.Context(), job)
		if err == nil {
			status := http.StatusAccepted
			if acc.Duplicate {
				status = http.StatusOK
			}
			writeJSON(rw, status, acc)
			return
		}
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", tooLarge.Limit))
	default:
		status, detail := w.submitError(err)
		writeJSON(rw, status, errorBody{detail})
	}
}

// submitError is the answer to a job that was not accepted: 400 with its
// field problems, 400 for JSON that is not a job, else 503 (Redis did not
// answer).
func (w *Worker) submitError(err error) (int, errorDetail) {
	var invalid *payload.ValidationError
	switch {
	case errors.As(err, &invalid):
		problems := make([]fieldProblem, len(invalid.Problems))
		for i, p := range invalid.Problems {
			problems[i] = fieldProblem{Field: p.Field, Message: p.Message}
		}
		return http.StatusBadRequest, errorDetail{Message: "invalid job", Problems: problems, Omitted: invalid.Omitted}
	case errors.Is(err, payload.ErrMalformed):
		return http.StatusBadRequest, errorDetail{Message: err.Error()}
	default:
		w.log.Error("submit failed", "err", err)
		return http.StatusServiceUnavailable, errorDetail{Message: "could not accept the job, try again"}
	}
}

// BatchAnswer is one job's answer to POST /v1/notifications:batch: the
// answer POST /v1/notifications would give (Status its HTTP status) with
// the job's id, or the error.
type BatchAnswer struct {
	Status    int          `json:"status"`
	ID        string       `json:"id,omitempty"`
	Duplicate bool         `json:"duplicate,omitempty"`
	Error     *errorDetail `json:"error,omitempty"`
}

// postNotificationBatch submits up to MaxBatch jobs in one request. The
// answer is 200 with one answer per job, in order, whenever the body is a
// batch: each job is accepted or refused on its own. The envelope is read
// as strictly as a job (payload.DecodeBatch).
func (w *Worker) postNotificationBatch(rw http.ResponseWriter, r *http.Request) {
	raws, err := payload.DecodeBatch(http.MaxBytesReader(rw, r.Body, w.maxBody))
	var tooLarge *http.MaxBytesError
	var invalid *payload.ValidationError
	switch {
	case errors.As(err, &tooLarge):
		writeError(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", tooLarge.Limit))
		return
	case errors.As(err, &invalid):
		_, detail := w.submitError(err)
		detail.Message = `invalid batch: the body is {"jobs": [job, ...]} with 1 to ` + fmt.Sprint(MaxBatch) + " jobs"
		writeJSON(rw, http.StatusBadRequest, errorBody{detail})
		return
	case err != nil:
		writeError(rw, http.StatusBadRequest, fmt.Sprintf(`a batch is a JSON object {"jobs": [job, ...]}: %v`, err))
		return
	}
	answers := make([]BatchAnswer, len(raws))
	var jobs []payload.Job
	var at []int // answers[at[k]] is jobs[k]'s
	now := w.client.now()
	for i, raw := range raws {
		job, err := payload.Decode(bytes.NewReader(raw))
		if err == nil {
			// An invalid job is answered and dropped here, so a batch of
			// bad jobs holds one decoded job at a time, not all of them.
			// EnqueueBatch validates the others again.
			err = w.client.refuseInvalid(&job, now)
		}
		if err != nil {
			status, detail := w.submitError(err)
			answers[i] = BatchAnswer{Status: status, Error: &detail}
			continue
		}
		jobs = append(jobs, job)
		at = append(at, i)
	}
	if len(jobs) > 0 {
		res, err := w.client.EnqueueBatch(r.Context(), jobs)
		if err != nil {
			status, detail := w.submitError(err)
			writeJSON(rw, status, errorBody{detail})
			return
		}
		for k, a := range res {
			switch {
			case a.Err != nil:
				status, detail := w.submitError(a.Err)
				answers[at[k]] = BatchAnswer{Status: status, ID: a.ID, Error: &detail}
			case a.Duplicate:
				answers[at[k]] = BatchAnswer{Status: http.StatusOK, ID: a.ID, Duplicate: true}
			default:
				answers[at[k]] = BatchAnswer{Status: http.StatusAccepted, ID: a.ID}
			}
		}
	}
	writeJSON(rw, http.StatusOK, map[string][]BatchAnswer{"results": answers})
}

func (w *Worker) getNotification(rw http.ResponseWriter, r *http.Request) {
	st, err := w.client.Status(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, ErrNotFound):
		writeError(rw, http.StatusNotFound, "no job with this id")
	case err != nil:
		w.log.Error("job status failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not read the job, try again")
	default:
		writeJSON(rw, http.StatusOK, st)
	}
}

func (w *Worker) deleteNotification(rw http.ResponseWriter, r *http.Request) {
	res, err := w.client.Cancel(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, ErrNotFound):
		writeError(rw, http.StatusNotFound, "no job with this id")
	case err != nil && r.Context().Err() != nil:
		// The caller went away during the wait; the cancellation stands.
		w.log.Info("job cancelled; the caller left before the answer", "job", r.PathValue("id"))
	case err != nil:
		w.log.Error("job cancel failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not cancel the job, try again (cancelling again is safe)")
	default:
		if res.Cancelled {
			w.log.Info("job cancelled", "job", res.ID, "delivered", res.Counts[stateDelivered],
				"cancelled", res.Counts[stateCancelled], "pending", res.Counts["pending"])
		}
		writeJSON(rw, http.StatusOK, res)
	}
}

// ThrottleStatus is the answer of GET /v1/users/{id}/throttle: the user's
// global rules, then each category's.
type ThrottleStatus struct {
	UserID string `json:"user_id"`
	// App is the app whose limiter this is (?app=).
	App         string          `json:"app"`
	Now         time.Time       `json:"now"`
	NextAllowed time.Time       `json:"next_allowed"`
	Remaining   []RuleRemaining `json:"remaining"`
	MinGap      string          `json:"min_gap,omitempty"`
	// Timezone is the zone the quiet hours were read in (?timezone=, else
	// HUSH_DEFAULT_TIMEZONE); TimezoneFrom says which of the two
	// (TimezoneFromRequest, TimezoneFromServerDefault): the server does not
	// know a user's zone, only their jobs carry it. QuietHours are the
	// global ones ("" none); Quiet whether the user is inside them now.
	Timezone     string `json:"timezone"`
	TimezoneFrom string `json:"timezone_from"`
	QuietHours   string `json:"quiet_hours,omitempty"`
	Quiet        bool   `json:"quiet"`
	// Held are the bookings after now: pushes held for their slot.
	Held       []ThrottleEntry    `json:"held"`
	Entries    []ThrottleEntry    `json:"entries"`
	Categories []CategoryThrottle `json:"categories,omitempty"`
}

// CategoryThrottle is one category's part of a ThrottleStatus.
type CategoryThrottle struct {
	Name string `json:"name"`
	// Rules are the category's rules in HUSH_THROTTLE_CATEGORIES's
	// grammar, canonical ("2/24h,1/4h@1h global=off quiet=off").
	Rules       string          `json:"rules"`
	Remaining   []RuleRemaining `json:"remaining"`
	NextAllowed time.Time       `json:"next_allowed"`
	QuietHours  string          `json:"quiet_hours,omitempty"`
	Quiet       bool            `json:"quiet"`
	// Held and Entries are the category's own (empty when it keeps only
	// the global rules: its pushes are among the global ones).
	Held    []ThrottleEntry `json:"held"`
	Entries []ThrottleEntry `json:"entries"`
}

// The values of ThrottleStatus.TimezoneFrom.
const (
	TimezoneFromRequest       = "request"        // the timezone query parameter
	TimezoneFromServerDefault = "server_default" // HUSH_DEFAULT_TIMEZONE
)

// RuleRemaining is what one rule has used and left around now.
type RuleRemaining struct {
	Rule string `json:"rule"`
	// Remaining is how many more pushes the window ending now accepts,
	// bookings after now not counted.
	Remaining int `json:"remaining"`
	// Sent are the pushes inside the window ending now; Booked the
	// deferred deliveries holding a slot after now inside the window
	// starting now; AfterBookings how many more pushes now accepts with
	// those bookings kept.
	Sent          int `json:"sent"`
	Booked        int `json:"booked"`
	AfterBookings int `json:"after_bookings"`
}

// ThrottleEntry is one recorded send or booked slot.
type ThrottleEntry struct {
	Member string    `json:"member"`
	At     time.Time `json:"at"`
}

// throttleApp is the app a throttle route asks about (?app=, else the
// only app or DefaultApp) and its limiter's admin side; it answers the
// request itself (false) when there is none.
func (w *Worker) throttleApp(rw http.ResponseWriter, r *http.Request) (*App, ThrottleAdmin, bool) {
	a, err := w.apps.resolve(r.URL.Query().Get("app"))
	if err != nil {
		writeError(rw, http.StatusBadRequest, "app: "+err.Error())
		return nil, nil, false
	}
	admin, ok := a.Limiter.(ThrottleAdmin)
	if !ok {
		writeError(rw, http.StatusNotImplemented, "the limiter does not report status or reset")
		return nil, nil, false
	}
	return a, admin, true
}

func (w *Worker) getThrottle(rw http.ResponseWriter, r *http.Request) {
	a, admin, ok := w.throttleApp(rw, r)
	if !ok {
		return
	}
	policy := a.Policy
	user := r.PathValue("id")
	loc, from := w.defaultLoc, TimezoneFromServerDefault
	if name := r.URL.Query().Get("timezone"); name != "" {
		l, err := (payload.Recipient{Timezone: name}).Location()
		if err != nil {
			writeError(rw, http.StatusBadRequest, "timezone: "+err.Error())
			return
		}
		loc, from = l, TimezoneFromRequest
	}
	st, err := admin.Status(r.Context(), user, loc)
	if err != nil {
		w.log.Error("throttle status failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not read the limiter, try again")
		return
	}
	out := ThrottleStatus{UserID: user, App: a.Name, Now: st.Now, NextAllowed: st.NextAllowed, Remaining: rulesRemaining(policy.Limits, st.Remaining, st.Counts),
		Timezone: loc.String(), TimezoneFrom: from, Quiet: st.Quiet, Held: held(st.Entries, st.Now), Entries: entries(st.Entries)}
	if !policy.Quiet.Off() {
		out.QuietHours = policy.Quiet.String()
	}
	if policy.MinGap > 0 {
		out.MinGap = policy.MinGap.String()
	}
	for _, c := range st.Categories {
		k := policy.Categories[c.Name]
		ct := CategoryThrottle{Name: c.Name, Rules: k.String(), Remaining: rulesRemaining(k.Limits, c.Remaining, c.Counts),
			NextAllowed: c.NextAllowed, Quiet: c.Quiet, Held: held(c.Entries, st.Now), Entries: entries(c.Entries)}
		q := policy.Quiet
		if k.Quiet != nil {
			q = *k.Quiet
		}
		if !q.Off() {
			ct.QuietHours = q.String()
		}
		out.Categories = append(out.Categories, ct)
	}
	writeJSON(rw, http.StatusOK, out)
}

// rulesRemaining names remaining's and counts' numbers after limits.
func rulesRemaining(limits []throttle.Limit, remaining []int, counts []throttle.RuleCount) []RuleRemaining {
	out := []RuleRemaining{}
	for i, n := range remaining {
		rule := fmt.Sprintf("rule %d", i+1)
		if i < len(limits) {
			rule = limits[i].String()
		}
		rr := RuleRemaining{Rule: rule, Remaining: n, AfterBookings: n}
		if i < len(counts) {
			rr.Sent, rr.Booked, rr.AfterBookings = counts[i].Sent, counts[i].Booked, counts[i].Left
		}
		out = append(out, rr)
	}
	return out
}

func entries(es []throttle.Entry) []ThrottleEntry {
	out := []ThrottleEntry{}
	for _, e := range es {
		out = append(out, ThrottleEntry{Member: e.Member, At: e.At})
	}
	return out
}

// held are the entries after now.
func held(es []throttle.Entry, now time.Time) []ThrottleEntry {
	out := []ThrottleEntry{}
	for _, e := range es {
		if e.At.After(now) {
			out = append(out, ThrottleEntry{Member: e.Member, At: e.At})
		}
	}
	return out
}

func (w *Worker) deleteThrottle(rw http.ResponseWriter, r *http.Request) {
	a, admin, ok := w.throttleApp(rw, r)
	if !ok {
		return
	}
	user := r.PathValue("id")
	if err := w.resetThrottle(r.Context(), admin, user); err != nil {
		w.log.Error("throttle reset failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not reset the limiter, try again")
		return
	}
	w.log.Info("throttle reset", "user", user, "app", a.Name)
	writeJSON(rw, http.StatusOK, map[string]string{"user_id": user, "status": "reset"})
}

// resetThrottle forgets user's limiter state (admin.Reset) between two
// raises of the reset mark (resetmark.go): before, to the limiter's
// instant read first plus resetMargin, so that a held task booked before
// the deletion and run after it looks its bookings up; after, to the
// limiter's instant read after the deletion, in case it took longer.
func (w *Worker) resetThrottle(ctx context.Context, admin ThrottleAdmin, user string) error {
	limiterNow := func() (time.Time, error) {
		st, err := admin.Status(ctx, user, time.UTC)
		if err != nil {
			return time.Time{}, err
		}
		if st.Now.IsZero() {
			return w.now(), nil
		}
		return st.Now, nil
	}
	now, err := limiterNow()
	if err != nil {
		return err
	}
	if err := w.store.raiseResetMark(ctx, now.Add(resetMargin)); err != nil {
		return err
	}
	if err := admin.Reset(ctx, user); err != nil {
		return err
	}
	if now, err = limiterNow(); err == nil {
		err = w.store.raiseResetMark(ctx, now)
	}
	if err != nil {
		w.log.Warn("throttle reset: raising the reset mark after it failed; held pushes booked more than the margin before the reset's end may go uncounted",
			"user", user, "margin", resetMargin, "err", err)
	}
	return nil
}

func (w *Worker) readyz(rw http.ResponseWriter, r *http.Request) {
	problems := w.notReady(r.Context())
	if len(problems) > 0 {
		writeError(rw, http.StatusServiceUnavailable, "not ready: "+strings.Join(problems, "; "))
		return
	}
	writeJSON(rw, http.StatusOK, map[string]string{"status": "ready"})
}

// credentialWindow is how long a provider's credential failure keeps
// /readyz failing.
const credentialWindow = time.Minute

func (w *Worker) notReady(ctx context.Context) []string {
	var problems []string
	if !w.running.Load() {
		problems = append(problems, "task server not running")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := w.rdb.Ping(ctx).Err(); err != nil {
		// /readyz answers without authentication: the cause (addresses,
		// server messages) goes to the log, not to the caller.
		w.log.Warn("readiness: redis does not answer", "err", err)
		problems = append(problems, "redis unavailable")
	}
	for _, app := range w.creds.since(w.now().Add(-credentialWindow)) {
		problems = append(problems, "a provider rejected app "+app+"'s credentials in the last minute")
	}
	return problems
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	enc := json.NewEncoder(rw)
	_ = enc.Encode(v) // the client is gone when this fails
}

func writeError(rw http.ResponseWriter, status int, msg string) {
	writeJSON(rw, status, errorBody{errorDetail{Message: strings.TrimSpace(msg)}})
}
