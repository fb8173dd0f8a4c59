package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/hushpush/hush/worker"
)

// getRecipients reads a page of a job's recipients (GET
// /v1/notifications/{id}/recipients?state=&limit=&cursor=). A token for
// some apps reads only its apps' jobs: another app's job answers 403, as
// an id no job has does.
func (a *server) getRecipients(rw http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := worker.RecipientsQuery{State: v.Get("state"), Cursor: v.Get("cursor")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		switch {
		case err != nil:
			writeError(rw, http.StatusBadRequest, "limit: want a whole number, got "+strconv.Quote(s))
			return
		case n < 1 || n > worker.MaxRecipientsLimit:
			writeError(rw, http.StatusBadRequest, fmt.Sprintf("limit: want 1 to %d, got %d", worker.MaxRecipientsLimit, n))
			return
		}
		q.Limit = n
	}
	g := grantOf(r)
	page, err := a.jobs.Recipients(r.Context(), r.PathValue("id"), q)
	if qe, ok := errors.AsType[*worker.QueryError](err); ok {
		writeError(rw, http.StatusBadRequest, qe.Error())
		return
	}
	switch {
	case g.limited() && (errors.Is(err, worker.ErrNotFound) || err == nil && !g.allows(page.App)):
		forbid(rw, g, notOwnJob)
	case errors.Is(err, worker.ErrNotFound):
		writeError(rw, http.StatusNotFound, "no job with this id")
	case err != nil:
		a.log.Error("job recipients read failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not read the job's recipients, try again")
	default:
		// The records' answer stands when the bookings cannot be read:
		// the held recipients then lack their slot and rule.
		if _, err := a.w.ExplainHeld(r.Context(), &page); err != nil {
			a.log.Warn("held recipients' bookings not read", "job", page.ID, "err", err)
		}
		writeJSON(rw, http.StatusOK, page)
	}
}
