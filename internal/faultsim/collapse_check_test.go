package faultsim

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// checkCollapse: a collapsed push never arrives; a push is collapsed only
// when another of its key has a later or equal accepted_at, read from
// the statuses of every job hush knows (a submission answered only with
// errors may have been accepted all the same), and that accepted_at lies
// within the job's submissions on the workers' clocks; and an older push
// of a key never reaches a device after a newer one of that key did ("an
// old push's retry never replaces a newer push, nor reaches a device
// after it", docs/delivery.md section 3).
func checkCollapse(h *history) []failure {
	var out []failure
	byJob := h.byJob()
	groups := map[collapseGroup][]collapsePush{}
	groupOf := map[string]collapseGroup{}
	var order []collapseGroup
	for _, id := range sortedKeys(h.status) {
		jr, st := h.jobs[id], h.status[id]
		if jr == nil || jr.spec.job.CollapseKey == "" {
			continue
		}
		j := jr.spec.job
		if st.Counts["collapsed"] > 0 {
			for _, a := range byJob[id] {
				if a.delivered() {
					out = append(out, fail("collapse", traceOf(a), "job %s ended collapsed but reached %s", id, a.user))
				}
			}
		}
		// accepted_at is the accepting worker's clock during one of the
		// job's submissions, truncated to the millisecond: else it would
		// not order the key's pushes as they were accepted.
		if len(h.skews) > 0 {
			lo := jr.firstTry.Add(slices.Min(h.skews)).Truncate(time.Millisecond)
			hi := jr.lastTry.Add(slices.Max(h.skews))
			if st.AcceptedAt.Before(lo) || st.AcceptedAt.After(hi) {
				out = append(out, fail("collapse", nil, "job %s was accepted at %s, outside its submissions (%s to %s on the workers' clocks)",
					id, st.AcceptedAt.Format("15:04:05.000"), lo.Format("15:04:05.000"), hi.Format("15:04:05.000")))
			}
		}
		g := collapseGroup{j.App, j.Category, j.Recipients[0].UserID, j.CollapseKey}
		groupOf[id] = g
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], collapsePush{job: id, accepted: st.AcceptedAt, collapsed: st.Counts["collapsed"] > 0})
	}
	out = append(out, wrongReplacements(h, groupOf)...)
	for _, g := range order {
		ps := groups[g]
		for _, p := range wronglyCollapsed(ps) {
			out = append(out, fail("collapse", nil, "job %s, the newest push of user %s with collapse key %s (accepted at %s), ended collapsed",
				p.job, g.user, g.key, p.accepted.Format("15:04:05.000")))
		}
		out = append(out, olderAfterNewer(ps, byJob, horizonOf(h.policy, g.category))...)
	}
	return out
}

// olderAfterNewer reports a retry of a push of one collapse key that
// reached a device after a newer push of that key had reached it, when
// the limiter must have refused the retry: it was booked after the newer
// push's booking (its previous attempt reached the user after the newer
// push reached the device) and while the limiter still remembered the
// newer push (within horizon of its slot, docs/limiter.md "The newest
// accepted push wins in collapse"). A first attempt is not judged: its
// booking may be one held less than worker.CollapseMargin from its slot,
// which a newer push never collapses.
func olderAfterNewer(ps []collapsePush, byJob map[string][]arrival, horizon time.Duration) []failure {
	var out []failure
	for _, older := range ps {
		for _, newer := range ps {
			if !newer.accepted.After(older.accepted) {
				continue
			}
			first := map[string]arrival{} // device: the newer push's first arrival
			for _, a := range byJob[newer.job] {
				if _, ok := first[a.token]; !ok && a.delivered() {
					first[a.token] = a
				}
			}
			var prev *arrival // the older push's previous attempt to its user
			for _, a := range byJob[older.job] {
				n, ok := first[a.token]
				if ok && a.delivered() && prev != nil && a.at.Sub(prev.at) > pushSpan &&
					!prev.at.Before(n.at) && a.at.Before(n.at.Add(horizon-tolerance)) {
					out = append(out, fail("collapse", traceOf(n, *prev, a), "a retry of job %s (accepted %s) reached device %s after job %s of its collapse key, accepted later (%s), had",
						older.job, older.accepted.Format("15:04:05.000"), short(a.token), newer.job, newer.accepted.Format("15:04:05.000")))
				}
				if prev == nil || a.at.Sub(prev.at) > pushSpan {
					prev = &a
				}
			}
		}
	}
	return out
}

// horizonOf is how long after a push's slot the limiter remembers it
// for its collapse key: the longest window or gap of its set (the
// category's, or the global rules').
func horizonOf(p throttle.Policy, category string) time.Duration {
	limits, gap := p.Limits, p.MinGap
	if c, ok := p.Categories[category]; ok && category != "" {
		limits, gap = c.Limits, c.MinGap
	}
	h := gap
	for _, l := range limits {
		h = max(h, l.Window)
	}
	return h
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

// TestWronglyCollapsed checks the collapse check's judgment on its own:
// pushes are ordered by the accepted_at hush recorded, not by when the
// simulation submitted them or whether their answer arrived.
func TestWronglyCollapsed(t *testing.T) {
	at := func(ms int) time.Time { return time.UnixMilli(1_700_000_000_000 + int64(ms)) }
	tests := []struct {
		name string
		ps   []collapsePush
		want []string
	}{
		{
			name: "the newest is collapsed",
			ps:   []collapsePush{{job: "a", accepted: at(0)}, {job: "b", accepted: at(500), collapsed: true}},
			want: []string{"b"},
		},
		{
			name: "an older one is collapsed",
			ps:   []collapsePush{{job: "a", accepted: at(0), collapsed: true}, {job: "b", accepted: at(500)}},
		},
		{
			// The simulation's submission of b was answered with errors
			// only, but hush accepted it: b counts as any other push.
			name: "held push collapsed by one whose answer was lost",
			ps: []collapsePush{{job: "old", accepted: at(0)}, {job: "held", accepted: at(500), collapsed: true},
				{job: "lost-answer", accepted: at(1800)}},
		},
		{
			name: "a tie in one millisecond may go either way",
			ps:   []collapsePush{{job: "a", accepted: at(7), collapsed: true}, {job: "b", accepted: at(7)}},
		},
		{
			name: "the newer of two collapsed",
			ps:   []collapsePush{{job: "a", accepted: at(0), collapsed: true}, {job: "b", accepted: at(1), collapsed: true}},
			want: []string{"b"},
		},
		{
			name: "alone and collapsed",
			ps:   []collapsePush{{job: "a", accepted: at(0), collapsed: true}},
			want: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range wronglyCollapsed(tt.ps) {
				got = append(got, p.job)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("wronglyCollapsed (-want +got):\n%s", diff)
			}
		})
	}
}

// collapseGroup is the pushes that may collapse each other: one app's, of
// one category, to one user, with one collapse key.
type collapseGroup struct{ app, category, user, key string }

// wrongReplacements: a collapsed push's event names as its replacement
// (replaced_by) a push of its own collapse group accepted no earlier than
// it, never itself (docs/events.md, replaced_by). An event that names none
// is allowed: hush forgets the replacement once its booking left the
// windows.
func wrongReplacements(h *history, groupOf map[string]collapseGroup) []failure {
	var out []failure
	for _, id := range sortedKeys(h.events) {
		var e worker.Event
		if json.Unmarshal([]byte(h.events[id]), &e) != nil || e.Type != worker.EventDropped || e.Reason != "collapsed" || e.ReplacedBy == "" {
			continue
		}
		g, ok := groupOf[e.Job]
		by, byOK := groupOf[e.ReplacedBy]
		switch {
		case !ok:
			continue // not a collapse-key job of the run: never-lost's and counts'
		case e.ReplacedBy == e.Job || !byOK || by != g:
			out = append(out, fail("collapse", nil, "job %s's collapsed event names %s as its replacement, not a push of its collapse key", e.Job, e.ReplacedBy))
		case h.status[e.ReplacedBy].AcceptedAt.Before(h.status[e.Job].AcceptedAt):
			out = append(out, fail("collapse", nil, "job %s's collapsed event names %s, accepted before it, as its replacement", e.Job, e.ReplacedBy))
		}
	}
	return out
}
