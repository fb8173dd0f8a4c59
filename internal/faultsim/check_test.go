package faultsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// arrival is one request a fake provider got.
type arrival struct {
	job      string
	user     string
	token    string
	platform payload.Platform
	at       time.Time
	status   int
}

func (a arrival) delivered() bool { return a.status == http.StatusOK }

// finalStates are the final states (docs/delivery.md section 7, which
// docs' tests check against worker.FinalStates).
var finalStates = worker.FinalStates()

// Tolerances of the promises measured at the fake providers.
const (
	// expiryTolerance: a request that left before the deadline reaches
	// the fake on loopback within this.
	expiryTolerance = 25 * time.Millisecond
	// cancelTolerance: the same for a request that left before a
	// cancellation's answer.
	cancelTolerance = 25 * time.Millisecond
	// pushSpan: arrivals of one job to one user this close together are
	// one push (one delivery attempt to all of the user's devices).
	pushSpan = 150 * time.Millisecond
)

// arrivals reads both fakes' logs.
func (s *sim) arrivals() []arrival {
	owner := map[string]string{}
	for _, u := range append(slices.Clone(s.sc.users), s.sc.rated...) {
		for _, d := range u.devices {
			owner[d.Token] = u.id
		}
	}
	var out []arrival
	add := func(rs []fake.Request, pl payload.Platform) {
		for _, r := range rs {
			var body struct {
				J       string `json:"j"`
				Message struct {
					Data map[string]string `json:"data"`
				} `json:"message"`
			}
			_ = json.Unmarshal(r.Body, &body)
			j := body.J
			if pl == payload.FCM {
				j = body.Message.Data["j"]
			}
			out = append(out, arrival{job: j, user: owner[r.Token], token: r.Token, platform: pl, at: r.At, status: r.Status})
		}
	}
	add(s.fa.Requests(), payload.APNs)
	add(s.ff.Requests(), payload.FCM)
	slices.SortFunc(out, func(a, b arrival) int { return a.at.Compare(b.at) })
	return out
}

// check verifies every promise from the arrival log and the job statuses,
// and returns the broken ones, each naming its check.
func (s *sim) check(rdb redis.UniversalClient) []string {
	var v []string
	bad := func(check, format string, args ...any) {
		v = append(v, fmt.Sprintf("[%s] ", check)+fmt.Sprintf(format, args...))
	}
	arr := s.arrivals()
	atRisk := map[string]bool{}
	for _, n := range s.all {
		n.mu.Lock()
		for tok := range n.atRisk {
			atRisk[tok] = true
		}
		n.mu.Unlock()
	}
	byJob := map[string][]arrival{}
	for _, a := range arr {
		byJob[a.job] = append(byJob[a.job], a)
	}

	// Statuses: never lost, only documented final states, counts equal
	// arrivals.
	status := map[string]worker.JobStatus{}
	for _, jr := range s.jobList() {
		id := jr.spec.job.ID
		if !jr.tried {
			continue
		}
		st, err := s.obs.Status(context.Background(), id)
		if errors.Is(err, worker.ErrNotFound) {
			if jr.accepted {
				bad("never-lost", "job %s was accepted but is unknown", id)
			} else if len(byJob[id]) > 0 {
				bad("never-lost", "job %s was refused but reached %d devices", id, len(byJob[id]))
			}
			continue
		}
		if err != nil {
			bad("never-lost", "job %s: status: %v", id, err)
			continue
		}
		status[id] = st
		if !final(st) {
			bad("never-lost", "job %s is not final: %v", id, st.Counts)
			continue
		}
		for k, n := range st.Counts {
			if n > 0 && k != "pending" && !slices.Contains(finalStates, k) {
				bad("never-lost", "job %s: %d recipients in undocumented state %q", id, n, k)
			}
		}
		sent, risky := map[string]bool{}, map[string]bool{}
		for _, a := range byJob[id] {
			if a.delivered() {
				sent[a.user] = true
			}
			if atRisk[a.token] {
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
			bad("counts-equal-arrivals", "job %s: %d delivered in its status, %d recipients reached at the providers (%d of them at risk from a kill): %v", id, d, len(sent), len(sent)-lo, st.Counts)
		}
	}

	// Never twice.
	seen := map[[2]string]int{}
	for _, a := range arr {
		if a.delivered() {
			seen[[2]string{a.job, a.token}]++
		}
	}
	for k, n := range seen {
		if n > 1 && !atRisk[k[1]] {
			bad("never-twice", "job %s reached device %s %d times, with no kill while it was in flight", k[0], short(k[1]), n)
		}
	}

	// Never after expiry, nothing after a cancel's answer, never before
	// send_at.
	for _, jr := range s.jobList() {
		j := jr.spec.job
		for _, a := range byJob[j.ID] {
			if j.ExpiresAt != nil && a.at.After(j.ExpiresAt.Add(expiryTolerance)) {
				bad("never-after-expiry", "job %s reached %s at %s, %s after its expires_at", j.ID, a.user, a.at.Format("15:04:05.000"), a.at.Sub(*j.ExpiresAt))
			}
			if !jr.cancelled.IsZero() && a.at.After(jr.cancelled.Add(cancelTolerance)) {
				bad("nothing-after-cancel", "job %s reached %s %s after its cancellation was answered", j.ID, a.user, a.at.Sub(jr.cancelled))
			}
			if j.SendAt != nil && a.delivered() && a.at.Before(j.SendAt.Add(-tolerance)) {
				bad("never-early/send_at", "job %s reached %s %s before its send_at", j.ID, a.user, j.SendAt.Sub(a.at))
			}
		}
	}

	// Never early: the rules, per user, over the pushes they received.
	type push struct {
		at       time.Time
		job      string
		category string
	}
	pushes := map[string][]push{}
	for _, jr := range s.jobList() {
		j := jr.spec.job
		if j.Priority == payload.PriorityCritical { // bypass: outside the rules
			continue
		}
		last := map[string]time.Time{}
		for _, a := range byJob[j.ID] {
			if !a.delivered() {
				continue
			}
			if t, ok := last[a.user]; ok && a.at.Sub(t) <= pushSpan {
				continue
			}
			last[a.user] = a.at
			pushes[a.user] = append(pushes[a.user], push{at: a.at, job: j.ID, category: j.Category})
		}
	}
	p := s.sc.policy
	qs, qe := s.sc.quietAt.Add(s.sc.quiet.From), s.sc.quietAt.Add(s.sc.quiet.To)
	for u, ps := range pushes {
		slices.SortFunc(ps, func(a, b push) int { return a.at.Compare(b.at) })
		var global []time.Time
		cats := map[string][]time.Time{}
		for _, x := range ps {
			c := p.Categories[x.category]
			if !c.SkipGlobal {
				global = append(global, x.at)
			}
			if x.category != "" {
				cats[x.category] = append(cats[x.category], x.at)
			}
			if x.category == "night" && !x.at.Before(qs.Add(tolerance)) && x.at.Before(qe.Add(-tolerance)) {
				bad("never-early/quiet", "user %s got job %s at %s, inside quiet hours %s-%s", u, x.job, x.at.UTC().Format("15:04:05.000"), qs.Format("15:04:05.000"), qe.Format("15:04:05.000"))
			}
		}
		checkRules(u, "global", global, p.Limits, p.MinGap, bad)
		for name, ts := range cats {
			c := p.Categories[name]
			checkRules(u, name, ts, c.Limits, c.MinGap, bad)
		}
	}

	// The max_rate bound, per platform of the rated app, over every
	// request (docs/configuration.md "Send rates").
	r := s.sc.maxRate
	bound := int(r) + 1 + int(math.Ceil(2*r*0.025))
	for _, pl := range []payload.Platform{payload.APNs, payload.FCM} {
		var ts []time.Time
		for _, a := range arr {
			if a.platform == pl && s.jobs[a.job] != nil && s.jobs[a.job].spec.job.App == appRated {
				ts = append(ts, a.at)
			}
		}
		for i := range ts {
			n := 0
			for k := i; k < len(ts) && ts[k].Sub(ts[i]) < time.Second; k++ {
				n++
			}
			if n > bound {
				bad("never-early/max_rate", "app %s: %d sends to %s within one second from %s (max_rate %.0f/s, bound %d)", appRated, n, pl, ts[i].Format("15:04:05.000"), r, bound)
				break
			}
		}
	}

	// Collapse: newest wins, a collapsed push is never sent. A push is
	// judged by what hush recorded of it, as hush orders it: every job it
	// knows (a submission whose answer was lost may still have been
	// accepted, and then books and collapses like any other), by the
	// accepted_at of its status.
	type group struct{ app, category, user, key string }
	groups := map[group][]collapsePush{}
	for _, jr := range s.jobList() {
		j := jr.spec.job
		st, known := status[j.ID]
		if j.CollapseKey == "" || !known {
			continue
		}
		if st.Counts["collapsed"] > 0 {
			for _, a := range byJob[j.ID] {
				if a.delivered() {
					bad("collapse", "job %s ended collapsed but reached %s", j.ID, a.user)
				}
			}
		}
		// accepted_at is the accepting worker's clock during one of the
		// job's submissions, truncated to the millisecond: else it would
		// not order the key's pushes as they were accepted.
		lo := jr.firstTry.Add(slices.Min(s.sc.skews)).Truncate(time.Millisecond)
		hi := jr.lastTry.Add(slices.Max(s.sc.skews))
		if st.AcceptedAt.Before(lo) || st.AcceptedAt.After(hi) {
			bad("collapse", "job %s was accepted at %s, outside its submissions (%s to %s on the workers' clocks)",
				j.ID, st.AcceptedAt.Format("15:04:05.000"), lo.Format("15:04:05.000"), hi.Format("15:04:05.000"))
		}
		s.logf("collapse push %s (user %s, key %s): accepted_at %s, answered accepted %v, counts %v",
			j.ID, j.Recipients[0].UserID, j.CollapseKey, st.AcceptedAt.Format("15:04:05.000"), jr.accepted, st.Counts)
		g := group{j.App, j.Category, j.Recipients[0].UserID, j.CollapseKey}
		groups[g] = append(groups[g], collapsePush{job: j.ID, accepted: st.AcceptedAt, collapsed: st.Counts["collapsed"] > 0})
	}
	for g, ps := range groups {
		for _, p := range wronglyCollapsed(ps) {
			bad("collapse", "job %s, the newest push of user %s with collapse key %s (accepted at %s), ended collapsed",
				p.job, g.user, g.key, p.accepted.Format("15:04:05.000"))
		}
	}

	// An app a worker has not loaded yet is waited for, not failed
	// (issue 39 item 8): every worker knows appLate by the end, and the
	// workload's answers never fail a delivery for good.
	for _, jr := range s.jobList() {
		if jr.spec.job.App == appLate && status[jr.spec.job.ID].Counts["failed"] > 0 {
			bad("unknown-app", "job %s of app %s ended failed while a worker had not loaded the app: %v", jr.spec.job.ID, appLate, status[jr.spec.job.ID].Counts)
		}
	}

	v = append(v, s.checkMemory(rdb)...)
	return v
}

// checkRules checks one user's push times against limits and a gap.
func checkRules(user, scope string, ts []time.Time, limits []throttle.Limit, gap time.Duration, bad func(string, string, ...any)) {
	for _, l := range limits {
		for i := 0; i+l.N < len(ts); i++ {
			if d := ts[i+l.N].Sub(ts[i]); d < l.Window-tolerance {
				bad("never-early/cap", "user %s: %d %s pushes within %s (rule %d/%s)", user, l.N+1, scope, d, l.N, l.Window)
			}
		}
	}
	for i := 0; gap > 0 && i+1 < len(ts); i++ {
		if d := ts[i+1].Sub(ts[i]); d < gap-tolerance {
			bad("never-early/gap", "user %s: two %s pushes %s apart (gap %s)", user, scope, d, gap)
		}
	}
}

// checkMemory checks that, once the windows have passed, a user's limiter
// keys hold little: the bookings still to come, and no more.
func (s *sim) checkMemory(rdb redis.UniversalClient) []string {
	var v []string
	ctx := context.Background()
	for _, u := range append(slices.Clone(s.sc.users), s.sc.rated...) {
		// A user's keys share a hash tag, so one master holds them all;
		// every master is searched, so the check needs no slot map.
		var keys []string
		total := int64(0)
		err := eachMaster(ctx, rdb, func(ctx context.Context, m *redis.Client) error {
			ks, err := m.Keys(ctx, throttle.DefaultPrefix+"{"+u.id+"}*").Result()
			if err != nil {
				return err
			}
			keys = append(keys, ks...)
			for _, k := range ks {
				if n, err := m.MemoryUsage(ctx, k).Result(); err == nil {
					total += n
				}
			}
			return nil
		})
		if err != nil {
			v = append(v, fmt.Sprintf("[memory] user %s: %v", u.id, err))
			continue
		}
		// A handful of entries of the last windows and their hashes.
		if total > memoryBound {
			v = append(v, fmt.Sprintf("[memory] user %s: %d bytes in %d limiter keys after the run, bound %d", u.id, total, len(keys), memoryBound))
		}
	}
	return v
}

// memoryBound is the most a user's limiter keys may hold after a run: a
// few windows' entries at these rates.
const memoryBound = 4096

// short is a token's head, enough to tell the simulation's apart; a log
// never carries a whole device token.
func short(tok string) string {
	if len(tok) > 12 {
		return tok[:12] + "…"
	}
	return tok
}

// collapsePush is one push of a collapse key as hush recorded it.
type collapsePush struct {
	job      string
	accepted time.Time // its status's accepted_at
	// collapsed: a recipient of it ended collapsed.
	collapsed bool
}

// wronglyCollapsed returns the pushes of one collapse key (one user, app
// and category) that ended collapsed though no other push of the key was
// accepted at or after them. The newest accepted push wins
// (docs/delivery.md): newer is a later accepted_at, in whole
// milliseconds, and two pushes of one millisecond are ordered by their
// bookings, so either of them may be the one collapsed.
func wronglyCollapsed(ps []collapsePush) []collapsePush {
	var out []collapsePush
	for i, p := range ps {
		if !p.collapsed {
			continue
		}
		newer := false
		for k, o := range ps {
			if k != i && !o.accepted.Before(p.accepted) {
				newer = true
			}
		}
		if !newer {
			out = append(out, p)
		}
	}
	return out
}
