package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/wire"
)

// The policies cluster: the e2e global rules (5/2s, gap 300 ms) and three
// categories. promo's cap is long, so that a user's third promo push is
// held for seconds, long enough to be collapsed (worker.CollapseMargin is
// 5 s); transactional keeps no rule at all, and no quiet hours (its name
// says so, docs/limiter.md).
const (
	policyCategories = "promo=2/10s@1s; social=3/2s; transactional=none global=off"
	// policyQuietLen is how long the quiet hours last, in real time.
	policyQuietLen = 7 * time.Second
	// policyBurstLead is how long before the quiet hours start the burst
	// is posted: its users' timelines then run into them.
	policyBurstLead = 4 * time.Second
	// policyTokyo is the zone of the users the quiet hours do not hold:
	// the same wall-clock window happens there 9 hours earlier.
	policyTokyo = "Asia/Tokyo"
)

var (
	promoRules  = rules{n: 2, window: 10 * time.Second, gap: time.Second, tolerance: e2eTolerance}
	socialRules = rules{n: 3, window: 2 * time.Second, tolerance: e2eTolerance}
)

// quietWindow is the test's quiet hours: a few seconds of real time, in
// whole seconds, written as UTC wall-clock time.
type quietWindow struct{ start, end time.Time }

// env is the HUSH_QUIET_HOURS setting (HH:MM:SS-HH:MM:SS; a window
// crossing midnight is written start > end, which the grammar reads as
// spanning midnight).
func (q quietWindow) env() string {
	return "HUSH_QUIET_HOURS=" + q.start.UTC().Format("15:04:05") + "-" + q.end.UTC().Format("15:04:05")
}

func (q quietWindow) String() string {
	return q.start.UTC().Format("15:04:05") + "-" + q.end.UTC().Format("15:04:05") + " UTC"
}

// startPolicyCluster starts three processes whose quiet hours begin a lead
// after now. The window must be in their environment from the start, so it
// is computed before the cluster exists; when the start took so long that
// the burst could not be posted policyBurstLead before the window, the
// cluster is stopped and started again with a lead sized on the start's
// duration.
func startPolicyCluster(t *testing.T) (*cluster, quietWindow, time.Duration) {
	t.Helper()
	lead := 8 * time.Second
	for attempt := 1; ; attempt++ {
		t0 := time.Now()
		qs := t0.Add(lead).Truncate(time.Second).Add(time.Second)
		q := quietWindow{qs, qs.Add(policyQuietLen)}
		c := startCluster(t, clusterOptions{procs: 3, concurrency: e2eConcurrency, maxRetry: 3, env: []string{
			"HUSH_THROTTLE_CATEGORIES=" + policyCategories,
			q.env(),
			"HUSH_DEFAULT_TIMEZONE=UTC",
		}})
		took := time.Since(t0)
		if time.Until(q.start) > policyBurstLead+500*time.Millisecond {
			return c, q, took
		}
		if attempt == 2 {
			t.Fatalf("the cluster took %s to start (lead %s): the quiet hours %s began too soon to post the burst %s before them", took, lead, q, policyBurstLead)
		}
		t.Logf("the cluster took %s to start, too long for the quiet hours %s computed before it (lead %s); starting again with a longer lead", took, q, lead)
		for _, p := range c.procs {
			p.stop(t)
		}
		lead = 2*took + policyBurstLead + 2*time.Second
	}
}

// waitUntil blocks until the clock reaches at: the scenario is scheduled
// against the quiet hours, which are instants of the wall clock.
func waitUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		<-time.After(d)
	}
}

// policyNote is one notification of the scenario, as the test knows it.
type policyNote struct {
	job         string
	user        string
	zone        string // the recipient's timezone; "" is HUSH_DEFAULT_TIMEZONE (UTC)
	category    string // "" keeps the global rules alone
	collapseKey string
	sendAt      time.Time // zero: none
}

// keepsGlobal reports whether the notification keeps the global rules.
func (n policyNote) keepsGlobal() bool { return n.category != "transactional" }

// keepsQuiet reports whether the notification is held by the quiet hours:
// a user in UTC (the default zone), and a category that keeps them.
func (n policyNote) keepsQuiet() bool { return n.zone == "" && n.category != "transactional" }

// policyPlan builds the scenario's jobs and remembers what every
// notification is, so an arrival (known by its data[e2eKey]) can be judged
// by its user's zone and its category.
type policyPlan struct {
	c     *cluster
	notes map[string]policyNote // by notification, "<user>#<k>"
	jobs  []payload.Job         // every job, in the order built
}

func newPolicyPlan(c *cluster) *policyPlan {
	if c.owners == nil {
		c.owners = make(map[string]string)
	}
	return &policyPlan{c: c, notes: make(map[string]policyNote)}
}

// devices are a user's two devices, and the pushes notification n makes.
func devices(user, n string) ([]payload.Device, []push) {
	return []payload.Device{{Platform: payload.APNs, Token: apnsToken(user)}, {Platform: payload.FCM, Token: fcmToken(user)}},
		[]push{{payload.APNs, apnsToken(user), n}, {payload.FCM, fcmToken(user), n}}
}

// job is the k-th notification for note.user, one job with one recipient.
func (pl *policyPlan) job(note policyNote, k int) (payload.Job, []push) {
	n := fmt.Sprintf("%s#%02d", note.user, k)
	note.job = fmt.Sprintf("e2e-%s-%02d", note.user, k)
	devs, pushes := devices(note.user, n)
	job := payload.Job{
		ID:         note.job,
		Recipients: []payload.Recipient{{UserID: note.user, Timezone: note.zone, Devices: devs}},
		Content: payload.Content{
			Alert:       &payload.Alert{Title: "Notification " + n, Body: "end-to-end policies test"},
			Data:        map[string]string{e2eKey: n},
			Category:    note.category,
			CollapseKey: note.collapseKey,
		},
	}
	if !note.sendAt.IsZero() {
		at := note.sendAt
		job.SendAt = &at
	}
	pl.notes[n] = note
	pl.c.owners[apnsToken(note.user)], pl.c.owners[fcmToken(note.user)] = note.user, note.user
	pl.jobs = append(pl.jobs, job)
	return job, pushes
}

// multi is one job to several recipients (note's user and zone are taken
// from each of them), its notification "<user>#<tag>" for each, and the
// pushes it would make if none were cancelled.
func (pl *policyPlan) multi(id, tag string, note policyNote, recipients []policyNote) (payload.Job, []push) {
	job := payload.Job{
		ID: id,
		Content: payload.Content{
			Alert:    &payload.Alert{Title: "Multi " + tag, Body: "end-to-end policies test"},
			Data:     map[string]string{e2eKey: everyone + "#" + tag},
			Category: note.category,
		},
	}
	var pushes []push
	for _, r := range recipients {
		devs, ps := devices(r.user, r.user+"#"+tag)
		job.Recipients = append(job.Recipients, payload.Recipient{UserID: r.user, Timezone: r.zone, Devices: devs})
		pushes = append(pushes, ps...)
		n := note
		n.job, n.user, n.zone = id, r.user, r.zone
		pl.notes[r.user+"#"+tag] = n
		pl.c.owners[apnsToken(r.user)], pl.c.owners[fcmToken(r.user)] = r.user, r.user
	}
	pl.jobs = append(pl.jobs, job)
	return job, pushes
}

// filter keeps the arrivals of known notifications that keep satisfies.
func (pl *policyPlan) filter(arrs []arrival, keep func(policyNote) bool) []arrival {
	var out []arrival
	for _, a := range arrs {
		if n, ok := pl.notes[a.N]; ok && keep(n) {
			out = append(out, a)
		}
	}
	return out
}

// throttleStatus reads GET /v1/users/{id}/throttle from process p.
func (c *cluster) throttleStatus(p *hushProc, user string) (wire.ThrottleStatus, error) {
	r, err := c.do(p, http.MethodGet, "/v1/users/"+url.PathEscape(user)+"/throttle", nil, "")
	if err != nil {
		return wire.ThrottleStatus{}, err
	}
	if r.Status != http.StatusOK {
		return wire.ThrottleStatus{}, fmt.Errorf("GET throttle of %s: %d %s", user, r.Status, r.Body)
	}
	var st wire.ThrottleStatus
	return st, json.Unmarshal(r.Body, &st)
}

// bookedAt is the slot of member in a user's status (its global entries or
// any category's), and whether it is there at all.
func bookedAt(st wire.ThrottleStatus, member string) (time.Time, bool) {
	lists := [][]wire.ThrottleEntry{st.Entries, st.Held}
	for _, c := range st.Categories {
		lists = append(lists, c.Entries, c.Held)
	}
	for _, l := range lists {
		for _, e := range l {
			if e.Member == member {
				return e.At, true
			}
		}
	}
	return time.Time{}, false
}

// member is the limiter member of a job's i-th recipient's first attempt
// (docs/limiter.md).
func member(jobID string, i int) string { return jobID + "/" + strconv.Itoa(i) }

// dropped reads the dropped events of hush:events, de-duplicated by (job,
// user) as docs/events.md says to, with their reasons.
func (c *cluster) dropped(ctx context.Context) (map[[2]string][]string, error) {
	evs, err := c.events(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[[2]string][]string)
	for _, e := range evs {
		s, _ := e["event"].(string)
		var ev struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
			Job    string `json:"job"`
			UserID string `json:"user_id"`
		}
		if err := json.Unmarshal([]byte(s), &ev); err != nil {
			return nil, fmt.Errorf("event %q: %w", s, err)
		}
		if ev.Type != "dropped" {
			continue
		}
		k := [2]string{ev.Job, ev.UserID}
		if !slices.Contains(out[k], ev.Reason) {
			out[k] = append(out[k], ev.Reason)
		}
	}
	return out, nil
}

// errorAnswer is the API's error envelope.
type errorAnswer struct {
	Error struct {
		Message  string `json:"message"`
		Problems []struct {
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"problems"`
	} `json:"error"`
}

// problem returns the message of the answer's problem on field.
func (e errorAnswer) problem(field string) (string, bool) {
	for _, p := range e.Error.Problems {
		if p.Field == field {
			return p.Message, true
		}
	}
	return "", false
}

// assertRefused posts body as a job to p and checks the answer is 400
// naming field with a message that says every one of reason; it returns
// the message.
func (c *cluster) assertRefused(t *testing.T, p *hushProc, body []byte, field string, reason []string) string {
	t.Helper()
	r, err := c.do(p, http.MethodPost, "/v1/notifications", body, "")
	if err != nil {
		t.Fatal(err)
	}
	var doc errorAnswer
	if r.Status != http.StatusBadRequest || json.Unmarshal(r.Body, &doc) != nil {
		t.Fatalf("status %d body %s; want 400 with the error envelope", r.Status, r.Body)
	}
	msg, ok := doc.problem(field)
	if !ok {
		t.Fatalf("400 does not name field %s: %s", field, r.Body)
	}
	for _, w := range reason {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: %q, want it to say %q", field, msg, w)
		}
	}
	return msg
}

// serveOnce runs hush serve with env (a later KEY= wins over an earlier
// one) until it exits, at most 15 s, and returns its exit status and
// stderr; -1 when it was still running and had to be stopped.
func serveOnce(t *testing.T, env []string) (int, string) {
	t.Helper()
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hushBin, "serve")
	cmd.Env = append(append([]string(nil), env...), "HUSH_HTTP_ADDR=127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, stderr.String()
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	}
	t.Fatalf("run %s serve: %v", hushBin, err)
	return 0, ""
}

// offsets describes arrival times relative to t0, for failure messages.
func offsets(ats []time.Time, t0 time.Time) string {
	var s []string
	for _, at := range ats {
		s = append(s, fmt.Sprintf("%+dms", at.Sub(t0).Milliseconds()))
	}
	return strings.Join(s, " ")
}

// assertQuiet checks the quiet hours: no push keeping them reaches a user
// in UTC inside the window (docs/delivery.md's 250 ms tolerance at both
// ends: a push booked just before the start leaves up to 100 ms after its
// slot); every mixed UTC user's timeline resumes after the end (the window
// held it); every mixed Tokyo user gets pushes inside it. It returns how
// many pushes of UTC users arrived after the end and how many of Tokyo
// users inside the window.
func (pl *policyPlan) assertQuiet(arrs []arrival, q quietWindow, mixedUTC, mixedTok []string) (held, free int) {
	t := pl.c.t
	t.Helper()
	var inside, edge []string
	after := map[string]int{}
	within := map[string]int{}
	for _, a := range sortedByTime(arrs) {
		n, ok := pl.notes[a.N]
		if !ok {
			continue
		}
		in := !a.At.Before(q.start) && a.At.Before(q.end)
		line := fmt.Sprintf("%s (%s) %s at %s", a.N, n.category, a.Platform, a.At.UTC().Format("15:04:05.000"))
		switch {
		case n.zone == policyTokyo && in:
			within[n.user]++
			free++
		case !n.keepsQuiet():
		case !a.At.Before(q.start.Add(e2eTolerance)) && a.At.Before(q.end.Add(-e2eTolerance)):
			inside = append(inside, line)
		case in:
			edge = append(edge, fmt.Sprintf("%s (%+dms from the start, %+dms from the end)", line,
				a.At.Sub(q.start).Milliseconds(), a.At.Sub(q.end).Milliseconds()))
		case !a.At.Before(q.end):
			after[n.user]++
			held++
		}
	}
	if len(inside) > 0 {
		t.Errorf("quiet hours %s: %d requests reached users in UTC inside them: %s", q, len(inside), head(inside, 10))
	}
	if len(edge) > 0 {
		t.Logf("quiet hours %s: %d requests within the %s tolerance of their ends: %s", q, len(edge), e2eTolerance, head(edge, 10))
	}
	for _, u := range mixedUTC {
		if after[u] == 0 {
			t.Errorf("quiet hours %s: %s (UTC) got nothing after them; its 16 pushes under 5/2s, from %s before, cannot all fit before the start",
				q, u, policyBurstLead)
		}
	}
	for _, u := range mixedTok {
		if within[u] == 0 {
			t.Errorf("quiet hours %s: %s (%s) got nothing inside them: held by another zone's quiet hours?%s", q, u, policyTokyo, timeline(arrs, u))
		}
	}
	return held, free
}

// assertSendAt checks the jobs with send_at inside the quiet hours: none
// arrives before send_at; UTC users' wait for the end; Tokyo users' and
// transactional ones are not held (they arrive before the end).
func (pl *policyPlan) assertSendAt(arrs []arrival, q quietWindow, sendAt time.Time, users map[string][]string) {
	t := pl.c.t
	t.Helper()
	first := map[string][]time.Time{}
	var seen []string
	for _, a := range sortedByTime(arrs) {
		first[pl.notes[a.N].user] = append(first[pl.notes[a.N].user], a.At)
	}
	for _, group := range slices.Sorted(maps.Keys(users)) {
		for _, u := range users[group] {
			ats := first[u]
			if len(ats) == 0 {
				continue // assertDelivered reports it
			}
			early, last := ats[0], ats[len(ats)-1]
			if early.Before(sendAt.Add(-e2eTolerance)) {
				t.Errorf("send_at: %s (%s) reached at %s, before its send_at %s", u, group, offsets(ats, sendAt), sendAt.UTC().Format("15:04:05.000"))
			}
			switch group {
			case "held":
				if early.Before(q.end.Add(-e2eTolerance)) {
					t.Errorf("send_at inside the quiet hours %s: %s (UTC) reached at %s from send_at, before their end", q, u, offsets(ats, sendAt))
				}
			default:
				if !last.Before(q.end) {
					t.Errorf("send_at inside the quiet hours %s: %s (%s) reached at %s from send_at, not before their end: held", q, u, group, offsets(ats, sendAt))
				}
			}
			seen = append(seen, fmt.Sprintf("%s (%s) %s", u, group, offsets(ats, sendAt)))
		}
	}
	t.Logf("send_at %s (quiet hours %s), arrivals from send_at: %s", sendAt.UTC().Format("15:04:05"), q, strings.Join(seen, "; "))
}
