package faultsim

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// finalStates are the final states (docs/delivery.md section 7, which
// docs' tests check against worker.FinalStates).
var finalStates = worker.FinalStates()

// The tolerances of the checks, each the one the docs state.
const (
	// tolerance: the rules, quiet hours and send_at hold as measured at
	// the provider "with 250 ms of tolerance for clock and network
	// jitter" (docs/delivery.md section 8, "The rules hold").
	tolerance = 250 * time.Millisecond
	// loopback: a request that left before an instant (a deadline, a
	// cancellation's answer) reaches the fake on loopback within this.
	// The docs promise no request after expires_at (section 4) and none
	// after a cancellation's answer (section 8, "A cancelled job sends
	// nothing after the cancellation's answer"): no tolerance of their
	// own, only the wire's.
	loopback = 25 * time.Millisecond
	// expiryTolerance and cancelTolerance are loopback for those promises.
	// A worker measures expires_at on its own clock (docs/delivery.md
	// section 8, "a worker measures expires_at ... on its own"), so
	// checkExpiry adds how far the run's slowest clock is behind.
	expiryTolerance = loopback
	cancelTolerance = loopback
	// retryAfterTolerance: a throttled delivery is "retried after the
	// provider's Retry-After" (docs/delivery.md section 5, throttled),
	// counted from the answer, less the wire's time. The retry's time is
	// read on one worker's clock and may be waited for on another's, so
	// checkRetryAfter adds the run's spread of clock skews (at most twice
	// the 300 ms section 8 assumes of each clock).
	retryAfterTolerance = loopback
	// pushSpan: arrivals of one job to one user this close together are
	// one push ("A push is one delivery attempt, sent to all of the
	// user's devices at once", section 8): its devices' calls leave
	// together, within the 100 ms a call may leave after its slot.
	pushSpan = 150 * time.Millisecond
	// rateJitter: a rated app's sends per second stay within R + 1 +
	// ceil(2 R rateJitter) (docs/configuration.md, "Send rates").
	rateJitter = 0.025
)

// memoryBound is the most a user's limiter keys may hold after a run: a
// few windows' entries at these rates.
const memoryBound = 4096

// checks are every check of a history, in the order they report.
var checks = []struct {
	name string
	fn   func(*history) []failure
}{
	{"never-lost", checkNeverLost},
	{"counts-equal-arrivals", checkCounts},
	{"never-twice", checkNeverTwice},
	{"never-after-expiry", checkExpiry},
	{"nothing-after-cancel", checkCancel},
	{"never-early/send_at", checkSendAt},
	{"never-early", checkRulesHold},
	{"never-early/max_rate", checkMaxRate},
	{"retry-after", checkRetryAfter},
	{"collapse", checkCollapse},
	{"opted-out", checkOptOut},
	{"unknown-app", checkUnknownApp},
	{"memory", checkMemory},
	{"webhook", checkWebhook},
	{"events", checkEvents},
	{"lookup", checkLookup},
}

// check verifies every promise from the run's history and returns the
// broken ones.
func (s *sim) check(rdb redis.UniversalClient) []failure {
	h := s.history(rdb)
	var out []failure
	for _, c := range checks {
		out = append(out, c.fn(h)...)
	}
	return out
}

// checkNeverLost: every accepted job ends with every recipient in a
// final state, and in one the run allows (allowedStates): no accepted
// delivery is lost (docs/delivery.md section 8), and none ends in a state
// nothing in the run could cause.
func checkNeverLost(h *history) []failure {
	var out []failure
	byJob := h.byJob()
	for _, id := range sortedKeys(h.jobs) {
		jr := h.jobs[id]
		if !jr.tried {
			continue
		}
		if h.unknown[id] {
			if jr.accepted {
				out = append(out, fail("never-lost", nil, "job %s was accepted but is unknown", id))
			} else if len(byJob[id]) > 0 {
				out = append(out, fail("never-lost", traceOf(byJob[id]...), "job %s was refused but reached %d devices", id, len(byJob[id])))
			}
			continue
		}
		if err := h.statusErr[id]; err != nil {
			out = append(out, fail("never-lost", nil, "job %s: status: %v", id, err))
			continue
		}
		st, ok := h.status[id]
		if !ok {
			continue
		}
		if !final(st) {
			out = append(out, fail("never-lost", traceOf(byJob[id]...), "job %s is not final: %v", id, st.Counts))
			continue
		}
		allowed := allowedStates(h, jr)
		for _, k := range sortedKeys(st.Counts) {
			n := st.Counts[k]
			switch {
			case n == 0 || k == "pending":
			case !slices.Contains(finalStates, k):
				out = append(out, fail("never-lost", nil, "job %s: %d recipients in undocumented state %q", id, n, k))
			case n > allowed[k]:
				out = append(out, fail("never-lost", traceOf(byJob[id]...), "job %s: %d recipients ended %s, the run allows %d (%s): %v", id, n, k, allowed[k], why(k), st.Counts))
			}
		}
	}
	return out
}

// allowedStates is how many recipients of jr may end in each final state
// in this run: delivered any; token_invalid those whose every device is
// dead; expired only with a deadline; collapsed only with a collapse key;
// cancelled only when a cancellation was sent; opted_out only for
// recipients of a category their user's preferences were written to opt
// out of (not a required category, nor a critical push); throttle_full only when a
// user could hold the pending cap of bookings; failed (or expired) only
// for recipients with a device that answers what ends a delivery (an
// absurd Retry-After: the longest Retry-After of a recipient's devices
// decides its retry, and one past HUSH_MAX_THROTTLED fails the delivery,
// docs/delivery.md sections 5 and 6, whatever its other devices answer),
// never else (the workload's other refusals are transient and answered
// once, within HUSH_MAX_RETRY).
func allowedStates(h *history, jr *jobRun) map[string]int {
	j := jr.spec.job
	all := len(j.Recipients)
	a := map[string]int{"delivered": all}
	for _, r := range j.Recipients {
		live, ending := false, false
		for _, d := range r.Devices {
			live = live || !h.dead[d.Token] && !h.ending[d.Token]
			ending = ending || h.ending[d.Token]
		}
		switch {
		case ending:
			a["failed"]++
		case live:
		default:
			a["token_invalid"]++
		}
	}
	if !j.Deadline().IsZero() || jr.spec.expiresIn > 0 {
		a["expired"] = all
	}
	if j.CollapseKey != "" {
		a["collapsed"] = all
	}
	if jr.cancelTried {
		a["cancelled"] = all
	}
	if optOutable(h, j) {
		for _, r := range j.Recipients {
			if optOutTried(h, r.UserID, j.Category) {
				a["opted_out"]++
			}
		}
	}
	if h.pendingCap {
		a["throttle_full"] = all
	}
	return a
}

func why(state string) string {
	switch state {
	case "token_invalid":
		return "recipients whose every device is dead"
	case "expired":
		return "the job has no deadline"
	case "collapsed":
		return "the job has no collapse key"
	case "cancelled":
		return "no cancellation was sent"
	case "opted_out":
		return "no recipient's user opted out of its category, or the category is required, or the push critical"
	case "throttle_full":
		return "no user holds the pending cap of bookings"
	}
	return "no workload answer fails a delivery for good"
}

// checkCounts: a job's delivered count is the number of its recipients
// the providers pushed to, give or take recipients whose push was excused
// (a kill may have lost its answer, or sent it again).
func checkCounts(h *history) []failure {
	var out []failure
	byJob := h.byJob()
	for _, id := range sortedKeys(h.status) {
		st := h.status[id]
		if !final(st) {
			continue
		}
		sent, risky := map[string]bool{}, map[string]bool{}
		var trace []arrival
		for _, a := range byJob[id] {
			if a.delivered() {
				sent[a.user] = true
				trace = append(trace, a)
			}
			if h.excused[callKey{a.job, a.token}] {
				risky[a.user] = true
			}
		}
		lo, hi := 0, len(sent)
		for u := range sent {
			if !risky[u] {
				lo++
			}
		}
		if d := st.Counts["delivered"]; d < lo || d > hi {
			out = append(out, fail("counts-equal-arrivals", traceOf(trace...), "job %s: %d delivered in its status, %d recipients reached at the providers (%d of them excused by a kill): %v", id, d, len(sent), len(sent)-lo, st.Counts))
		}
	}
	return out
}

// checkNeverTwice: no device gets a job twice, except a push (that job,
// that device) whose call was in flight at a kill or answered within
// recordWindow before it (docs/delivery.md section 9).
func checkNeverTwice(h *history) []failure {
	var out []failure
	seen := map[callKey][]arrival{}
	var order []callKey
	for _, a := range h.arrivals {
		if !a.delivered() {
			continue
		}
		k := callKey{a.job, a.token}
		if seen[k] == nil {
			order = append(order, k)
		}
		seen[k] = append(seen[k], a)
	}
	for _, k := range order {
		if as := seen[k]; len(as) > 1 && !h.excused[k] {
			out = append(out, fail("never-twice", traceOf(as...), "job %s reached device %s %d times, with no kill while that push was in flight", k.job, short(k.token), len(as)))
		}
	}
	return out
}

// checkExpiry: no request reaches a provider after its job's expires_at,
// as the clock of the worker that sent it reads it.
func checkExpiry(h *history) []failure {
	var out []failure
	behind := time.Duration(0)
	if len(h.skews) > 0 {
		behind = max(0, -slices.Min(h.skews))
	}
	for _, a := range h.arrivals {
		jr := h.jobs[a.job]
		if jr == nil || jr.spec.job.ExpiresAt == nil {
			continue
		}
		if exp := *jr.spec.job.ExpiresAt; a.at.After(exp.Add(expiryTolerance + behind)) {
			out = append(out, fail("never-after-expiry", traceOf(a), "job %s reached %s %s after its expires_at %s", a.job, a.user, a.at.Sub(exp), exp.Format("15:04:05.000")))
		}
	}
	return out
}

// checkCancel: nothing reaches a provider after a cancellation's answer.
func checkCancel(h *history) []failure {
	var out []failure
	for _, a := range h.arrivals {
		jr := h.jobs[a.job]
		if jr == nil || jr.cancelled.IsZero() {
			continue
		}
		if a.at.After(jr.cancelled.Add(cancelTolerance)) {
			out = append(out, fail("nothing-after-cancel", traceOf(a), "job %s reached %s %s after its cancellation was answered at %s", a.job, a.user, a.at.Sub(jr.cancelled), jr.cancelled.Format("15:04:05.000")))
		}
	}
	return out
}

// checkSendAt: no push is delivered before its job's send_at.
func checkSendAt(h *history) []failure {
	var out []failure
	for _, a := range h.arrivals {
		jr := h.jobs[a.job]
		if jr == nil || jr.spec.job.SendAt == nil || !a.delivered() {
			continue
		}
		if at := *jr.spec.job.SendAt; a.at.Before(at.Add(-tolerance)) {
			out = append(out, fail("never-early/send_at", traceOf(a), "job %s reached %s %s before its send_at %s", a.job, a.user, at.Sub(a.at), at.Format("15:04:05.000")))
		}
	}
	return out
}

// push is one push to a user: its first delivered arrival.
type push struct {
	arrival
	category string
}

// pushesOf is each user's pushes under the rules (bypass priorities are
// outside them), in time order: a job's arrivals to a user within
// pushSpan of its first are one push.
func pushesOf(h *history) map[string][]push {
	out := map[string][]push{}
	byJob := h.byJob()
	for _, id := range sortedKeys(h.jobs) {
		j := h.jobs[id].spec.job
		if j.Priority == payload.PriorityCritical {
			continue
		}
		last := map[string]time.Time{}
		for _, a := range byJob[id] {
			if !a.delivered() {
				continue
			}
			if t, ok := last[a.user]; ok && a.at.Sub(t) <= pushSpan {
				continue
			}
			last[a.user] = a.at
			out[a.user] = append(out[a.user], push{arrival: a, category: j.Category})
		}
	}
	for _, ps := range out {
		slices.SortFunc(ps, func(a, b push) int { return a.at.Compare(b.at) })
	}
	return out
}

// checkRulesHold: per user, the caps and the gap of the global rules and
// of each category, and the night category's quiet hours, hold within
// tolerance.
func checkRulesHold(h *history) []failure {
	var out []failure
	p := h.policy
	pushes := pushesOf(h)
	for _, u := range sortedKeys(pushes) {
		var global []push
		cats := map[string][]push{}
		for _, x := range pushes[u] {
			if !p.Categories[x.category].SkipGlobal {
				global = append(global, x)
			}
			if x.category != "" {
				cats[x.category] = append(cats[x.category], x)
			}
		}
		out = append(out, checkQuiet(u, cats["night"], h.quietFrom, h.quietTo)...)
		out = append(out, checkCaps(u, "global", global, p.Limits)...)
		out = append(out, checkGap(u, "global", global, p.MinGap)...)
		for _, name := range sortedKeys(cats) {
			c := p.Categories[name]
			out = append(out, checkCaps(u, name, cats[name], c.Limits)...)
			out = append(out, checkGap(u, name, cats[name], c.MinGap)...)
		}
	}
	return out
}

// checkCaps: in every rolling window W, at most N pushes (rule N/W).
func checkCaps(user, scope string, ps []push, limits []throttle.Limit) []failure {
	var out []failure
	for _, l := range limits {
		for i := 0; i+l.N < len(ps); i++ {
			if d := ps[i+l.N].at.Sub(ps[i].at); d < l.Window-tolerance {
				out = append(out, fail("never-early/cap", traceOf(arrivalsOf(ps[i:i+l.N+1])...), "user %s: %d %s pushes within %s (rule %d/%s)", user, l.N+1, scope, d, l.N, l.Window))
				break
			}
		}
	}
	return out
}

// checkGap: two consecutive pushes are at least the minimum gap apart.
func checkGap(user, scope string, ps []push, gap time.Duration) []failure {
	var out []failure
	for i := 0; gap > 0 && i+1 < len(ps); i++ {
		if d := ps[i+1].at.Sub(ps[i].at); d < gap-tolerance {
			out = append(out, fail("never-early/gap", traceOf(ps[i].arrival, ps[i+1].arrival), "user %s: two %s pushes %s apart (gap %s)", user, scope, d, gap))
			break
		}
	}
	return out
}

// checkQuiet: no push of the night category leaves inside its quiet
// hours.
func checkQuiet(user string, ps []push, from, to time.Time) []failure {
	var out []failure
	for _, x := range ps {
		if !x.at.Before(from.Add(tolerance)) && x.at.Before(to.Add(-tolerance)) {
			out = append(out, fail("never-early/quiet", traceOf(x.arrival), "user %s got job %s at %s, inside quiet hours %s-%s", user, x.job, x.at.UTC().Format("15:04:05.000"), from.Format("15:04:05.000"), to.Format("15:04:05.000")))
		}
	}
	return out
}

func arrivalsOf(ps []push) []arrival {
	out := make([]arrival, len(ps))
	for i, p := range ps {
		out[i] = p.arrival
	}
	return out
}

// rateBound is the most requests of an app at max_rate r one second may
// see (docs/configuration.md "Send rates").
func rateBound(r float64) int { return int(r) + 1 + int(math.Ceil(2*r*rateJitter)) }

// checkMaxRate: the rated app's requests per platform in any second stay
// within rateBound.
func checkMaxRate(h *history) []failure {
	var out []failure
	bound := rateBound(h.maxRate)
	for _, pl := range []payload.Platform{payload.APNs, payload.FCM, payload.WebPush} {
		var as []arrival
		for _, a := range h.arrivals {
			if jr := h.jobs[a.job]; a.platform == pl && jr != nil && jr.spec.job.App == appRated {
				as = append(as, a)
			}
		}
		for i := range as {
			k := i
			for k < len(as) && as[k].at.Sub(as[i].at) < time.Second {
				k++
			}
			if k-i > bound {
				out = append(out, fail("never-early/max_rate", traceOf(as[i:k]...), "app %s: %d sends to %s within one second from %s (max_rate %.0f/s, bound %d)", appRated, k-i, pl, as[i].at.Format("15:04:05.000"), h.maxRate, bound))
				break
			}
		}
	}
	return out
}

// checkRetryAfter: after a 429 with a Retry-After, the same push (job and
// device) is not asked of the provider again before the Retry-After has
// passed since the answer.
func checkRetryAfter(h *history) []failure {
	var out []failure
	tol := retryAfterTolerance
	if len(h.skews) > 0 {
		tol += slices.Max(h.skews) - slices.Min(h.skews)
	}
	last := map[callKey]arrival{}
	for _, a := range h.arrivals {
		k := callKey{a.job, a.token}
		if prev, ok := last[k]; ok && prev.status == 429 && !prev.answered.IsZero() && !h.excused[k] {
			if ra := h.retryAfter[a.token]; ra > 0 && a.at.Before(prev.answered.Add(ra-tol)) {
				out = append(out, fail("retry-after", traceOf(prev, a), "job %s asked device %s again %s after a 429 with Retry-After %s", a.job, short(a.token), a.at.Sub(prev.answered), ra))
			}
		}
		last[k] = a
	}
	return out
}

// checkUnknownApp: a job of an app a worker has not loaded yet is waited
// for, not failed (every worker knows appLate by the end, and the
// workload's answers never fail a delivery for good).
func checkUnknownApp(h *history) []failure {
	var out []failure
	for _, id := range sortedKeys(h.status) {
		if jr := h.jobs[id]; jr != nil && jr.spec.job.App == appLate && h.status[id].Counts["failed"] > allowedStates(h, jr)["failed"] {
			out = append(out, fail("unknown-app", nil, "job %s of app %s ended failed while a worker had not loaded the app: %v", id, appLate, h.status[id].Counts))
		}
	}
	return out
}

// checkMemory: after the run, every key of the limiter, the pacer and the
// job store has an expiry, and a user's limiter keys hold at most
// memoryBound bytes.
func checkMemory(h *history) []failure {
	var out []failure
	bytes, n := map[string]int64{}, map[string]int{}
	for _, k := range h.keys {
		if k.ttl < 0 && !isPreferences(k.key) {
			out = append(out, fail("memory", nil, "key %s has no expiry", k.key))
		}
		if k.user != "" {
			bytes[k.user] += k.bytes
			n[k.user]++
		}
	}
	for _, u := range sortedKeys(bytes) {
		if bytes[u] > memoryBound {
			out = append(out, fail("memory", nil, "user %s: %d bytes in %d limiter keys after the run, bound %d", u, bytes[u], n[u], memoryBound))
		}
	}
	return out
}

// isPreferences reports whether key is a user's preferences hash
// (throttle's "<prefix>{tag}:p"): the user's own say, kept until it is
// written again or the user deleted, with no expiry, and bounded in size
// (throttle.MaxOptOuts), so it counts toward memoryBound.
func isPreferences(key string) bool { return strings.HasSuffix(key, "}:p") }

// short is a token's head, enough to tell the simulation's apart; a log
// never carries a whole device token.
func short(tok string) string {
	if len(tok) > 12 {
		return tok[:12] + "…"
	}
	return tok
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
