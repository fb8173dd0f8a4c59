package faultsim

import (
	"context"
	"maps"
	"slices"

	"github.com/hushpush/hush/worker"
)

// lookups reads "what happened to this push?" (Client.Recipients, GET
// /v1/notifications/{id}/recipients) of every job whose status is final,
// every page; a job whose lookup fails has its error in lookupErr.
func (s *sim) lookups(h *history) {
	ctx := context.Background()
	for _, id := range sortedKeys(h.status) {
		if !final(h.status[id]) {
			continue
		}
		var all worker.RecipientsPage
		q := worker.RecipientsQuery{Limit: worker.MaxRecipientsLimit}
		for range 100 {
			p, err := s.obs.Recipients(ctx, id, q)
			if err != nil {
				h.lookupErr[id] = err
				break
			}
			items := append(all.Items, p.Items...)
			all, all.Items = p, items
			if p.Next == "" {
				h.lookups[id] = all
				break
			}
			q.Cursor = p.Next
		}
	}
	states := map[string]int{}
	for _, p := range h.lookups {
		for _, r := range p.Items {
			states[r.State]++
		}
	}
	s.logf("lookups: %d finished jobs read, %d failed; their recipients %v", len(h.lookups), len(h.lookupErr), states)
}

// checkLookup: the lookup of a finished job answers every recipient
// (docs/api.md, "What is answerable when": the counts and each
// recipient's final state, with a failure's reason, kept for
// HUSH_JOB_RETENTION), in the states its status counts, each failed one
// with its reason, and none delivered that no provider pushed to.
func checkLookup(h *history) []failure {
	var out []failure
	for _, id := range sortedKeys(h.lookupErr) {
		out = append(out, fail("lookup", nil, "job %s: the recipients lookup failed: %v", id, h.lookupErr[id]))
	}
	byJob := h.byJob()
	for _, id := range sortedKeys(h.lookups) {
		p, st, jr := h.lookups[id], h.status[id], h.jobs[id]
		if len(p.Items) != st.Recipients {
			out = append(out, fail("lookup", nil, "job %s (%s, retired %t): the lookup lists %d of its %d recipients", id, p.State, p.Retired, len(p.Items), st.Recipients))
			continue
		}
		got := map[string]int{}
		for _, r := range p.Items {
			got[r.State]++
			if r.State == "failed" && r.Reason == "" {
				out = append(out, fail("lookup", nil, "job %s: recipient %d failed, and the lookup gives no reason", id, r.Index))
			}
		}
		want := maps.Clone(st.Counts)
		maps.DeleteFunc(want, func(_ string, n int) bool { return n == 0 })
		if !maps.Equal(got, want) {
			out = append(out, fail("lookup", nil, "job %s: the lookup's states %v, its status counts %v", id, got, want))
		}
		if jr == nil {
			continue
		}
		pushedTo, once := map[string]bool{}, map[string]int{}
		for _, a := range byJob[id] {
			if a.delivered() {
				pushedTo[a.user] = true
			}
		}
		for _, r := range jr.spec.job.Recipients {
			once[r.UserID]++
		}
		for _, r := range p.Items {
			if r.Index >= len(jr.spec.job.Recipients) {
				out = append(out, fail("lookup", nil, "job %s: the lookup lists recipient %d of %d", id, r.Index, len(jr.spec.job.Recipients)))
				continue
			}
			u := jr.spec.job.Recipients[r.Index].UserID
			if r.State == "delivered" && once[u] == 1 && !pushedTo[u] {
				out = append(out, fail("lookup", nil, "job %s: the lookup says recipient %d (%s) was delivered; no provider pushed it", id, r.Index, u))
			}
		}
	}
	return out
}

// lookupOf is a table test's lookup of a finished job: its recipients'
// states by index, each "state" or "state|reason".
func lookupOf(id string, states ...string) worker.RecipientsPage {
	p := worker.RecipientsPage{ID: id, Retired: true, Recipients: len(states), State: "done"}
	for i, s := range states {
		r := worker.RecipientState{Index: i, State: s}
		if k := slices.Index([]byte(s), '|'); k >= 0 {
			r.State, r.Reason = s[:k], s[k+1:]
		}
		p.Items = append(p.Items, r)
	}
	return p
}
