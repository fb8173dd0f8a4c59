package worker

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/task"
)

// optOutPolicy has a category users may opt out of (promo) and one they
// may not (security).
func optOutPolicy(p *throttle.Policy) {
	p.Categories = map[string]throttle.Category{"promo": {}, "security": {Required: true}}
}

// optOut stores user's opt-outs in the env's limiter, as the API does.
func (e *env) optOut(user string, cats ...string) {
	e.t.Helper()
	if err := e.lim.PutPreferences(context.Background(), user, throttle.Preferences{OptOut: cats}); err != nil {
		e.t.Fatal(err)
	}
}

// A push of a category its user opted out of ends opted_out, with its
// dropped event, unsent and booking nothing, in a single push's delivery
// task as in a fan-out's chunk; a critical push and a required category
// are sent anyway.
func TestOptedOutCategoryIsDroppedUnsent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{policy: optOutPolicy})
	e.optOut("u", "promo", "security")
	promo := func(j *payload.Job) { j.Category = "promo" }
	p1, tp := tokenJob("p1", "u", promo)
	s1, ts := tokenJob("sec", "u", func(j *payload.Job) { j.Category = "security" })
	c1, tc := tokenJob("crit", "u", func(j *payload.Job) { j.Category, j.Priority = "promo", payload.PriorityCritical })
	fanU, fanV := apnsToken("fan/u"), apnsToken("fan/v")
	fan := alertJob("fan", "fan", apnsRecipient("u", fanU), apnsRecipient("v", fanV))
	fan.Category = "promo"
	for _, j := range []payload.Job{p1, s1, c1, fan} {
		e.submit(j)
	}
	st := e.waitDone("p1", 10*time.Second)
	if st.Counts[task.OptedOut] != 1 || st.Outcome != OutcomeUndelivered {
		t.Errorf("p1: counts %v outcome %q, want 1 opted_out, undelivered", st.Counts, st.Outcome)
	}
	if st := e.waitDone("fan", 10*time.Second); st.Counts[task.OptedOut] != 1 || st.Counts[task.Delivered] != 1 || st.Outcome != OutcomePartlyDelivered {
		t.Errorf("fan: counts %v outcome %q, want 1 opted_out and 1 delivered, partly_delivered", st.Counts, st.Outcome)
	}
	e.waitDelivered([]string{"sec", "crit"}, 10*time.Second)
	e.waitQuiet(10 * time.Second)
	reqs := e.apns.Requests()
	for _, tok := range []string{tp, fanU} {
		if n := len(requestsFor(reqs, tok)); n != 0 {
			t.Errorf("%d requests for the opted-out push to %s, want none", n, tok)
		}
	}
	for _, tok := range []string{ts, tc, fanV} {
		if n := len(requestsFor(reqs, tok)); n != 1 {
			t.Errorf("%d requests for %s, want 1", n, tok)
		}
	}
	// No budget used: u's rules hold the two pushes sent, nothing more.
	status, err := e.lim.Status(context.Background(), "u", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(status.Entries) != 2 {
		t.Errorf("u's entries %v, want the 2 pushes sent", status.Entries)
	}
	var dropped []Event
	for _, ev := range e.events() {
		if ev.Type == EventDropped {
			dropped = append(dropped, ev)
		}
	}
	want := []Event{
		{Type: EventDropped, Reason: task.OptedOut, Job: "fan", App: DefaultApp, UserID: "u"},
		{Type: EventDropped, Reason: task.OptedOut, Job: "p1", App: DefaultApp, UserID: "u"},
	}
	sortEvents := cmpopts.SortSlices(func(a, b Event) bool { return a.Job < b.Job })
	if diff := cmp.Diff(want, dropped, cmpopts.IgnoreFields(Event{}, "At"), sortEvents); diff != "" {
		t.Errorf("dropped events (-want +got):\n%s", diff)
	}
}

// A push held for its slot (behind the gap) whose user opts out of its
// category while it waits is never sent and ends opted_out: a single
// push's delivery task and a fan-out's held task book again when they
// wake, and the limiter refuses them. A user who did not opt out, and
// one who opted back in before the slot, get the same fan-out's push.
func TestHeldPushOfACategoryOptedOutSinceIsNeverSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{gap: "4s", policy: optOutPolicy})
	users := []string{"u", "v", "w", "x"}
	var first []string
	for _, u := range users {
		j, _ := tokenJob("g-"+u, u, nil) // takes the gap: the promo pushes wait 4 s
		first = append(first, e.submit(j))
	}
	e.waitDelivered(first, 10*time.Second)
	promo := func(j *payload.Job) { j.Category = "promo" }
	single, ts := tokenJob("single", "u", promo)
	fanV, fanW, fanX := apnsToken("fan/v"), apnsToken("fan/w"), apnsToken("fan/x")
	fan := alertJob("fan", "fan", apnsRecipient("v", fanV), apnsRecipient("w", fanW), apnsRecipient("x", fanX))
	fan.Category = "promo"
	e.submit(single)
	e.submit(fan)
	for _, m := range []string{task.Member("single", 0, 0), task.Member("fan", 0, 0), task.Member("fan", 1, 0), task.Member("fan", 2, 0)} {
		waitFor(t, 5*time.Second, "a slot booked for "+m, func() bool {
			at, ok := e.lim.slot(m)
			return ok && at.After(time.Now().Add(time.Second))
		})
	}
	e.optOut("u", "promo")
	e.optOut("v", "promo")
	e.optOut("x", "promo")
	wrote := time.Now()
	e.optOut("x") // back in, before the slot
	if st := e.waitDone("single", 15*time.Second); st.Counts[task.OptedOut] != 1 {
		t.Errorf("single: counts %v, want 1 opted_out", st.Counts)
	}
	if st := e.waitDone("fan", 15*time.Second); st.Counts[task.OptedOut] != 1 || st.Counts[task.Delivered] != 2 {
		t.Errorf("fan: counts %v, want 1 opted_out and 2 delivered", st.Counts)
	}
	e.waitQuiet(10 * time.Second)
	reqs := e.apns.Requests()
	for _, tok := range []string{ts, fanV} {
		for _, r := range requestsFor(reqs, tok) {
			t.Errorf("the held push to %s arrived %s after its user opted out", tok, r.At.Sub(wrote))
		}
	}
	for _, tok := range []string{fanW, fanX} {
		if n := len(requestsFor(reqs, tok)); n != 1 {
			t.Errorf("%d requests for %s, who did not opt out or opted back in, want 1", n, tok)
		}
	}
}
