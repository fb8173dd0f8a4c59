package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hushpush/hush/docs"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker"
)

// DefaultMaxBodyBytes is Options.MaxBodyBytes's default, and
// HUSH_MAX_BODY_BYTES's.
const DefaultMaxBodyBytes = 8 << 20

// Options configure the API.
type Options struct {
	// Token, when set, is required on /v1/ as "Authorization: Bearer
	// <token>" (HUSH_API_TOKEN) and acts for every app.
	Token string
	// Tokens, when set, are taken too, each for the apps it names: such
	// a token is refused (403) a job, a submission or a user of another
	// app. With Tokens set /v1/ requires a token, even when none is left
	// in it.
	Tokens *Tokens
	// MaxBodyBytes limits a POST or PUT body: a job, a batch or a user's
	// preferences (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Logger receives the API's logs (default: discard).
	Logger *slog.Logger
}

// Jobs submits, reads and cancels jobs: a *worker.Client.
type Jobs interface {
	Enqueue(ctx context.Context, job payload.Job) (wire.Accepted, error)
	// Check validates one job of a batch before EnqueueBatch takes the
	// valid ones.
	Check(job *payload.Job) error
	EnqueueBatch(ctx context.Context, jobs []payload.Job) ([]worker.BatchResult, error)
	// Status and Cancel wrap worker.ErrNotFound for an unknown id.
	Status(ctx context.Context, id string) (wire.JobStatus, error)
	Cancel(ctx context.Context, id string) (wire.CancelResult, error)
	// Recipients reads a page of a job's recipients; a
	// *worker.QueryError names a bad field, worker.ErrNotFound an
	// unknown id.
	Recipients(ctx context.Context, id string, q worker.RecipientsQuery) (worker.RecipientsPage, error)
	// Events reads a page of hush:events; a *worker.QueryError names a
	// bad field.
	Events(ctx context.Context, q worker.EventsQuery) (wire.EventsPage, error)
	// WebhookStatus and EnableWebhook read and enable the webhook.
	WebhookStatus(ctx context.Context) (wire.WebhookStatus, error)
	EnableWebhook(ctx context.Context) error
	// PutPreferences, GetPreferences and DeleteUser keep a user's own
	// preferences in an app's limiter and delete the user: a
	// *throttle.PreferencesError names a bad field, and the errors wrap
	// worker.ErrUnknownApp, worker.ErrAppRequired or
	// worker.ErrNoPreferences for the app.
	PutPreferences(ctx context.Context, app, user string, p throttle.Preferences) error
	GetPreferences(ctx context.Context, app, user string) (throttle.Preferences, error)
	DeleteUser(ctx context.Context, app, user string) error
}

// Worker is the rest of what the API serves: the apps' limiters,
// readiness and metrics: a *worker.Worker.
type Worker interface {
	// App is the app a throttle route names (?app=; "" the only app or
	// DefaultApp), or an error to show the caller.
	App(name string) (*worker.App, error)
	ResetThrottle(ctx context.Context, admin worker.ThrottleAdmin, user string) error
	// ExplainHeld adds their booked slot and rule to a page's first held
	// recipients.
	ExplainHeld(ctx context.Context, p *worker.RecipientsPage) (int, error)
	// DefaultLocation is the zone quiet hours are read in without
	// ?timezone=.
	DefaultLocation() *time.Location
	// NotReady are the problems GET /readyz names; none when ready.
	NotReady(ctx context.Context) []string
	// ReadyWarnings are the risks a ready GET /readyz names.
	ReadyWarnings(ctx context.Context) []string
	MetricsHandler() http.Handler
}

// What setup hands New.
var (
	_ Jobs   = (*worker.Client)(nil)
	_ Worker = (*worker.Worker)(nil)
)

// server serves the routes.
type server struct {
	jobs    Jobs
	w       Worker
	auth    authenticator
	maxBody int64
	log     *slog.Logger
}

// New returns the HTTP API serving jobs and w.
//
// Every error answer is {"error":{"message":"..."}}, with "problems":
// [{"field","message"}] added for a job's field problems (400). A known
// path asked with another method answers 405 with an Allow header; an
// unknown path 404. With Options.Token or Options.Tokens set, /v1/
// requires one of them.
func New(w Worker, jobs Jobs, o Options) http.Handler {
	a := &server{jobs: jobs, w: w, auth: newAuthenticator(o), maxBody: o.MaxBodyBytes, log: o.Logger}
	if a.maxBody <= 0 {
		a.maxBody = DefaultMaxBodyBytes
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	var patterns []string
	byPattern := map[string][]route{}
	for _, rt := range a.routes() {
		if _, seen := byPattern[rt.pattern]; !seen {
			patterns = append(patterns, rt.pattern)
		}
		byPattern[rt.pattern] = append(byPattern[rt.pattern], rt)
	}
	for _, p := range patterns {
		mux.Handle(p, a.byMethod(byPattern[p]))
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
	// auth: requires a bearer token when Options.Token or Tokens is set.
	auth  bool
	serve http.HandlerFunc
}

// routes lists every operation New serves, in one place: the tests check
// each one against docs/openapi.yaml, and that the description documents
// no other.
func (a *server) routes() []route {
	return []route{
		{http.MethodPost, "/v1/notifications", true, a.postNotification},
		{http.MethodPost, "/v1/notifications:batch", true, a.postNotificationBatch},
		{http.MethodGet, "/v1/notifications/{id}", true, a.getNotification},
		{http.MethodDelete, "/v1/notifications/{id}", true, a.deleteNotification},
		{http.MethodGet, "/v1/notifications/{id}/recipients", true, a.getRecipients},
		{http.MethodGet, "/v1/users/{id}/throttle", true, a.getThrottle},
		{http.MethodDelete, "/v1/users/{id}/throttle", true, a.deleteThrottle},
		{http.MethodPut, "/v1/users/{id}/preferences", true, a.putPreferences},
		{http.MethodGet, "/v1/users/{id}/preferences", true, a.getPreferences},
		{http.MethodDelete, "/v1/users/{id}/preferences", true, a.deletePreferences},
		{http.MethodDelete, "/v1/users/{id}", true, a.deleteUser},
		{http.MethodGet, "/v1/events", true, a.getEvents},
		{http.MethodGet, "/v1/webhook", true, a.getWebhook},
		{http.MethodPost, "/v1/webhook:enable", true, a.enableWebhook},
		{http.MethodGet, "/healthz", false, healthz},
		{http.MethodGet, "/readyz", false, a.readyz},
		{http.MethodGet, "/metrics", false, a.w.MetricsHandler().ServeHTTP},
		{http.MethodGet, "/openapi.yaml", false, serveOpenAPI},
	}
}

// byMethod serves the routes of one path by their method, and answers any
// other method with 405 and the Allow header.
func (a *server) byMethod(rs []route) http.Handler {
	handlers := make(map[string]http.Handler, len(rs))
	methods := make([]string, 0, len(rs))
	for _, rt := range rs {
		var h http.Handler = rt.serve
		if rt.auth {
			h = a.auth.wrap(h)
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

func healthz(rw http.ResponseWriter, _ *http.Request) {
	writeJSON(rw, http.StatusOK, wire.Health{Status: "ok"})
}

func (a *server) readyz(rw http.ResponseWriter, r *http.Request) {
	// The problems name no address or server text: /readyz answers
	// without authentication.
	if problems := a.w.NotReady(r.Context()); len(problems) > 0 {
		writeError(rw, http.StatusServiceUnavailable, "not ready: "+strings.Join(problems, "; "))
		return
	}
	writeJSON(rw, http.StatusOK, wire.Health{Status: "ready", Warnings: a.w.ReadyWarnings(r.Context())})
}

func serveOpenAPI(rw http.ResponseWriter, _ *http.Request) {
	rw.Header().Set("Content-Type", "application/yaml")
	_, _ = rw.Write(docs.OpenAPI) // the client is gone when this fails
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	enc := json.NewEncoder(rw)
	_ = enc.Encode(v) // the client is gone when this fails
}

func writeError(rw http.ResponseWriter, status int, msg string) {
	writeJSON(rw, status, wire.ErrorBody{Error: &wire.ErrorDetail{Message: strings.TrimSpace(msg)}})
}
