package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker"
)

// mixedCategories is the category of each of a mixed user's jobs, in
// order ("" none): 16 keep the global rules, so at 5/2s a user's timeline
// lasts at least 6 s; 3 are promo (2/10s), 5 social (3/2s).
var mixedCategories = []string{"", "social", "promo", "", "social", "transactional", "", "social", "promo",
	"", "social", "", "transactional", "", "social", "", "promo", ""}

// TestE2EPolicies: three processes with categories (promo=2/10s@1s,
// social=3/2s, transactional=none global=off) on top of the global 5/2s
// and 300 ms gap, and quiet hours 7 s long computed from the test's clock.
// A burst posted round-robin 4 s before the quiet hours mixes categories
// for users in UTC (held by the quiet hours) and in Asia/Tokyo (where the
// same wall-clock window was 9 hours ago); jobs with send_at inside the
// window; users whose held promo push is replaced by a newer one with the
// same collapse key (and one whose newer push is of another category, so
// it replaces nothing); and a multi-recipient job cancelled while the
// quiet hours hold most of its deliveries. From the fakes' arrivals: the
// global rules, each category's and the gap hold; no push keeping quiet
// hours reaches a UTC user inside the window, Tokyo users' and
// transactional pushes are not held; send_at holds; each collapsed push is
// never sent and its newer push is; the cancelled job sends nothing after
// the DELETE's answer; everything else arrives exactly once; and the API's
// job counts and the dropped events agree.
func TestE2EPolicies(t *testing.T) {
	start := time.Now()
	c, q, startTook := startPolicyCluster(t)
	ready := time.Now()
	pl := newPolicyPlan(c)
	t.Logf("quiet hours %s (HUSH_QUIET_HOURS, in %s from the cluster's readiness; cluster start %s)",
		q, q.start.Sub(ready).Round(10*time.Millisecond), startTook.Round(10*time.Millisecond))
	if q.start.UTC().Day() != q.end.UTC().Day() {
		t.Logf("the quiet hours cross midnight UTC: written %s, start after end", q.env())
	}

	var burst []payload.Job
	var want []push
	add := func(j payload.Job, ps []push) {
		burst = append(burst, j)
		want = append(want, ps...)
	}
	names := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s-%02d", prefix, i))
		}
		return out
	}

	// Mixed users: 18 jobs each, round k for every user before round k+1.
	mixedUTC, mixedTok := names("pm-utc", 6), names("pm-tok", 4)
	for k, cat := range mixedCategories {
		for _, u := range mixedUTC {
			add(pl.job(policyNote{user: u, category: cat}, k))
		}
		for _, u := range mixedTok {
			add(pl.job(policyNote{user: u, zone: policyTokyo, category: cat}, k))
		}
	}

	// send_at 1 s into the quiet hours: held until their end for users in
	// UTC, sent at once for Tokyo users and for transactional pushes.
	sendAt := q.start.Add(time.Second)
	sendAtUsers := map[string][]string{
		"held":          names("ps-utc", 3),
		"tokyo":         names("ps-tok", 3),
		"transactional": names("ps-tx", 2),
	}
	for _, u := range sendAtUsers["held"] {
		add(pl.job(policyNote{user: u, sendAt: sendAt}, 0))
	}
	for _, u := range sendAtUsers["tokyo"] {
		add(pl.job(policyNote{user: u, zone: policyTokyo, sendAt: sendAt}, 0))
	}
	for _, u := range sendAtUsers["transactional"] {
		add(pl.job(policyNote{user: u, category: "transactional", sendAt: sendAt}, 0))
	}

	// Collapse users, first, well before the quiet hours: promo #00 and
	// #01 with collapse key "score"; once both have reached the fakes (a
	// push sent cannot be collapsed), #02 with the key, held by promo's
	// 2/10s until the quiet hours end (10 s after #00 is inside them:
	// they start 4.5 to 9 s after the cluster is ready); once #02 is held,
	// #03 with the key replaces it. For the last user #03 is social,
	// another category, and replaces nothing.
	type collapseUser struct {
		user               string
		p0, p1, p2, p3     payload.Job
		pushes01, pushes2  []push
		collapses          bool
		heldFor            time.Duration // #02's slot minus the limiter's now, seen before #03 was posted
		p2Slot, p3Slot     time.Time
		p2GoneAfterPosting bool
	}
	var cus []*collapseUser
	var firsts []payload.Job
	for i, u := range names("pc", 3) {
		cu := &collapseUser{user: u, collapses: i < 2}
		var ps0, ps1 []push
		cu.p0, ps0 = pl.job(policyNote{user: u, category: "promo"}, 0)
		cu.p1, ps1 = pl.job(policyNote{user: u, category: "promo", collapseKey: "score"}, 1)
		cu.pushes01 = append(ps0, ps1...)
		want = append(want, cu.pushes01...)
		firsts = append(firsts, cu.p0, cu.p1)
		cus = append(cus, cu)
	}
	c.submit(firsts, c.procs, "")
	c.waitFor("the collapse users' #00 and #01 delivered", 30*time.Second, func() (bool, string) {
		got := delivered(c.arrivals())
		for _, cu := range cus {
			for _, p := range cu.pushes01 {
				if got[p] == 0 {
					return false, p.N + " " + string(p.Platform) + " not delivered yet"
				}
			}
		}
		return true, ""
	})
	var p2s []payload.Job
	for _, cu := range cus {
		cu.p2, cu.pushes2 = pl.job(policyNote{user: cu.user, category: "promo", collapseKey: "score"}, 2)
		p2s = append(p2s, cu.p2)
	}
	c.submit(p2s, c.procs, "")
	c.waitFor("the collapse users' #02 held", 30*time.Second, func() (bool, string) {
		for _, cu := range cus {
			st, err := c.throttleStatus(c.procs[1], cu.user)
			if err != nil {
				return false, err.Error()
			}
			at, ok := bookedAt(st, member(cu.p2.ID, 0))
			if !ok {
				return false, cu.p2.ID + " not booked yet"
			}
			cu.p2Slot, cu.heldFor = at, at.Sub(st.Now)
		}
		return true, ""
	})
	var p3s []payload.Job
	for _, cu := range cus {
		// The newer push must be booked while #02 is still collapsible
		// (more than CollapseMargin before its slot), with a second to
		// spare for posting it.
		if cu.heldFor < worker.CollapseMargin+time.Second {
			t.Fatalf("%s: #02 booked only %s before its slot %s; this machine is too slow to post #03 while it can still be collapsed (margin %s)",
				cu.user, cu.heldFor, cu.p2Slot.UTC().Format("15:04:05.000"), worker.CollapseMargin)
		}
		cat := "promo"
		if !cu.collapses {
			cat = "social"
		}
		var ps3 []push
		cu.p3, ps3 = pl.job(policyNote{user: cu.user, category: cat, collapseKey: "score"}, 3)
		p3s = append(p3s, cu.p3)
		want = append(want, ps3...)
		if !cu.collapses {
			want = append(want, cu.pushes2...)
		}
	}
	c.submit(p3s, c.procs, "")
	c.waitFor("the collapse users' #03 booked", 30*time.Second, func() (bool, string) {
		for _, cu := range cus {
			st, err := c.throttleStatus(c.procs[2], cu.user)
			if err != nil {
				return false, err.Error()
			}
			at, ok := bookedAt(st, member(cu.p3.ID, 0))
			if !ok {
				return false, cu.p3.ID + " not booked yet"
			}
			_, still := bookedAt(st, member(cu.p2.ID, 0))
			cu.p3Slot, cu.p2GoneAfterPosting = at, !still
		}
		return true, ""
	})
	for _, cu := range cus {
		if cu.p2GoneAfterPosting != cu.collapses {
			t.Errorf("throttle status of %s once #03 (%s) was booked: #02 booked: %v, want %v",
				cu.user, cu.p3.Category, !cu.p2GoneAfterPosting, !cu.collapses)
		}
		t.Logf("%s: #02 (promo) held %s before its slot %s; #03 (%s, same key) booked at %s",
			cu.user, cu.heldFor.Round(time.Millisecond), cu.p2Slot.UTC().Format("15:04:05.000"), cu.p3.Category, cu.p3Slot.UTC().Format("15:04:05.000"))
	}

	waitUntil(q.start.Add(-policyBurstLead))
	burstAt := time.Now()
	c.submit(burst, c.procs, "")
	t.Logf("burst: %d jobs posted in %s, from %s before the quiet hours",
		len(burst), time.Since(burstAt).Round(time.Millisecond), q.start.Sub(burstAt).Round(time.Millisecond))

	// Cancellation, inside the quiet hours: one job to a Tokyo user (sent
	// at once), two fresh users in UTC (held until the quiet hours end) and
	// two mixed UTC users (held behind their timelines and the window).
	waitUntil(q.start.Add(200 * time.Millisecond))
	cxRecipients := []policyNote{{user: "px-tok-00", zone: policyTokyo}, {user: "px-utc-00"}, {user: "px-utc-01"},
		{user: mixedUTC[0]}, {user: mixedUTC[1]}}
	cx, cxPushes := pl.multi("e2e-px-cancelled", "cx", policyNote{}, cxRecipients)
	c.submit([]payload.Job{cx}, c.procs[:1], "")
	// Before the quiet hours end, or they no longer hold the UTC recipients.
	c.waitFor("the job to cancel: its Tokyo recipient delivered and a UTC one held, before the quiet hours end",
		max(time.Until(q.end.Add(-time.Second)), time.Second), func() (bool, string) {
			got := delivered(c.arrivals())
			if got[cxPushes[0]] == 0 || got[cxPushes[1]] == 0 {
				return false, "px-tok-00 not delivered yet"
			}
			st, err := c.throttleStatus(c.procs[0], "px-utc-00")
			if err != nil {
				return false, err.Error()
			}
			at, ok := bookedAt(st, member(cx.ID, 1))
			if !ok || !at.After(st.Now) {
				return false, fmt.Sprintf("px-utc-00 not held yet (booked %v at %s)", ok, at)
			}
			return true, ""
		})
	cancelAt := time.Now()
	r, err := c.do(c.procs[2], http.MethodDelete, "/v1/notifications/"+cx.ID, nil, "")
	answeredAt := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	var cxAnswer worker.CancelResult
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &cxAnswer) != nil || !cxAnswer.Cancelled {
		t.Fatalf("DELETE %s: %d %s, want 200 with \"cancelled\": true", cx.ID, r.Status, r.Body)
	}
	t.Logf("cancelled %s %s into the quiet hours; answered after %s: counts %v",
		cx.ID, cancelAt.Sub(q.start).Round(time.Millisecond), answeredAt.Sub(cancelAt).Round(time.Millisecond), cxAnswer.Counts)

	// Every push but the collapsed and the cancel's ones; then the job's
	// final counts.
	drained := c.waitDrained(want, 2*time.Minute)
	drainedAt := time.Now()
	var cxFinal map[string]any
	c.waitFor("the cancelled job final", 30*time.Second, func() (bool, string) {
		st, err := c.jobStatus(c.procs[0], cx.ID, "")
		if err != nil {
			return false, err.Error()
		}
		cxFinal = st
		counts, _ := st["counts"].(map[string]any)
		return counts["pending"] == float64(0), fmt.Sprintf("state %v counts %v", st["state"], counts)
	})
	arrs := c.arrivals()

	// The cancelled job: nothing after the answer; what arrived before is
	// whole recipients, and what the API counts as delivered.
	var cxDelivered, cxLate []string
	got := delivered(arrs)
	for i, r := range cxRecipients {
		n := got[cxPushes[2*i]] + got[cxPushes[2*i+1]]
		if n > 0 {
			cxDelivered = append(cxDelivered, r.user)
			want = append(want, cxPushes[2*i], cxPushes[2*i+1])
		}
	}
	for _, a := range sortedByTime(arrs) {
		if n, ok := pl.notes[a.N]; ok && n.job == cx.ID && a.At.After(answeredAt) {
			cxLate = append(cxLate, fmt.Sprintf("%s %s at %s, %s after the answer", a.N, a.Platform, a.At.UTC().Format("15:04:05.000"), a.At.Sub(answeredAt).Round(time.Millisecond)))
		}
	}
	if len(cxLate) > 0 {
		t.Errorf("cancelled job %s: %d requests reached the providers after the DELETE's answer (%s): %s",
			cx.ID, len(cxLate), answeredAt.UTC().Format("15:04:05.000"), head(cxLate, 10))
	}
	counts, _ := cxFinal["counts"].(map[string]any)
	if cxFinal["state"] != "cancelled" || counts["delivered"] != float64(len(cxDelivered)) ||
		counts["cancelled"] != float64(len(cxRecipients)-len(cxDelivered)) {
		t.Errorf("cancelled job %s: state %v counts %v; want state cancelled, %d delivered (%v at the fakes), %d cancelled",
			cx.ID, cxFinal["state"], counts, len(cxDelivered), cxDelivered, len(cxRecipients)-len(cxDelivered))
	}
	if !slices.Contains(cxDelivered, "px-tok-00") || len(cxDelivered) == len(cxRecipients) {
		t.Errorf("cancelled job %s: delivered to %v; want px-tok-00 (delivered before the DELETE) and not everyone", cx.ID, cxDelivered)
	}

	// Everything else exactly once; the collapsed pushes never asked.
	c.assertDelivered(arrs, want, 0)
	collapsedJobs := map[string]bool{}
	for _, cu := range cus {
		if !cu.collapses {
			continue
		}
		collapsedJobs[cu.p2.ID] = true
		for _, a := range arrs {
			if a.N == cu.pushes2[0].N {
				t.Errorf("collapsed %s (%s) reached %s at %s (status %d): a collapsed push must never be sent",
					cu.p2.ID, a.N, a.Platform, a.At.UTC().Format("15:04:05.000"), a.Status)
			}
		}
	}

	// The rules: global among the pushes keeping them, per user and per
	// device; each category's among its own pushes.
	c.assertTimelines(pl.filter(arrs, policyNote.keepsGlobal))
	for _, cr := range []struct {
		category string
		r        rules
	}{{"promo", promoRules}, {"social", socialRules}} {
		v, st := checkTimelines(pl.filter(arrs, func(n policyNote) bool { return n.category == cr.category }), byUser, cr.r)
		if len(v) > 0 {
			timingErrorf(t, "category %s: %d rule violations (%d/%s, gap %s, tolerance %s): %s", cr.category, len(v), cr.r.n, cr.r.window, cr.r.gap, cr.r.tolerance, head(v, 10))
			for _, u := range st.violating[:min(2, len(st.violating))] {
				u = strings.TrimPrefix(u, "user ")
				t.Logf("timeline of %s (offset, platform, notification, status):%s", u, timeline(arrs, u))
			}
		}
		t.Logf("category %s: %d timelines; smallest span of %d consecutive pushes %s (rule: >= %s - %s); smallest gap %s (rule: >= %s - %s); most in any %s: %d",
			cr.category, st.timelines, cr.r.n+1, st.minSpan.Round(time.Millisecond), cr.r.window, cr.r.tolerance,
			st.minGap.Round(time.Millisecond), cr.r.gap, cr.r.tolerance, cr.r.window, st.maxInWindow)
	}

	held, free := pl.assertQuiet(arrs, q, mixedUTC, mixedTok)
	pl.assertSendAt(arrs, q, sendAt, sendAtUsers)

	// The API: every job final with the counts its arrivals say.
	var bad []string
	for _, j := range pl.jobs {
		if j.ID == cx.ID {
			continue
		}
		st, err := c.jobStatus(c.procs[0], j.ID, "")
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		counts, _ := st["counts"].(map[string]any)
		state := "delivered"
		if collapsedJobs[j.ID] {
			state = "collapsed"
		}
		if counts[state] != float64(1) || counts["pending"] != float64(0) {
			bad = append(bad, fmt.Sprintf("%s: state %v counts %v, want %s 1", j.ID, st["state"], counts, state))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d jobs not reported as expected by the API: %s", len(bad), len(pl.jobs)-1, head(bad, 5))
	}

	// The dropped events: exactly the collapsed and the cancelled ones.
	drops, err := c.dropped(context.Background())
	if err != nil {
		t.Fatalf("XRANGE hush:events: %v", err)
	}
	wantDrops := map[[2]string][]string{}
	for _, cu := range cus {
		if cu.collapses {
			wantDrops[[2]string{cu.p2.ID, cu.user}] = []string{"collapsed"}
		}
	}
	for _, r := range cxRecipients {
		if !slices.Contains(cxDelivered, r.user) {
			wantDrops[[2]string{cx.ID, r.user}] = []string{"cancelled"}
		}
	}
	for k, w := range wantDrops {
		if !slices.Equal(drops[k], w) {
			t.Errorf("dropped events of job %s, user %s: reasons %q, want %q", k[0], k[1], drops[k], w)
		}
	}
	for k, got := range drops {
		if _, ok := wantDrops[k]; !ok {
			t.Errorf("unexpected dropped event: job %s, user %s, reasons %q", k[0], k[1], got)
		}
	}
	c.assertNothingArchived()

	t.Logf("policies: %d jobs, %d pushes over 3 processes; quiet hours %s: %d pushes of UTC users arrived after them (none inside), %d pushes of Tokyo users inside them; "+
		"%d collapsed, %d of %d recipients of the cancelled job dropped (answer %s after the DELETE); drained %s after the burst (%s after the quiet hours' end, %s after the DELETE's answer); cluster start %s, whole test %s",
		len(pl.jobs), len(want), q, held, free, len(collapsedJobs), len(cxRecipients)-len(cxDelivered), len(cxRecipients),
		answeredAt.Sub(cancelAt).Round(time.Millisecond), drainedAt.Sub(burstAt).Round(100*time.Millisecond),
		drainedAt.Sub(q.end).Round(100*time.Millisecond), drained.Round(100*time.Millisecond), ready.Sub(start).Round(10*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}

// TestE2EPoliciesBadInput: a job naming a category the server does not
// know, a recipient's unknown time zone, send_at in the past or too far
// ahead are refused with 400 naming the field and the reason; a hush serve
// with malformed categories, quiet hours or default time zone does not
// start, and says which key and why.
func TestE2EPoliciesBadInput(t *testing.T) {
	start := time.Now()
	c := startCluster(t, clusterOptions{procs: 1, concurrency: e2eConcurrency, maxRetry: 3,
		env: []string{"HUSH_THROTTLE_CATEGORIES=" + policyCategories}})
	p := c.procs[0]
	job := func(edit func(*payload.Job)) []byte {
		j, _ := notificationJob("pb-u00", 0)
		j.ID = ""
		edit(&j)
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	at := func(d time.Duration) *time.Time { x := time.Now().Add(d); return &x }
	tests := []struct {
		name   string
		body   []byte
		field  string
		reason []string // substrings of the field's message
	}{
		{"unknown category", job(func(j *payload.Job) { j.Category = "marketing" }),
			"category", []string{`unknown category "marketing"`, "promo, social, transactional"}},
		{"misspelt category", job(func(j *payload.Job) { j.Category = "Pro mo" }),
			"category", []string{`"Pro mo"`, "a-z"}},
		{"unknown time zone", job(func(j *payload.Job) { j.Recipients[0].Timezone = "Mars/Base" }),
			"recipients[0].timezone", []string{`unknown time zone "Mars/Base"`}},
		{"server's own zone", job(func(j *payload.Job) { j.Recipients[0].Timezone = "Local" }),
			"recipients[0].timezone", []string{`"Local"`}},
		{"second recipient's zone", job(func(j *payload.Job) {
			r := j.Recipients[0]
			r.UserID, r.Timezone = "pb-u01", "Europe/Atlantis"
			j.Recipients = append(j.Recipients, r)
		}), "recipients[1].timezone", []string{`unknown time zone "Europe/Atlantis"`}},
		{"send_at in the past", job(func(j *payload.Job) { j.SendAt = at(-time.Minute) }),
			"send_at", []string{"is in the past"}},
		{"send_at too far ahead", job(func(j *payload.Job) { j.SendAt = at(payload.MaxSendAhead + time.Hour) }),
			"send_at", []string{"more than the limit", "ahead"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.assertRefused(t, p, tt.body, tt.field, tt.reason)
		})
	}
	// The status route checks its zone too.
	if r, err := c.do(p, http.MethodGet, "/v1/users/pb-u00/throttle?timezone=Mars/Base", nil, ""); err != nil {
		t.Fatal(err)
	} else if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "timezone") {
		t.Errorf("GET throttle status with timezone=Mars/Base: %d %s, want 400 naming timezone", r.Status, r.Body)
	}

	starts := []struct {
		name, key, value string
		reason           []string // substrings of stderr besides the key
	}{
		{"category with a bad window", "HUSH_THROTTLE_CATEGORIES", "promo=2/1x", []string{`"promo=2/1x"`, "window"}},
		{"category defined twice", "HUSH_THROTTLE_CATEGORIES", "promo=2/3s; promo=none", []string{"defined twice"}},
		{"category without rules", "HUSH_THROTTLE_CATEGORIES", "promo=global=off", []string{"no rules"}},
		{"category name", "HUSH_THROTTLE_CATEGORIES", "Promo=2/3s", []string{`"Promo"`, "a-z"}},
		{"category option", "HUSH_THROTTLE_CATEGORIES", "promo=2/3s colour=red", []string{`unknown option "colour"`}},
		{"category quiet hours", "HUSH_THROTTLE_CATEGORIES", "promo=2/3s quiet=22-08", []string{"quiet=22-08", "HH:MM-HH:MM"}},
		{"quiet hours out of range", "HUSH_QUIET_HOURS", "25:00-08:00", []string{`"25:00" is not HH:MM`}},
		{"quiet hours without an end", "HUSH_QUIET_HOURS", "22:00", []string{"want HH:MM-HH:MM"}},
		{"quiet hours of no length", "HUSH_QUIET_HOURS", "08:00-08:00", []string{"same time"}},
		{"unknown default zone", "HUSH_DEFAULT_TIMEZONE", "Mars/Base", []string{`unknown time zone "Mars/Base"`}},
		{"the machine's zone", "HUSH_DEFAULT_TIMEZONE", "Local", []string{`"Local"`, "own zone"}},
	}
	for _, tt := range starts {
		t.Run("start/"+tt.name, func(t *testing.T) {
			code, stderr := serveOnce(t, append(slices.Clone(c.env), tt.key+"="+tt.value))
			switch {
			case code == -1:
				t.Fatalf("%s=%q: hush serve was still running after 15 s; want a start failure. Output:\n%s", tt.key, tt.value, stderr)
			case code == 0:
				t.Fatalf("%s=%q: hush serve exited 0; want a start failure. Output:\n%s", tt.key, tt.value, stderr)
			}
			for _, w := range append([]string{tt.key + ":"}, tt.reason...) {
				if !strings.Contains(stderr, w) {
					t.Errorf("%s=%q: exit %d, stderr does not say %q:\n%s", tt.key, tt.value, code, w, stderr)
				}
			}
			t.Logf("%s=%q: exit %d: %s", tt.key, tt.value, code, strings.TrimSpace(stderr))
		})
	}
	if !p.alive() {
		t.Errorf("%s exited: %v", p.name, p.waitErr)
	}
	t.Logf("policies bad input: %d refused jobs, %d refused starts (whole test %s)", len(tests), len(starts), time.Since(start).Round(10*time.Millisecond))
}
