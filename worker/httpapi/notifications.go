package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker"
)

func (a *server) postNotification(rw http.ResponseWriter, r *http.Request) {
	body := http.MaxBytesReader(rw, r.Body, a.maxBody)
	job, err := payload.Decode(body)
	if err == nil {
		g := grantOf(r)
		if name, ok := a.mayActFor(g, job.App); !ok {
			forbid(rw, g, "app "+strconv.Quote(name))
			return
		}
		var acc wire.Accepted
		acc, err = a.jobs.Enqueue(r.Context(), job)
		if err == nil {
			status := http.StatusAccepted
			if acc.Duplicate {
				if ok, err := a.seesJob(r, g, acc.ID); err != nil || !ok {
					a.refuseDuplicate(rw, g, err)
					return
				}
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
		status, detail := a.submitError(err)
		writeJSON(rw, status, wire.ErrorBody{Error: &detail})
	}
}

// submitError is the answer to a job that was not accepted: 400 with its
// field problems, 400 for JSON that is not a job, else 503 (Redis did not
// answer).
func (a *server) submitError(err error) (int, wire.ErrorDetail) {
	var invalid *payload.ValidationError
	switch {
	case errors.As(err, &invalid):
		problems := make([]wire.Problem, len(invalid.Problems))
		for i, p := range invalid.Problems {
			problems[i] = wire.Problem{Field: p.Field, Message: p.Message}
		}
		return http.StatusBadRequest, wire.ErrorDetail{Message: "invalid job", Problems: problems, Omitted: invalid.Omitted}
	case errors.Is(err, payload.ErrMalformed):
		return http.StatusBadRequest, wire.ErrorDetail{Message: err.Error()}
	default:
		a.log.Error("submit failed", "err", err)
		return http.StatusServiceUnavailable, wire.ErrorDetail{Message: "could not accept the job, try again"}
	}
}

// postNotificationBatch submits up to worker.MaxBatch jobs in one request.
// The answer is 200 with one answer per job, in order, whenever the body
// is a batch: each job is accepted or refused on its own. The envelope is
// read as strictly as a job (payload.DecodeBatch).
func (a *server) postNotificationBatch(rw http.ResponseWriter, r *http.Request) {
	raws, err := payload.DecodeBatch(http.MaxBytesReader(rw, r.Body, a.maxBody))
	var tooLarge *http.MaxBytesError
	var invalid *payload.ValidationError
	switch {
	case errors.As(err, &tooLarge):
		writeError(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", tooLarge.Limit))
		return
	case errors.As(err, &invalid):
		_, detail := a.submitError(err)
		detail.Message = `invalid batch: the body is {"jobs": [job, ...]} with 1 to ` + fmt.Sprint(worker.MaxBatch) + " jobs"
		writeJSON(rw, http.StatusBadRequest, wire.ErrorBody{Error: &detail})
		return
	case err != nil:
		writeError(rw, http.StatusBadRequest, fmt.Sprintf(`a batch is a JSON object {"jobs": [job, ...]}: %v`, err))
		return
	}
	answers := make([]wire.BatchAnswer, len(raws))
	var jobs []payload.Job
	var at []int // answers[at[k]] is jobs[k]'s
	g := grantOf(r)
	for i, raw := range raws {
		job, err := payload.Decode(bytes.NewReader(raw))
		if err == nil {
			if name, ok := a.mayActFor(g, job.App); !ok {
				answers[i] = wire.BatchAnswer{Status: http.StatusForbidden, Error: &wire.ErrorDetail{Message: forbidden(g, "app "+strconv.Quote(name))}}
				continue
			}
			// An invalid job is answered and dropped here, so a batch of
			// bad jobs holds one decoded job at a time, not all of them.
			// EnqueueBatch validates the others again.
			err = a.jobs.Check(&job)
		}
		if err != nil {
			status, detail := a.submitError(err)
			answers[i] = wire.BatchAnswer{Status: status, Error: &detail}
			continue
		}
		jobs = append(jobs, job)
		at = append(at, i)
	}
	if len(jobs) > 0 {
		res, err := a.jobs.EnqueueBatch(r.Context(), jobs)
		if err != nil {
			status, detail := a.submitError(err)
			writeJSON(rw, status, wire.ErrorBody{Error: &detail})
			return
		}
		for k, res := range res {
			switch {
			case res.Err != nil:
				status, detail := a.submitError(res.Err)
				answers[at[k]] = wire.BatchAnswer{Status: status, ID: res.ID, Error: &detail}
			case res.Duplicate:
				if ok, err := a.seesJob(r, g, res.ID); err != nil || !ok {
					status, msg := a.duplicateRefusal(g, err)
					answers[at[k]] = wire.BatchAnswer{Status: status, Error: &wire.ErrorDetail{Message: msg}}
					continue
				}
				answers[at[k]] = wire.BatchAnswer{Status: http.StatusOK, ID: res.ID, Duplicate: true}
			default:
				answers[at[k]] = wire.BatchAnswer{Status: http.StatusAccepted, ID: res.ID}
			}
		}
	}
	writeJSON(rw, http.StatusOK, wire.BatchResults{Results: answers})
}

func (a *server) getNotification(rw http.ResponseWriter, r *http.Request) {
	g := grantOf(r)
	st, err := a.jobs.Status(r.Context(), r.PathValue("id"))
	switch {
	case g.limited() && (errors.Is(err, worker.ErrNotFound) || err == nil && !g.allows(st.App)):
		forbid(rw, g, notOwnJob)
	case errors.Is(err, worker.ErrNotFound):
		writeError(rw, http.StatusNotFound, "no job with this id")
	case err != nil:
		a.log.Error("job status failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not read the job, try again")
	default:
		writeJSON(rw, http.StatusOK, st)
	}
}

func (a *server) deleteNotification(rw http.ResponseWriter, r *http.Request) {
	if g := grantOf(r); g.limited() {
		ok, err := a.seesJob(r, g, r.PathValue("id"))
		switch {
		case err != nil:
			a.log.Error("job status failed", "err", err)
			writeError(rw, http.StatusServiceUnavailable, "could not cancel the job, try again (cancelling again is safe)")
			return
		case !ok:
			forbid(rw, g, notOwnJob)
			return
		}
	}
	res, err := a.jobs.Cancel(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, worker.ErrNotFound):
		writeError(rw, http.StatusNotFound, "no job with this id")
	case err != nil && r.Context().Err() != nil:
		// The caller went away during the wait; the cancellation stands.
		a.log.Info("job cancelled; the caller left before the answer", "job", r.PathValue("id"))
	case err != nil:
		a.log.Error("job cancel failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not cancel the job, try again (cancelling again is safe)")
	default:
		if res.Cancelled {
			a.log.Info("job cancelled", "job", res.ID, "delivered", res.Counts["delivered"],
				"cancelled", res.Counts["cancelled"], "pending", res.Counts["pending"])
		}
		writeJSON(rw, http.StatusOK, res)
	}
}

// notOwnJob is what a token limited to some apps is told of a job id that
// is not one of its apps' jobs: whether the job is another app's or does
// not exist, the answer is the same.
const notOwnJob = "no job of this token's apps has this id"

// mayActFor reports whether g may submit a job naming app ("": the only
// app, or else default), and names the app as resolved (as given when it
// is not configured). A token limited to some apps may not name an app
// that is not configured either.
func (a *server) mayActFor(g grant, app string) (string, bool) {
	if !g.limited() {
		return app, true
	}
	p, err := a.w.App(app)
	if err != nil {
		if app == "" {
			app = worker.DefaultApp
		}
		return app, false
	}
	return p.Name, g.allows(p.Name)
}

// seesJob reports whether the job id is one of g's apps' jobs (an unknown
// id is not). A token for every app sees every job without a read.
func (a *server) seesJob(r *http.Request, g grant, id string) (bool, error) {
	if !g.limited() {
		return true, nil
	}
	st, err := a.jobs.Status(r.Context(), id)
	switch {
	case errors.Is(err, worker.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return g.allows(st.App), nil
}

// refuseDuplicate answers a submission whose id is taken by a job g does
// not see (err nil), or whose owner could not be read.
func (a *server) refuseDuplicate(rw http.ResponseWriter, g grant, err error) {
	status, msg := a.duplicateRefusal(g, err)
	writeError(rw, status, msg)
}

// duplicateRefusal is refuseDuplicate's status and message.
func (a *server) duplicateRefusal(g grant, err error) (int, string) {
	if err != nil {
		a.log.Error("job status failed", "err", err)
		return http.StatusServiceUnavailable, "could not accept the job, try again"
	}
	return http.StatusForbidden, forbidden(g, "the id is taken by a job that is not one of this token's apps' (choose another id)")
}
