package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker"
)

// routeApp is the app a route names (?app=, else the only app or
// worker.DefaultApp), or the error finding it, when the request's token
// may act for that app; it answers 403 itself (ok false) when not.
func (a *server) routeApp(rw http.ResponseWriter, r *http.Request) (app *worker.App, ok bool, err error) {
	name := r.URL.Query().Get("app")
	app, err = a.w.App(name)
	if g := grantOf(r); g.limited() && (err != nil || !g.allows(app.Name)) {
		if err == nil {
			name = app.Name
		}
		forbid(rw, g, "app "+strconv.Quote(name))
		return nil, false, nil
	}
	return app, true, err
}

// throttleApp is the app a throttle route asks about (?app=, else the
// only app or worker.DefaultApp) and its limiter's admin side; it answers
// the request itself (false) when there is none.
func (a *server) throttleApp(rw http.ResponseWriter, r *http.Request) (*worker.App, worker.ThrottleAdmin, bool) {
	app, ok, err := a.routeApp(rw, r)
	if !ok {
		return nil, nil, false
	}
	if err != nil {
		writeError(rw, http.StatusBadRequest, "app: "+err.Error())
		return nil, nil, false
	}
	admin, ok := app.Limiter.(worker.ThrottleAdmin)
	if !ok {
		writeError(rw, http.StatusNotImplemented, "the limiter does not report status or reset")
		return nil, nil, false
	}
	return app, admin, true
}

func (a *server) getThrottle(rw http.ResponseWriter, r *http.Request) {
	app, admin, ok := a.throttleApp(rw, r)
	if !ok {
		return
	}
	policy := app.Policy
	user := r.PathValue("id")
	loc, from := a.w.DefaultLocation(), wire.TimezoneFromServerDefault
	if name := r.URL.Query().Get("timezone"); name != "" {
		l, err := (payload.Recipient{Timezone: name}).Location()
		if err != nil {
			writeError(rw, http.StatusBadRequest, "timezone: "+err.Error())
			return
		}
		loc, from = l, wire.TimezoneFromRequest
	}
	st, err := admin.Status(r.Context(), user, loc)
	if err != nil {
		a.log.Error("throttle status failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not read the limiter, try again")
		return
	}
	out := wire.ThrottleStatus{UserID: user, App: app.Name, Now: st.Now, NextAllowed: st.NextAllowed, Remaining: rulesRemaining(policy.Limits, st.Remaining, st.Counts),
		Timezone: loc.String(), TimezoneFrom: from, Quiet: st.Quiet, Held: held(st.Entries, st.Now), Entries: entries(st.Entries)}
	if !policy.Quiet.Off() {
		out.QuietHours = policy.Quiet.String()
	}
	if policy.MinGap > 0 {
		out.MinGap = policy.MinGap.String()
	}
	for _, c := range st.Categories {
		k := policy.Categories[c.Name]
		ct := wire.CategoryThrottle{Name: c.Name, Rules: k.String(), Remaining: rulesRemaining(k.Limits, c.Remaining, c.Counts),
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

// rulesRemaining names remaining's and counts' numbers after limits. Every
// rule has Sent, Booked and AfterBookings (without counts: none sent or
// booked, and all that remain).
func rulesRemaining(limits []throttle.Limit, remaining []int, counts []throttle.RuleCount) []wire.RuleRemaining {
	out := []wire.RuleRemaining{}
	for i, n := range remaining {
		rule := fmt.Sprintf("rule %d", i+1)
		if i < len(limits) {
			rule = limits[i].String()
		}
		sent, booked, after := 0, 0, n
		if i < len(counts) {
			sent, booked, after = counts[i].Sent, counts[i].Booked, counts[i].Left
		}
		out = append(out, wire.RuleRemaining{Rule: rule, Remaining: n, Sent: &sent, Booked: &booked, AfterBookings: &after})
	}
	return out
}

func entries(es []throttle.Entry) []wire.ThrottleEntry {
	out := []wire.ThrottleEntry{}
	for _, e := range es {
		out = append(out, wire.ThrottleEntry{Member: e.Member, At: e.At, HeldBy: e.HeldBy})
	}
	return out
}

// held are the entries after now.
func held(es []throttle.Entry, now time.Time) []wire.ThrottleEntry {
	out := []wire.ThrottleEntry{}
	for _, e := range es {
		if e.At.After(now) {
			out = append(out, wire.ThrottleEntry{Member: e.Member, At: e.At, HeldBy: e.HeldBy})
		}
	}
	return out
}

func (a *server) deleteThrottle(rw http.ResponseWriter, r *http.Request) {
	app, admin, ok := a.throttleApp(rw, r)
	if !ok {
		return
	}
	user := r.PathValue("id")
	if err := a.w.ResetThrottle(r.Context(), admin, user); err != nil {
		a.log.Error("throttle reset failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not reset the limiter, try again")
		return
	}
	a.log.Info("throttle reset", "user", user, "app", app.Name)
	writeJSON(rw, http.StatusOK, wire.ThrottleReset{Status: "reset", UserID: user})
}
