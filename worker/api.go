package worker

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hushpush/hush/payload"
)

// Handler returns the HTTP API with /healthz, /readyz and /metrics.
//
//	POST   /v1/notifications        submit a job: 202 {"id"}, duplicate 200 {"id","duplicate":true}
//	GET    /v1/notifications/{id}   the job's state and counts per delivery state
//	GET    /v1/users/{id}/throttle  the limiter status of one user
//	DELETE /v1/users/{id}/throttle  clear one user's limiter state
//
// Errors are JSON: {"errors":[{"field","message"}]} for an invalid job,
// {"error": "..."} otherwise. With Options.APIToken set, /v1/ requires
// "Authorization: Bearer <token>".
func (w *Worker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/notifications", w.auth(http.HandlerFunc(w.postNotification)))
	mux.Handle("GET /v1/notifications/{id}", w.auth(http.HandlerFunc(w.getNotification)))
	mux.Handle("GET /v1/users/{id}/throttle", w.auth(http.HandlerFunc(w.getThrottle)))
	mux.Handle("DELETE /v1/users/{id}/throttle", w.auth(http.HandlerFunc(w.deleteThrottle)))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		writeJSON(rw, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", w.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.m.reg, promhttp.HandlerOpts{Registry: w.m.reg}))
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		writeError(rw, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return mux
}

func (w *Worker) auth(next http.Handler) http.Handler {
	if w.apiToken == "" {
		return next
	}
	want := []byte("Bearer " + w.apiToken)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			rw.Header().Set("WWW-Authenticate", `Bearer realm="hush"`)
			writeError(rw, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		next.ServeHTTP(rw, r)
	})
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
	var invalid *payload.ValidationError
	switch {
	case errors.As(err, &tooLarge):
		writeError(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", tooLarge.Limit))
	case errors.As(err, &invalid):
		problems := make([]fieldProblem, len(invalid.Problems))
		for i, p := range invalid.Problems {
			problems[i] = fieldProblem{Field: p.Field, Message: p.Message}
		}
		writeJSON(rw, http.StatusBadRequest, map[string]any{"errors": problems})
	case errors.Is(err, payload.ErrMalformed):
		writeJSON(rw, http.StatusBadRequest, map[string]any{"errors": []fieldProblem{{Field: "", Message: err.Error()}}})
	default:
		w.log.Error("submit failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not accept the job, try again")
	}
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

// ThrottleStatus is the answer of GET /v1/users/{id}/throttle.
type ThrottleStatus struct {
	UserID      string          `json:"user_id"`
	Now         time.Time       `json:"now"`
	NextAllowed time.Time       `json:"next_allowed"`
	Remaining   []RuleRemaining `json:"remaining"`
	MinGap      string          `json:"min_gap,omitempty"`
	Entries     []ThrottleEntry `json:"entries"`
}

// RuleRemaining is how many more pushes one rule accepts now.
type RuleRemaining struct {
	Rule      string `json:"rule"`
	Remaining int    `json:"remaining"`
}

// ThrottleEntry is one recorded send or booked slot.
type ThrottleEntry struct {
	Member string    `json:"member"`
	At     time.Time `json:"at"`
}

func (w *Worker) getThrottle(rw http.ResponseWriter, r *http.Request) {
	if w.admin == nil {
		writeError(rw, http.StatusNotImplemented, "the limiter does not report status")
		return
	}
	user := r.PathValue("id")
	st, err := w.admin.Status(r.Context(), user)
	if err != nil {
		w.log.Error("throttle status failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not read the limiter, try again")
		return
	}
	out := ThrottleStatus{UserID: user, Now: st.Now, NextAllowed: st.NextAllowed, Remaining: []RuleRemaining{}, Entries: []ThrottleEntry{}}
	for i, n := range st.Remaining {
		rule := fmt.Sprintf("rule %d", i+1)
		if i < len(w.policy.Limits) {
			rule = w.policy.Limits[i].String()
		}
		out.Remaining = append(out.Remaining, RuleRemaining{Rule: rule, Remaining: n})
	}
	if w.policy.MinGap > 0 {
		out.MinGap = w.policy.MinGap.String()
	}
	for _, e := range st.Entries {
		out.Entries = append(out.Entries, ThrottleEntry{Member: e.Member, At: e.At})
	}
	writeJSON(rw, http.StatusOK, out)
}

func (w *Worker) deleteThrottle(rw http.ResponseWriter, r *http.Request) {
	if w.admin == nil {
		writeError(rw, http.StatusNotImplemented, "the limiter cannot be reset")
		return
	}
	user := r.PathValue("id")
	if err := w.admin.Reset(r.Context(), user); err != nil {
		w.log.Error("throttle reset failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not reset the limiter, try again")
		return
	}
	w.log.Info("throttle reset", "user", user)
	writeJSON(rw, http.StatusOK, map[string]string{"user_id": user, "status": "reset"})
}

func (w *Worker) readyz(rw http.ResponseWriter, r *http.Request) {
	problems := w.notReady(r.Context())
	if len(problems) > 0 {
		writeJSON(rw, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "problems": problems})
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
	if last := w.credentialFail.Load(); last != 0 && time.Since(time.Unix(0, last)) < credentialWindow {
		problems = append(problems, "a provider rejected hush's credentials in the last minute")
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
	writeJSON(rw, status, map[string]string{"error": strings.TrimSpace(msg)})
}
