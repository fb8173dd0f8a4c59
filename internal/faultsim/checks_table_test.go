package faultsim

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// A small world for the checks' table tests: times in ms from t0, users
// with one device each unless a test gives them more.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// pushed is a delivered arrival of job to tok (user u) at ms n.
func pushed(job, u, tok string, n int) arrival {
	return arrival{job: job, user: u, token: tok, platform: payload.APNs, at: ms(n), status: 200, answered: ms(n)}
}

// answeredWith is an arrival answered status at ms n.
func answeredWith(job, u, tok string, n, status int) arrival {
	a := pushed(job, u, tok, n)
	a.status = status
	return a
}

// jobOpt shapes a table test's job.
type jobOpt func(*jobRun)

func recipients(users ...string) jobOpt {
	return func(jr *jobRun) {
		for _, u := range users {
			jr.spec.job.Recipients = append(jr.spec.job.Recipients, payload.Recipient{UserID: u,
				Devices: []payload.Device{{Platform: payload.APNs, Token: "t-" + u}}})
		}
	}
}

// secondDevice gives user's recipient another APNs device, token.
func secondDevice(user, token string) jobOpt {
	return func(jr *jobRun) {
		for i, r := range jr.spec.job.Recipients {
			if r.UserID == user {
				jr.spec.job.Recipients[i].Devices = append(r.Devices, payload.Device{Platform: payload.APNs, Token: token})
			}
		}
	}
}

func withCollapse(key string) jobOpt {
	return func(jr *jobRun) { jr.spec.job.CollapseKey = key }
}

func expiresAt(n int) jobOpt {
	return func(jr *jobRun) { t := ms(n); jr.spec.job.ExpiresAt = &t }
}

func sendAt(n int) jobOpt {
	return func(jr *jobRun) { t := ms(n); jr.spec.job.SendAt = &t }
}

func cancelledAt(n int) jobOpt {
	return func(jr *jobRun) { jr.cancelled, jr.cancelTried = ms(n), true }
}

func inApp(app string) jobOpt { return func(jr *jobRun) { jr.spec.job.App = app } }

func category(c string) jobOpt { return func(jr *jobRun) { jr.spec.job.Category = c } }

// counts is a final status of a job accepted at ms n.
func counts(n int, kv ...any) worker.JobStatus {
	st := worker.JobStatus{AcceptedAt: ms(n), Counts: map[string]int{}}
	for i := 0; i+1 < len(kv); i += 2 {
		st.Counts[kv[i].(string)] = kv[i+1].(int)
		st.Recipients += kv[i+1].(int)
	}
	return st
}

// histBuilder builds a history.
type histBuilder struct{ h *history }

func newHistory() *histBuilder {
	return &histBuilder{h: &history{jobs: map[string]*jobRun{}, status: map[string]worker.JobStatus{}, unknown: map[string]bool{},
		statusErr: map[string]error{}, excused: map[callKey]bool{}, dead: map[string]bool{}, ending: map[string]bool{}, retryAfter: map[string]time.Duration{},
		lookups: map[string]worker.RecipientsPage{}, lookupErr: map[string]error{},
		policy: throttle.Policy{Limits: []throttle.Limit{{N: 2, Window: 2 * time.Second}}, MinGap: 700 * time.Millisecond,
			Categories: map[string]throttle.Category{"night": {}, "ops": {SkipGlobal: true}}},
		maxRate: 4, skews: []time.Duration{0}}}
}

// job adds a tried, accepted job submitted at ms 0, with status st when
// given.
func (w *histBuilder) job(id string, st *worker.JobStatus, opts ...jobOpt) *histBuilder {
	jr := &jobRun{spec: &jobSpec{job: payload.Job{ID: id, Content: payload.Content{App: appPlain}}}, tried: true, accepted: true, firstTry: ms(0), lastTry: ms(0)}
	for _, o := range opts {
		o(jr)
	}
	w.h.jobs[id] = jr
	if st != nil {
		jr.firstTry, jr.lastTry = st.AcceptedAt, st.AcceptedAt
		if st.Recipients == 0 {
			st.Recipients = len(jr.spec.job.Recipients)
		}
		w.h.status[id] = *st
	}
	return w
}

func (w *histBuilder) arrive(as ...arrival) *histBuilder {
	w.h.arrivals = append(w.h.arrivals, as...)
	slices.SortStableFunc(w.h.arrivals, func(a, b arrival) int { return a.at.Compare(b.at) })
	return w
}

func (w *histBuilder) excuse(job, tok string) *histBuilder {
	w.h.excused[callKey{job, tok}] = true
	return w
}

func (w *histBuilder) with(f func(*history)) *histBuilder { f(w.h); return w }

func st(s worker.JobStatus) *worker.JobStatus { return &s }

// prefsWritten adds a write of u's preferences, tried at ms tried and
// answered at ms answered, opting out of cats; the tables' policy gets
// the categories promo, and receipt as a required one.
func prefsWritten(u string, tried, answered int, cats ...string) func(*history) {
	return func(h *history) {
		h.policy.Categories["promo"] = throttle.Category{}
		h.policy.Categories["receipt"] = throttle.Category{Required: true}
		h.prefs = append(h.prefs, prefWrite{user: u, optOut: cats, tried: ms(tried), answered: ms(answered)})
	}
}

func critical() jobOpt { return func(jr *jobRun) { jr.spec.job.Priority = payload.PriorityCritical } }

// TestChecks runs each check on histories that must pass and histories
// that must fail: every check can fail, and none fails what the docs
// allow.
func TestChecks(t *testing.T) {
	tests := []struct {
		name  string
		check func(*history) []failure
		h     *histBuilder
		want  int // failures
	}{
		// lookup
		{"lookup: every recipient as its status counts", checkLookup, newHistory().job("a", st(counts(0, "delivered", 1, "failed", 1)), recipients("u", "v")).
			arrive(pushed("a", "u", "t-u", 10)).with(func(h *history) { h.lookups["a"] = lookupOf("a", "delivered", "failed|giving up after 3 retries") }), 0},
		{"lookup: none listed", checkLookup, newHistory().job("a", st(counts(0, "delivered", 1, "failed", 1)), recipients("u", "v")).
			arrive(pushed("a", "u", "t-u", 10)).with(func(h *history) { h.lookups["a"] = lookupOf("a") }), 1},
		{"lookup: states other than the counts", checkLookup, newHistory().job("a", st(counts(0, "delivered", 1, "failed", 1)), recipients("u", "v")).
			arrive(pushed("a", "u", "t-u", 10), pushed("a", "v", "t-v", 10)).with(func(h *history) { h.lookups["a"] = lookupOf("a", "delivered", "delivered") }), 1},
		{"lookup: a failure without its reason", checkLookup, newHistory().job("a", st(counts(0, "delivered", 1, "failed", 1)), recipients("u", "v")).
			arrive(pushed("a", "u", "t-u", 10)).with(func(h *history) { h.lookups["a"] = lookupOf("a", "delivered", "failed") }), 1},
		{"lookup: delivered, never pushed", checkLookup, newHistory().job("a", st(counts(0, "delivered", 1, "failed", 1)), recipients("u", "v")).
			arrive(pushed("a", "v", "t-v", 10)).with(func(h *history) { h.lookups["a"] = lookupOf("a", "delivered", "failed|x") }), 1},
		{"lookup: an error", checkLookup, newHistory().job("a", st(counts(0, "delivered", 1)), recipients("u")).
			with(func(h *history) { h.lookupErr["a"] = errors.New("connection refused") }), 1},

		// never-lost
		{"never-lost: delivered", checkNeverLost, newHistory().job("a", st(counts(0, "delivered", 1)), recipients("u")), 0},
		{"never-lost: pending at the end", checkNeverLost, newHistory().job("a", st(counts(0, "pending", 1)), recipients("u")), 1},
		{"never-lost: accepted, unknown", checkNeverLost, newHistory().job("a", nil, recipients("u")).with(func(h *history) { h.unknown["a"] = true }), 1},
		{"never-lost: throttle_full without a pending cap", checkNeverLost, newHistory().job("a", st(counts(0, "throttle_full", 1)), recipients("u")), 1},
		{"never-lost: throttle_full with a pending cap", checkNeverLost, newHistory().job("a", st(counts(0, "throttle_full", 1)), recipients("u")).with(func(h *history) { h.pendingCap = true }), 0},
		{"never-lost: expired without a deadline", checkNeverLost, newHistory().job("a", st(counts(0, "expired", 1)), recipients("u")), 1},
		{"never-lost: expired with a deadline", checkNeverLost, newHistory().job("a", st(counts(0, "expired", 1)), recipients("u"), expiresAt(500)), 0},
		{"never-lost: collapsed without a key", checkNeverLost, newHistory().job("a", st(counts(0, "collapsed", 1)), recipients("u")), 1},
		{"never-lost: cancelled, never asked", checkNeverLost, newHistory().job("a", st(counts(0, "cancelled", 1)), recipients("u")), 1},
		{"never-lost: cancelled", checkNeverLost, newHistory().job("a", st(counts(0, "cancelled", 1)), recipients("u"), cancelledAt(100)), 0},
		{"never-lost: token_invalid, live token", checkNeverLost, newHistory().job("a", st(counts(0, "token_invalid", 1)), recipients("u")), 1},
		{"never-lost: token_invalid, dead token", checkNeverLost, newHistory().job("a", st(counts(0, "token_invalid", 1)), recipients("u")).with(func(h *history) { h.dead["t-u"] = true }), 0},
		{"never-lost: failed", checkNeverLost, newHistory().job("a", st(counts(0, "failed", 1)), recipients("u")), 1},
		{"never-lost: failed by an ending device beside a live one", checkNeverLost, newHistory().job("a", st(counts(0, "failed", 1)), recipients("u"), secondDevice("u", "t-u2")).
			with(func(h *history) { h.ending["t-u"] = true }), 0},
		{"never-lost: opted_out, never opted out", checkNeverLost, newHistory().job("a", st(counts(0, "opted_out", 1)), recipients("u"), category("promo")), 1},
		{"never-lost: opted_out", checkNeverLost, newHistory().job("a", st(counts(0, "opted_out", 1)), recipients("u"), category("promo")).with(prefsWritten("u", 100, 110, "promo")), 0},
		{"never-lost: opted_out of a required category", checkNeverLost, newHistory().job("a", st(counts(0, "opted_out", 1)), recipients("u"), category("receipt")).with(prefsWritten("u", 100, 110, "receipt")), 1},

		// counts-equal-arrivals
		{"counts: equal", checkCounts, newHistory().job("a", st(counts(0, "delivered", 1)), recipients("u")).arrive(pushed("a", "u", "t-u", 10)), 0},
		{"counts: one more than reached", checkCounts, newHistory().job("a", st(counts(0, "delivered", 2)), recipients("u", "v")).arrive(pushed("a", "u", "t-u", 10)), 1},
		{"counts: one reached, none counted", checkCounts, newHistory().job("a", st(counts(0, "token_invalid", 1)), recipients("u")).arrive(pushed("a", "u", "t-u", 10)), 1},
		{"counts: excused by a kill", checkCounts, newHistory().job("a", st(counts(0, "expired", 1)), recipients("u")).arrive(pushed("a", "u", "t-u", 10)).excuse("a", "t-u"), 0},

		// never-twice
		{"never-twice: once", checkNeverTwice, newHistory().job("a", nil, recipients("u")).arrive(pushed("a", "u", "t-u", 10)), 0},
		{"never-twice: twice", checkNeverTwice, newHistory().job("a", nil, recipients("u")).arrive(pushed("a", "u", "t-u", 10), pushed("a", "u", "t-u", 900)), 1},
		{"never-twice: twice, the call in flight at a kill", checkNeverTwice, newHistory().job("a", nil, recipients("u")).arrive(pushed("a", "u", "t-u", 10), pushed("a", "u", "t-u", 900)).excuse("a", "t-u"), 0},
		{
			// A kill excuses the push in flight, not every push to its
			// device: job b's duplicate is a defect though job a's call
			// to the same device was in flight at the kill (the
			// token-keyed excuse passed it).
			"never-twice: another job's call to the device was in flight", checkNeverTwice,
			newHistory().job("a", nil, recipients("u")).job("b", nil, recipients("u")).
				arrive(pushed("a", "u", "t-u", 10), pushed("b", "u", "t-u", 800), pushed("b", "u", "t-u", 1600)).excuse("a", "t-u"), 1,
		},
		{"never-twice: a refusal, then the push", checkNeverTwice, newHistory().job("a", nil, recipients("u")).arrive(answeredWith("a", "u", "t-u", 10, 503), pushed("a", "u", "t-u", 900)), 0},
		{"never-twice: a success nobody waited for, then the push", checkNeverTwice, newHistory().job("a", nil, recipients("u")).arrive(arrival{job: "a", user: "u", token: "t-u", at: ms(10), status: 200}, pushed("a", "u", "t-u", 900)), 0},

		// never-after-expiry, nothing-after-cancel, send_at
		{"expiry: before", checkExpiry, newHistory().job("a", nil, recipients("u"), expiresAt(500)).arrive(pushed("a", "u", "t-u", 500)), 0},
		{"expiry: after", checkExpiry, newHistory().job("a", nil, recipients("u"), expiresAt(500)).arrive(pushed("a", "u", "t-u", 500+26)), 1},
		{"expiry: a clock 200 ms behind", checkExpiry, newHistory().job("a", nil, recipients("u"), expiresAt(500)).with(func(h *history) { h.skews = []time.Duration{-200 * time.Millisecond, 90 * time.Millisecond} }).
			arrive(pushed("a", "u", "t-u", 500+220)), 0},
		{"expiry: later than the clock behind", checkExpiry, newHistory().job("a", nil, recipients("u"), expiresAt(500)).with(func(h *history) { h.skews = []time.Duration{-200 * time.Millisecond, 90 * time.Millisecond} }).
			arrive(pushed("a", "u", "t-u", 500+230)), 1},
		{"expiry: a clock ahead excuses nothing", checkExpiry, newHistory().job("a", nil, recipients("u"), expiresAt(500)).with(func(h *history) { h.skews = []time.Duration{200 * time.Millisecond} }).
			arrive(pushed("a", "u", "t-u", 500+26)), 1},
		{"cancel: before its answer", checkCancel, newHistory().job("a", nil, recipients("u"), cancelledAt(500)).arrive(pushed("a", "u", "t-u", 520)), 0},
		{"cancel: after its answer", checkCancel, newHistory().job("a", nil, recipients("u"), cancelledAt(500)).arrive(pushed("a", "u", "t-u", 530)), 1},
		{"send_at: within the tolerance", checkSendAt, newHistory().job("a", nil, recipients("u"), sendAt(1000)).arrive(pushed("a", "u", "t-u", 760)), 0},
		{"send_at: early", checkSendAt, newHistory().job("a", nil, recipients("u"), sendAt(1000)).arrive(pushed("a", "u", "t-u", 740)), 1},

		// never-early: caps, gap, quiet hours (rules 2/2s, gap 700 ms)
		{"rules: kept", checkRulesHold, newHistory().job("a", nil, recipients("u")).job("b", nil, recipients("u")).job("c", nil, recipients("u")).
			arrive(pushed("a", "u", "t-u", 0), pushed("b", "u", "t-u", 700), pushed("c", "u", "t-u", 2000)), 0},
		{"rules: a third push in the window", checkRulesHold, newHistory().job("a", nil, recipients("u")).job("b", nil, recipients("u")).job("c", nil, recipients("u")).
			arrive(pushed("a", "u", "t-u", 0), pushed("b", "u", "t-u", 800), pushed("c", "u", "t-u", 1700)), 1},
		{"rules: the window's edge within the tolerance", checkRulesHold, newHistory().job("a", nil, recipients("u")).job("b", nil, recipients("u")).job("c", nil, recipients("u")).
			arrive(pushed("a", "u", "t-u", 0), pushed("b", "u", "t-u", 800), pushed("c", "u", "t-u", 1760)), 0},
		{"rules: a gap of half", checkRulesHold, newHistory().job("a", nil, recipients("u")).job("b", nil, recipients("u")).
			arrive(pushed("a", "u", "t-u", 0), pushed("b", "u", "t-u", 350)), 1},
		{"rules: a gap within the tolerance", checkRulesHold, newHistory().job("a", nil, recipients("u")).job("b", nil, recipients("u")).
			arrive(pushed("a", "u", "t-u", 0), pushed("b", "u", "t-u", 460)), 0},
		{"rules: ops is outside the global rules", checkRulesHold, newHistory().job("a", nil, recipients("u")).job("b", nil, recipients("u"), category("ops")).
			arrive(pushed("a", "u", "t-u", 0), pushed("b", "u", "t-u", 100)), 0},
		{"rules: one push to two devices", checkRulesHold, newHistory().job("a", nil, recipients("u")).
			arrive(pushed("a", "u", "t-u", 0), pushed("a", "u", "t-u2", 40)), 0},
		{"quiet: inside", checkRulesHold, newHistory().job("a", nil, recipients("u"), category("night")).
			with(func(h *history) { h.quietFrom, h.quietTo = ms(1000), ms(3000) }).arrive(pushed("a", "u", "t-u", 2000)), 1},
		{"quiet: at its end", checkRulesHold, newHistory().job("a", nil, recipients("u"), category("night")).
			with(func(h *history) { h.quietFrom, h.quietTo = ms(1000), ms(3000) }).arrive(pushed("a", "u", "t-u", 2800)), 0},

		// max_rate 4/s: bound 4 + 1 + 1 = 6 a second
		{"max_rate: within", checkMaxRate, newHistory().job("r", nil, inApp(appRated)).
			arrive(pushed("r", "a", "ta", 0), pushed("r", "b", "tb", 100), pushed("r", "c", "tc", 200), pushed("r", "d", "td", 300), pushed("r", "e", "te", 400), pushed("r", "f", "tf", 500)), 0},
		{"max_rate: over", checkMaxRate, newHistory().job("r", nil, inApp(appRated)).
			arrive(pushed("r", "a", "ta", 0), pushed("r", "b", "tb", 100), pushed("r", "c", "tc", 200), pushed("r", "d", "td", 300), pushed("r", "e", "te", 400), pushed("r", "f", "tf", 500), pushed("r", "g", "tg", 600)), 1},

		// retry-after (3 s)
		{"retry-after: kept", checkRetryAfter, newHistory().job("a", nil, recipients("u")).with(func(h *history) { h.retryAfter["t-u"] = 3 * time.Second }).
			arrive(answeredWith("a", "u", "t-u", 0, 429), pushed("a", "u", "t-u", 3000)), 0},
		{"retry-after: early", checkRetryAfter, newHistory().job("a", nil, recipients("u")).with(func(h *history) { h.retryAfter["t-u"] = 3 * time.Second }).
			arrive(answeredWith("a", "u", "t-u", 0, 429), pushed("a", "u", "t-u", 2000)), 1},
		{"retry-after: within the workers' clock spread", checkRetryAfter, newHistory().job("a", nil, recipients("u")).with(func(h *history) {
			h.retryAfter["t-u"], h.skews = 3*time.Second, []time.Duration{-300 * time.Millisecond, 300 * time.Millisecond}
		}).arrive(answeredWith("a", "u", "t-u", 0, 429), pushed("a", "u", "t-u", 2500)), 0},
		{"retry-after: beyond the workers' clock spread", checkRetryAfter, newHistory().job("a", nil, recipients("u")).with(func(h *history) {
			h.retryAfter["t-u"], h.skews = 3*time.Second, []time.Duration{-300 * time.Millisecond, 300 * time.Millisecond}
		}).arrive(answeredWith("a", "u", "t-u", 0, 429), pushed("a", "u", "t-u", 2300)), 1},
		{"retry-after: another job may come sooner", checkRetryAfter, newHistory().job("a", nil, recipients("u")).job("b", nil, recipients("u")).with(func(h *history) { h.retryAfter["t-u"] = 3 * time.Second }).
			arrive(answeredWith("a", "u", "t-u", 0, 429), pushed("b", "u", "t-u", 1000)), 0},

		// collapse
		{"collapse: the older collapsed", checkCollapse, newHistory().job("a", st(counts(0, "collapsed", 1)), recipients("u"), withCollapse("k")).job("b", st(counts(500, "delivered", 1)), recipients("u"), withCollapse("k")).
			arrive(pushed("b", "u", "t-u", 900)), 0},
		{"collapse: a collapsed push arrived", checkCollapse, newHistory().job("a", st(counts(0, "collapsed", 1)), recipients("u"), withCollapse("k")).job("b", st(counts(500, "delivered", 1)), recipients("u"), withCollapse("k")).
			arrive(pushed("a", "u", "t-u", 300), pushed("b", "u", "t-u", 900)), 1},
		{"collapse: the newest collapsed", checkCollapse, newHistory().job("a", st(counts(0, "delivered", 1)), recipients("u"), withCollapse("k")).job("b", st(counts(500, "collapsed", 1)), recipients("u"), withCollapse("k")).
			arrive(pushed("a", "u", "t-u", 900)), 1},
		{
			"collapse: an older push's retry after the newer push", checkCollapse,
			newHistory().job("a", st(counts(0, "delivered", 1)), recipients("u"), withCollapse("k")).job("b", st(counts(500, "delivered", 1)), recipients("u"), withCollapse("k")).
				arrive(answeredWith("a", "u", "t-u", 100, 503), pushed("b", "u", "t-u", 600), answeredWith("a", "u", "t-u2", 900, 503), pushed("a", "u", "t-u", 1800)), 1,
		},
		{
			// A held booking within the collapse margin is sent: an older
			// push's first attempt may follow the newer one.
			"collapse: an older push's first attempt after the newer push", checkCollapse,
			newHistory().job("a", st(counts(0, "delivered", 1)), recipients("u"), withCollapse("k")).job("b", st(counts(500, "delivered", 1)), recipients("u"), withCollapse("k")).
				arrive(pushed("b", "u", "t-u", 600), pushed("a", "u", "t-u", 1800)), 0,
		},
		{
			// The limiter forgets the newer push once its windows passed.
			"collapse: an older push's retry after the windows", checkCollapse,
			newHistory().job("a", st(counts(0, "delivered", 1)), recipients("u"), withCollapse("k")).job("b", st(counts(500, "delivered", 1)), recipients("u"), withCollapse("k")).
				arrive(answeredWith("a", "u", "t-u", 100, 503), pushed("b", "u", "t-u", 600), answeredWith("a", "u", "t-u2", 900, 503), pushed("a", "u", "t-u", 9000)), 0,
		},

		{"collapse: the event names its replacement", checkCollapse, newHistory().job("a", st(counts(0, "collapsed", 1)), recipients("u"), withCollapse("k")).job("b", st(counts(500, "delivered", 1)), recipients("u"), withCollapse("k")).
			with(collapsedEvent("a", "u", "b")).arrive(pushed("b", "u", "t-u", 900)), 0},
		{"collapse: the event names no replacement", checkCollapse, newHistory().job("a", st(counts(0, "collapsed", 1)), recipients("u"), withCollapse("k")).job("b", st(counts(500, "delivered", 1)), recipients("u"), withCollapse("k")).
			with(collapsedEvent("a", "u", "")).arrive(pushed("b", "u", "t-u", 900)), 0},
		{"collapse: the event names an older push", checkCollapse, newHistory().job("a", st(counts(500, "collapsed", 1)), recipients("u"), withCollapse("k")).job("b", st(counts(0, "delivered", 1)), recipients("u"), withCollapse("k")).
			job("c", st(counts(700, "delivered", 1)), recipients("u"), withCollapse("k")).with(collapsedEvent("a", "u", "b")).arrive(pushed("c", "u", "t-u", 900)), 1},
		{"collapse: the event names another key's push", checkCollapse, newHistory().job("a", st(counts(0, "collapsed", 1)), recipients("u"), withCollapse("k")).job("b", st(counts(500, "delivered", 1)), recipients("u"), withCollapse("k")).
			job("c", st(counts(600, "delivered", 1)), recipients("u"), withCollapse("other")).with(collapsedEvent("a", "u", "c")).arrive(pushed("b", "u", "t-u", 900)), 1},
		{"collapse: accepted outside its submissions", checkCollapse, newHistory().job("a", st(counts(0, "delivered", 1)), recipients("u"), withCollapse("k")).
			with(func(h *history) { h.jobs["a"].lastTry = ms(-10); h.jobs["a"].firstTry = ms(-20) }), 1},

		// opted-out (within the wire's 25 ms of the write's answer)
		{"opted-out: within the wire's time", checkOptOut, newHistory().job("a", nil, recipients("u"), category("promo")).with(prefsWritten("u", 0, 10, "promo")).
			arrive(pushed("a", "u", "t-u", 10+25)), 0},
		{"opted-out: after the answer", checkOptOut, newHistory().job("a", nil, recipients("u"), category("promo")).with(prefsWritten("u", 0, 10, "promo")).
			arrive(pushed("a", "u", "t-u", 10+30)), 1},
		{"opted-out: a refused request counts too", checkOptOut, newHistory().job("a", nil, recipients("u"), category("promo")).with(prefsWritten("u", 0, 10, "promo")).
			arrive(answeredWith("a", "u", "t-u", 5000, 503)), 1},
		{"opted-out: another category", checkOptOut, newHistory().job("a", nil, recipients("u"), category("night")).with(prefsWritten("u", 0, 10, "promo")).
			arrive(pushed("a", "u", "t-u", 5000)), 0},
		{"opted-out: another user", checkOptOut, newHistory().job("a", nil, recipients("v"), category("promo")).with(prefsWritten("u", 0, 10, "promo")).
			arrive(pushed("a", "v", "t-v", 5000)), 0},
		{"opted-out: opted back in", checkOptOut, newHistory().job("a", nil, recipients("u"), category("promo")).with(prefsWritten("u", 0, 10, "promo")).with(prefsWritten("u", 1000, 1010)).
			arrive(pushed("a", "u", "t-u", 5000)), 0},
		{"opted-out: a write whose answer was lost", checkOptOut, newHistory().job("a", nil, recipients("u"), category("promo")).with(prefsWritten("u", 0, -1, "promo")).
			with(func(h *history) { h.prefs[0].answered = time.Time{} }).arrive(pushed("a", "u", "t-u", 5000)), 0},
		{"opted-out: a required category", checkOptOut, newHistory().job("a", nil, recipients("u"), category("receipt")).with(prefsWritten("u", 0, 10, "receipt")).
			arrive(pushed("a", "u", "t-u", 5000)), 0},
		{"opted-out: a critical push", checkOptOut, newHistory().job("a", nil, recipients("u"), category("promo"), critical()).with(prefsWritten("u", 0, 10, "promo")).
			arrive(pushed("a", "u", "t-u", 5000)), 0},
		{"opted-out: submitted after the opt-out, ended opted_out", checkOptOut, newHistory().job("a", st(counts(1000, "opted_out", 1)), recipients("u"), category("promo")).with(prefsWritten("u", 0, 10, "promo")), 0},
		{"opted-out: submitted after the opt-out, ended otherwise", checkOptOut, newHistory().job("a", st(counts(1000, "delivered", 1)), recipients("u"), category("promo")).with(prefsWritten("u", 0, 10, "promo")), 1},
		{"opted-out: submitted before the opt-out, delivered", checkOptOut, newHistory().job("a", st(counts(0, "delivered", 1)), recipients("u"), category("promo")).with(prefsWritten("u", 100, 110, "promo")).
			arrive(pushed("a", "u", "t-u", 50)), 0},

		// unknown-app
		{"unknown-app: failed", checkUnknownApp, newHistory().job("a", st(counts(0, "failed", 1)), recipients("u"), inApp(appLate)), 1},
		{"unknown-app: delivered", checkUnknownApp, newHistory().job("a", st(counts(0, "delivered", 1)), recipients("u"), inApp(appLate)), 0},

		// memory
		{"memory: every key expires", checkMemory, newHistory().with(func(h *history) {
			h.keys = []keyInfo{{key: "hush:throttle:{u}", user: "u", bytes: 300, ttl: time.Second}, {key: "hush:job:{a}", ttl: time.Hour}}
		}), 0},
		{"memory: a limiter key without expiry", checkMemory, newHistory().with(func(h *history) {
			h.keys = []keyInfo{{key: "hush:throttle:{u}", user: "u", bytes: 300, ttl: -1}}
		}), 1},
		{"memory: a user's preferences keep no expiry", checkMemory, newHistory().with(func(h *history) {
			h.keys = []keyInfo{{key: "hush:throttle:{u}:p", user: "u", bytes: 100, ttl: -1}}
		}), 0},
		{"memory: too many bytes", checkMemory, newHistory().with(func(h *history) {
			h.keys = []keyInfo{{key: "hush:throttle:{u}", user: "u", bytes: memoryBound, ttl: time.Second}, {key: "hush:throttle:{u}:k", user: "u", bytes: 1, ttl: time.Second}}
		}), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.check(tt.h.h)
			if len(got) != tt.want {
				t.Errorf("%d failures, want %d: %v", len(got), tt.want, got)
			}
		})
	}
}

// collapsedEvent adds job's collapsed event for user, naming by as its
// replacement.
func collapsedEvent(job, user, by string) func(*history) {
	return func(h *history) {
		b, _ := json.Marshal(worker.Event{ID: "evt-" + job + "-" + user, Type: worker.EventDropped, Reason: "collapsed", Job: job, UserID: user, ReplacedBy: by})
		if h.events == nil {
			h.events = map[string]string{}
		}
		h.events["evt-"+job+"-"+user] = string(b)
	}
}
