package faultsim

import (
	"slices"
	"time"

	"github.com/hushpush/hush/payload"
)

// optOutTolerance is how long after an opt-out's write was answered a
// push of its category may still reach a provider: the wire's time. The
// write answers once every call a booking read before it allowed has
// started (docs/delivery.md section 3c, "Opting out reaches held pushes").
const optOutTolerance = loopback

// optOutable reports whether a user's opt-outs apply to a push of job:
// it names a category that is not required, and it is not critical
// (docs/delivery.md section 3c).
func optOutable(h *history, j payload.Job) bool {
	return j.Category != "" && !h.policy.Categories[j.Category].Required && j.Priority != payload.PriorityCritical
}

// optedOutFrom is when user's opt-out of cat, as far as the promise
// goes, took hold at instant t: the answer of the last write of user
// tried before t, when that write opts out of cat (zero: none does). A
// write whose answer was lost may have taken hold earlier; the promise
// is about answered ones.
func optedOutFrom(h *history, user, cat string, t time.Time) time.Time {
	var from time.Time
	for _, w := range h.prefs {
		if w.user != user || !w.tried.Before(t) {
			continue
		}
		from = time.Time{}
		if !w.answered.IsZero() && slices.Contains(w.optOut, cat) {
			from = w.answered
		}
	}
	return from
}

// optOutTried reports whether a write of user that opts out of cat was
// tried in the run.
func optOutTried(h *history, user, cat string) bool {
	return slices.ContainsFunc(h.prefs, func(w prefWrite) bool { return w.user == user && slices.Contains(w.optOut, cat) })
}

// checkOptOut: nothing of a category a user opted out of reaches a
// provider more than optOutTolerance after the opt-out's write was
// answered, until the user's next write is tried; a required category
// and a critical push are outside it. A job's recipient whose opt-out of
// its category was answered before the job was first submitted, and not
// written again, ends opted_out (when the job has no deadline and no
// cancellation: nothing else ends it first).
func checkOptOut(h *history) []failure {
	var out []failure
	for _, a := range h.arrivals {
		jr := h.jobs[a.job]
		if jr == nil || !optOutable(h, jr.spec.job) {
			continue
		}
		from := optedOutFrom(h, a.user, jr.spec.job.Category, a.at)
		if !from.IsZero() && a.at.After(from.Add(optOutTolerance)) {
			out = append(out, fail("opted-out", traceOf(a), "job %s of category %s reached %s %s after the user's opt-out was answered at %s",
				a.job, jr.spec.job.Category, a.user, a.at.Sub(from), from.Format("15:04:05.000")))
		}
	}
	for _, id := range sortedKeys(h.status) {
		jr, st := h.jobs[id], h.status[id]
		j := jr.spec.job
		if !final(st) || !optOutable(h, j) || j.ExpiresAt != nil || jr.spec.expiresIn > 0 || jr.cancelTried {
			continue
		}
		whole := 0
		for _, r := range j.Recipients {
			if from := optedOutFrom(h, r.UserID, j.Category, jr.firstTry); !from.IsZero() && from.Before(jr.firstTry) && !writtenAfter(h, r.UserID, jr.firstTry) {
				whole++
			}
		}
		if st.Counts["opted_out"] < whole {
			out = append(out, fail("opted-out", nil, "job %s of category %s: %d recipients ended opted_out, %d had opted out before it was submitted: %v",
				id, j.Category, st.Counts["opted_out"], whole, st.Counts))
		}
	}
	return out
}

// writtenAfter reports whether a write of user's preferences was tried
// at or after t.
func writtenAfter(h *history, user string, t time.Time) bool {
	return slices.ContainsFunc(h.prefs, func(w prefWrite) bool { return w.user == user && !w.tried.Before(t) })
}
