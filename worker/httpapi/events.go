package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/hushpush/hush/worker"
)

// getEvents reads a page of hush:events (GET /v1/events). A token for some
// apps only reads those apps' events: without ?app= all of them, and an
// ?app= of another app answers 403.
func (a *server) getEvents(rw http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := worker.EventsQuery{Type: v.Get("type"), Job: v.Get("job"), User: v.Get("user"), Before: v.Get("before"), After: v.Get("after")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		switch {
		case err != nil:
			writeError(rw, http.StatusBadRequest, "limit: want a whole number, got "+strconv.Quote(s))
			return
		case n < 1 || n > worker.MaxEventsLimit:
			writeError(rw, http.StatusBadRequest, fmt.Sprintf("limit: want 1 to %d, got %d", worker.MaxEventsLimit, n))
			return
		}
		q.Limit = n
	}
	if q.Type != "" && !worker.IsEventType(q.Type) {
		writeError(rw, http.StatusBadRequest, "type: want one of "+worker.EventTypesText()+", got "+strconv.Quote(q.Type))
		return
	}
	g := grantOf(r)
	switch app := v.Get("app"); {
	case app != "" && !g.allows(app):
		forbid(rw, g, "app "+strconv.Quote(app))
		return
	case app != "":
		q.Apps = []string{app}
	case g.limited():
		q.Apps = g.apps
	}
	page, err := a.jobs.Events(r.Context(), q)
	if qe, ok := errors.AsType[*worker.QueryError](err); ok {
		writeError(rw, http.StatusBadRequest, qe.Error())
		return
	}
	if err != nil {
		a.log.Error("events read failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not read the events, try again")
		return
	}
	writeJSON(rw, http.StatusOK, page)
}

// getWebhook answers the webhook's state (GET /v1/webhook), for a token
// of every app: the endpoint is the deployment's.
func (a *server) getWebhook(rw http.ResponseWriter, r *http.Request) {
	if !allApps(rw, r, "the webhook") {
		return
	}
	st, err := a.jobs.WebhookStatus(r.Context())
	if err != nil {
		a.log.Error("webhook status failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not read the webhook's state, try again")
		return
	}
	writeJSON(rw, http.StatusOK, st)
}

// enableWebhook enables a disabled webhook (POST /v1/webhook:enable) and
// answers its state.
func (a *server) enableWebhook(rw http.ResponseWriter, r *http.Request) {
	if !allApps(rw, r, "the webhook") {
		return
	}
	if err := a.jobs.EnableWebhook(r.Context()); err != nil {
		a.log.Error("webhook enable failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not enable the webhook, try again")
		return
	}
	a.getWebhook(rw, r)
}

// allApps reports whether r's token acts for every app, and answers 403
// naming what when it does not: the deployment's own settings are not any
// one app's.
func allApps(rw http.ResponseWriter, r *http.Request, what string) bool {
	if g := grantOf(r); g.limited() {
		forbid(rw, g, what)
		return false
	}
	return true
}
