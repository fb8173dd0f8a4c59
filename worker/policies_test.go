package worker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/task"
)

// arrival is when the fake APNs received the push for token, failing the
// test when it received none or more than one.
func arrival(t *testing.T, reqs []fake.Request, token string) time.Time {
	t.Helper()
	rs := requestsFor(reqs, token)
	if len(rs) != 1 {
		t.Fatalf("%d requests for %s, want 1", len(rs), token)
	}
	return rs[0].At
}

// tokenJob is a job of one APNs recipient whose token names the job and the
// user, so arrivals tell jobs apart.
func tokenJob(id, user string, edit func(*payload.Job)) (payload.Job, string) {
	tok := apnsToken(id + "/" + user)
	j := alertJob(id, id, apnsRecipient(user, tok))
	if edit != nil {
		edit(&j)
	}
	return j, tok
}

// A category's own gap holds among its pushes, the global gap among all:
// social=@1500ms over a global gap of 300ms.
func TestCategoriesKeepTheirOwnRulesAndTheGlobalOnes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{gap: "300ms", policy: func(p *throttle.Policy) {
		p.Categories = map[string]throttle.Category{"social": {MinGap: 1500 * time.Millisecond}, "ops": {SkipGlobal: true}}
	}})
	social := func(j *payload.Job) { j.Category = "social" }
	s1, t1 := tokenJob("s1", "u", social)
	s2, t2 := tokenJob("s2", "u", social)
	g1, t3 := tokenJob("g1", "u", nil)
	o1, t4 := tokenJob("o1", "u", func(j *payload.Job) { j.Category = "ops" })
	for _, j := range []payload.Job{s1, s2, g1, o1} {
		e.submit(j)
	}
	for _, id := range []string{"s1", "s2", "g1", "o1"} {
		e.waitDone(id, 10*time.Second)
	}
	reqs := e.apns.Requests()
	a1, a2, a3, a4 := arrival(t, reqs, t1), arrival(t, reqs, t2), arrival(t, reqs, t3), arrival(t, reqs, t4)
	const tol = 250 * time.Millisecond
	if d := a2.Sub(a1).Abs(); d < 1500*time.Millisecond-tol {
		t.Errorf("social pushes %s apart, want at least the category's 1.5s", d)
	}
	global := []time.Time{a1, a2, a3}
	slices.SortFunc(global, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(global); i++ {
		if d := global[i].Sub(global[i-1]); d < 300*time.Millisecond-tol {
			t.Errorf("pushes keeping the global rules %s apart, want at least 300ms", d)
		}
	}
	if d := a4.Sub(global[0]); d > time.Second {
		t.Errorf("the global=off push arrived %s after the first, want at once", d)
	}
}

// Quiet hours hold a push until they end in the user's zone: a window set
// from now, in UTC; a user in another zone and a category without quiet
// hours are not held.
func TestQuietHoursHoldUntilTheyEnd(t *testing.T) {
	t.Parallel()
	start := time.Now().UTC().Add(300 * time.Millisecond)
	end := start.Add(2 * time.Second)
	tod := func(t time.Time) time.Duration {
		return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
			time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond()/1e6)*time.Millisecond
	}
	e := newEnv(t, envOptions{location: time.UTC, policy: func(p *throttle.Policy) {
		p.Quiet = throttle.Quiet{From: tod(start), To: tod(end)}
		p.Categories = map[string]throttle.Category{"transactional": {Quiet: &throttle.Quiet{}}}
	}})
	waitFor(t, 2*time.Second, "the quiet hours", func() bool { return time.Now().After(start.Add(100 * time.Millisecond)) })
	held, t1 := tokenJob("held", "u", nil)
	tx, t2 := tokenJob("tx", "v", func(j *payload.Job) { j.Category = "transactional" })
	far, t3 := tokenJob("far", "w", func(j *payload.Job) { j.Recipients[0].Timezone = "Asia/Tokyo" })
	for _, j := range []payload.Job{held, tx, far} {
		e.submit(j)
	}
	for _, id := range []string{"held", "tx", "far"} {
		e.waitDone(id, 10*time.Second)
	}
	reqs := e.apns.Requests()
	if a := arrival(t, reqs, t1); a.Before(end) || a.After(end.Add(250*time.Millisecond)) {
		t.Errorf("held push arrived %s after the quiet hours' end, want within 250ms after it", a.Sub(end))
	}
	for _, tok := range []string{t2, t3} {
		if a := arrival(t, reqs, tok); !a.Before(end) {
			t.Errorf("a push outside its quiet hours arrived %s after their end, want before it", a.Sub(end))
		}
	}
}

// send_at: nothing is booked before it, the push goes out at it, and the
// ttl counts from it.
func TestSendAtBooksNothingBefore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	at := time.Now().Add(2500 * time.Millisecond)
	j, tok := tokenJob("later", "u", func(j *payload.Job) {
		j.SendAt = &at
		j.TTL = payload.Duration(time.Second) // from send_at: not expired
	})
	e.submit(j)
	// The job's task waits in Asynq's schedule until shortly before
	// send_at, and Asynq runs nothing of it earlier: nothing is booked
	// until then.
	ti, err := e.insp.GetTaskInfo("normal", task.JobID("later"))
	if err != nil {
		t.Fatal(err)
	}
	if ti.State != asynq.TaskStateScheduled || ti.NextProcessAt.Before(at.Add(-decide.WakeMargin-time.Second)) {
		t.Errorf("job task %s, due at %s, want scheduled for %s before send_at", ti.State, ti.NextProcessAt.Format(time.StampMilli), decide.WakeMargin)
	}
	st, err := e.lim.Status(context.Background(), "u", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Entries) != 0 {
		t.Errorf("entries %v before send_at, want none booked yet", st.Entries)
	}
	if got := e.waitDone("later", 10*time.Second); got.Counts[task.Delivered] != 1 {
		t.Fatalf("counts %v, want delivered", got.Counts)
	}
	if a := arrival(t, e.apns.Requests(), tok); a.Before(at) || a.After(at.Add(250*time.Millisecond)) {
		t.Errorf("arrived %s after send_at, want within 250ms after it", a.Sub(at))
	}
}

// A bypass priority skips the limiter, not send_at: no push of a job with
// send_at reaches a device before it, whether the job has one recipient
// or several.
func TestBypassWaitsForSendAt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{bypass: []payload.Priority{payload.PriorityCritical}})
	at := time.Now().Add(2500 * time.Millisecond)
	one := alertJob("crit-one", "c1", apnsRecipient("u-1", apnsToken("c1")))
	many := alertJob("crit-many", "c2", apnsRecipient("u-2", apnsToken("c2a")), apnsRecipient("u-3", apnsToken("c2b")), apnsRecipient("u-4", apnsToken("c2c")))
	for _, j := range []*payload.Job{&one, &many} {
		j.Priority = payload.PriorityCritical
		j.SendAt = &at
		e.submit(*j)
	}
	for id, n := range map[string]int{"crit-one": 1, "crit-many": 3} {
		if st := e.waitDone(id, 10*time.Second); st.Counts[task.Delivered] != n {
			t.Fatalf("%s: counts %v, want %d delivered", id, st.Counts, n)
		}
	}
	reqs := e.apns.Requests()
	for _, tok := range []string{"c1", "c2a", "c2b", "c2c"} {
		if a := arrival(t, reqs, apnsToken(tok)); a.Before(at) || a.After(at.Add(250*time.Millisecond)) {
			t.Errorf("critical push to %s arrived %s after send_at, want within 250ms after it", tok, a.Sub(at))
		}
	}
}

// A newer push with the same collapse key takes the held one's place: the
// held one is never sent and ends collapsed (event and state); the newer
// one goes out at the held one's slot.
func TestCollapseSendsOnlyTheLatest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{gap: "6s"})
	key := func(j *payload.Job) { j.CollapseKey = "score" }
	first, t1 := tokenJob("first", "u", key)
	old, t2 := tokenJob("old", "u", key)
	latest, t3 := tokenJob("latest", "u", key)
	e.submit(first)
	e.waitDone("first", 5*time.Second)
	e.submit(old)
	waitFor(t, 5*time.Second, "old held", func() bool {
		_, ok := e.lim.slot(task.Member("old", 0, 0))
		return ok
	})
	oldSlot, _ := e.lim.slot(task.Member("old", 0, 0))
	e.submit(latest)
	if st := e.waitDone("old", 5*time.Second); st.Counts[task.Collapsed] != 1 {
		t.Errorf("old: counts %v, want collapsed", st.Counts)
	}
	e.waitDone("latest", 10*time.Second)
	reqs := e.apns.Requests()
	arrival(t, reqs, t1)
	if n := len(requestsFor(reqs, t2)); n != 0 {
		t.Errorf("the collapsed push reached the provider %d times", n)
	}
	if a := arrival(t, reqs, t3); a.Before(oldSlot) || a.After(oldSlot.Add(250*time.Millisecond)) {
		t.Errorf("latest arrived %s after the held one's slot, want within 250ms after it", a.Sub(oldSlot))
	}
	var collapsed int
	for _, ev := range e.events() {
		if ev.Type == EventDropped && ev.Reason == task.Collapsed && ev.Job == "old" {
			collapsed++
		}
	}
	if collapsed != 1 {
		t.Errorf("%d dropped events with reason collapsed for old, want 1", collapsed)
	}
}

// Cancelling a job: what was sent stays delivered, everything held is
// dropped at once with reason cancelled and gives its booking back, and
// nothing arrives after the answer, even with a wave of slow provider
// calls under way when it comes.
func TestCancelSendsNothingAfterItsAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{gap: "5s", concurrency: 5})
	e.apns.Script("", fake.OK().WithLatency(400*time.Millisecond))
	// Four users just got a push: the job's pushes to them are held 5 s.
	var users []payload.Recipient
	for _, u := range []string{"a", "b", "c", "d"} {
		e.submit(alertJob("before-"+u, "before", apnsRecipient(u, apnsToken("before/"+u))))
		users = append(users, apnsRecipient(u, apnsToken("big/"+u)))
	}
	for _, u := range []string{"a", "b", "c", "d"} {
		e.waitDone("before-"+u, 5*time.Second)
	}
	// And thirty fresh users, sent in waves of five slow calls.
	for i := range 30 {
		users = append(users, apnsRecipient("f"+string(rune('a'+i)), apnsToken("big/f"+string(rune('a'+i)))))
	}
	e.submit(alertJob("big", "big", users...))
	waitFor(t, 5*time.Second, "the first answers", func() bool { return len(requestsFor(e.apns.Requests(), apnsToken("big/fa"))) > 0 })
	res, err := e.client.Cancel(context.Background(), "big")
	if err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	if !res.Cancelled || res.State != jobCancelled || res.CancelledAt.IsZero() {
		t.Errorf("cancel answered %+v, want cancelled now", res)
	}
	st := e.waitDone2("big", 10*time.Second)
	e.waitQuiet(10 * time.Second) // every call under way has reached the fake
	var sent int
	for _, r := range e.apns.Requests() {
		if r.At.After(answered) {
			t.Errorf("a push to %s arrived %s after the cancel's answer", r.Token[:8], r.At.Sub(answered))
		}
		if slices.ContainsFunc(users, func(u payload.Recipient) bool { return u.Devices[0].Token == r.Token }) {
			sent++
		}
	}
	if st.Counts[task.Delivered] != sent || st.Counts[task.Cancelled] != len(users)-sent || sent == 0 || sent == len(users) {
		t.Errorf("counts %v with %d of %d sent, want those delivered and the rest cancelled", st.Counts, sent, len(users))
	}
	for _, u := range []string{"a", "b", "c", "d"} {
		s, err := e.lim.Status(context.Background(), u, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range s.Entries {
			if en.Member == task.Member("big", slices.IndexFunc(users, func(r payload.Recipient) bool { return r.UserID == u }), 0) {
				t.Errorf("user %s still holds the cancelled job's booking %v", u, en)
			}
		}
	}
	var cancelled int
	for _, ev := range e.events() {
		if ev.Type == EventDropped && ev.Reason == task.Cancelled && ev.Job == "big" {
			cancelled++
		}
	}
	if cancelled != st.Counts[task.Cancelled] {
		t.Errorf("%d dropped events with reason cancelled, want %d", cancelled, st.Counts[task.Cancelled])
	}
	again, err := e.client.Cancel(context.Background(), "big")
	if err != nil || again.Cancelled || !again.CancelledAt.Equal(res.CancelledAt) {
		t.Errorf("second cancel = %+v, %v; want the same cancellation, not again", again, err)
	}
	if _, err := e.client.Cancel(context.Background(), "never"); !errors.Is(err, ErrNotFound) {
		t.Errorf("cancel of an unknown job: %v, want ErrNotFound", err)
	}
}

// waitDone2 waits until every recipient of the job has a final state,
// whatever the job's state says (a cancelled job's state stays cancelled).
func (e *env) waitDone2(id string, timeout time.Duration) JobStatus {
	e.t.Helper()
	var st JobStatus
	waitFor(e.t, timeout, "job "+id+" final", func() bool {
		var err error
		st, err = e.client.Status(context.Background(), id)
		return err == nil && st.Counts["pending"] == 0
	})
	return st
}

// A job naming a category the workers do not have is refused, naming the
// field.
func TestUnknownCategoryIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noRun: true, policy: func(p *throttle.Policy) {
		p.Categories = map[string]throttle.Category{"social": {MinGap: time.Second}}
	}})
	j, _ := tokenJob("x", "u", func(j *payload.Job) { j.Category = "promo" })
	_, err := e.client.Enqueue(context.Background(), j)
	var ve *payload.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Field != "category" ||
		ve.Problems[0].Message != `unknown category "promo" (configured: social)` {
		t.Fatalf("Enqueue: %v, want one problem on category", err)
	}
}
