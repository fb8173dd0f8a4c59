package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/worker/internal/task"
)

func counts(delivered, expired, tokenInvalid, failed int) map[string]int {
	return map[string]int{"delivered": delivered, "expired": expired, "token_invalid": tokenInvalid, "failed": failed, "throttle_full": 0, "collapsed": 0, "cancelled": 0, "opted_out": 0, "pending": 0}
}

// hasEntry reports whether the limiter holds a booking or send for member.
func (e *env) hasEntry(user, member string) bool {
	e.t.Helper()
	st, err := e.lim.Status(context.Background(), user, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, en := range st.Entries {
		if en.Member == member {
			return true
		}
	}
	return false
}

func TestExpiredDeliveryIsDroppedAndGivesItsSlotBack(t *testing.T) {
	e := newEnv(t, envOptions{limits: "100/1m", gap: "10s"})
	first := e.submit(alertJob("first", "one", apnsRecipient("u-1", apnsToken("first"))))
	e.waitDone(first, 10*time.Second)

	late := alertJob("late", "two", apnsRecipient("u-1", apnsToken("late")))
	late.TTL = payload.Duration(2 * time.Second)
	id := e.submit(late)
	st := e.waitDone(id, 10*time.Second)
	if diff := cmp.Diff(counts(0, 1, 0, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if st.State != jobDone || st.Outcome != OutcomeUndelivered {
		t.Errorf("state %q, outcome %q; want done, %s: its only delivery expired", st.State, st.Outcome, OutcomeUndelivered)
	}
	if e.hasEntry("u-1", "late/0") {
		t.Errorf("the limiter still holds the expired delivery's slot")
	}
	if !e.hasEntry("u-1", "first/0") {
		t.Errorf("the limiter lost the delivered push's entry")
	}
	if n := len(requestsFor(e.apns.Requests(), apnsToken("late"))); n != 0 {
		t.Errorf("the expired delivery was sent %d times", n)
	}
	want := []Event{
		{Type: EventDelivered, Job: "first", App: DefaultApp, UserID: "u-1"},
		{Type: EventDropped, Reason: "expired", Job: "late", App: DefaultApp, UserID: "u-1"},
	}
	if diff := cmp.Diff(want, e.events(), cmpopts.IgnoreFields(Event{}, "At")); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestBypassSkipsTheLimiter(t *testing.T) {
	e := newEnv(t, envOptions{limits: "1/1h", gap: "1h", bypass: []payload.Priority{payload.PriorityCritical}})
	e.waitDone(e.submit(alertJob("normal", "n", apnsRecipient("u-1", apnsToken("n")))), 10*time.Second)

	crit := alertJob("crit", "c", apnsRecipient("u-1", apnsToken("c")))
	crit.Priority = payload.PriorityCritical
	start := time.Now()
	st := e.waitDone(e.submit(crit), 10*time.Second)
	if st.Counts[task.Delivered] != 1 || st.Queue != "critical" {
		t.Errorf("critical job: %+v, want delivered from the critical queue", st)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("critical push took %s although the user is throttled for an hour", d)
	}
	if _, booked := e.lim.slot("crit/0"); booked || e.hasEntry("u-1", "crit/0") {
		t.Errorf("the bypass delivery went through the limiter")
	}
}

func TestTokenInvalid(t *testing.T) {
	e := newEnv(t, envOptions{maxRetry: 3})
	dead := apnsToken("dead")
	e.apns.Script(dead, fake.Unregistered())
	st := e.waitDone(e.submit(alertJob("ti", "t", apnsRecipient("u-1", dead))), 10*time.Second)
	if diff := cmp.Diff(counts(0, 0, 1, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	want := []Event{{Type: EventTokenInvalid, Platform: string(payload.APNs), Token: dead, UserID: "u-1", Reason: "Unregistered", Job: "ti", App: DefaultApp}}
	if diff := cmp.Diff(want, e.events(), cmpopts.IgnoreFields(Event{}, "At")); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if n := len(requestsFor(e.apns.Requests(), dead)); n != 1 {
		t.Errorf("dead token got %d requests, want 1 (never retried)", n)
	}
	if e.hasEntry("u-1", "ti/0") {
		t.Errorf("nothing reached the user but the slot was kept")
	}
}

func TestRetrySendsOnlyToUndeliveredDevices(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxRetry: 3})
	ok, flaky := apnsToken("ok"), apnsToken("flaky")
	e.apns.Script(flaky, fake.Status(http.StatusServiceUnavailable), fake.OK())
	st := e.waitDone(e.submit(alertJob("retry", "r", apnsRecipient("u-1", ok, flaky))), 20*time.Second)
	if diff := cmp.Diff(counts(1, 0, 0, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	reqs := e.apns.Requests()
	if n := len(requestsFor(reqs, ok)); n != 1 {
		t.Errorf("delivered device got %d requests, want exactly 1", n)
	}
	if n := len(requestsFor(reqs, flaky)); n != 2 {
		t.Errorf("flaky device got %d requests, want 2 (503, then OK)", n)
	}
}

// TestRetriesAfterADeliveryGiveTheirBookingsBack: once one device of a
// recipient has the push, a later attempt refused by the provider reached
// nobody: its booking goes back, and only the bookings the pushes went out
// under stay in the user's rules.
func TestRetriesAfterADeliveryGiveTheirBookingsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ok, busy := apnsToken("kept-ok"), apnsToken("kept-busy")
	e.apns.Script(busy, fake.TooMany(0), fake.TooMany(0), fake.OK())
	st := e.waitDone(e.submit(alertJob("kept", "k", apnsRecipient("u-1", ok, busy))), 30*time.Second)
	if diff := cmp.Diff(counts(1, 0, 0, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if n := len(requestsFor(e.apns.Requests(), busy)); n != 3 {
		t.Fatalf("throttled device got %d requests, want 3 (429, 429, OK)", n)
	}
	for _, tt := range []struct {
		member string
		want   bool
	}{
		{"kept/0", true},    // the first device's push, and the first 429
		{"kept/0#1", false}, // the second 429: nobody reached
		{"kept/0#2", true},  // the second device's push
	} {
		if got := e.hasEntry("u-1", tt.member); got != tt.want {
			t.Errorf("limiter holds %s: %v, want %v", tt.member, got, tt.want)
		}
	}
}

// TestThrottledBackoffCountsRefusalsOnly: the backoff after a 429
// without Retry-After grows with the provider's refusals, not with the
// attempts whose devices were left late for their slot. Here each of four
// attempts delivers one device and finds the rest late; the fifth device's
// first answer is a 429, so its retry waits decide.Backoff(0), 0.5 to 1 s, not
// decide.Backoff(4).
func TestThrottledBackoffCountsRefusalsOnly(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var buf bytes.Buffer
	logs := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})
	e := newEnv(t, envOptions{noRun: true, logs: logs})
	toks := make([]string, 5)
	late := map[string]int{}
	for k := range toks {
		toks[k] = apnsToken(fmt.Sprintf("refusals-%d", k))
		late[toks[k]] = k // device k is late for the first k attempts
	}
	e.apns.Script(toks[4], fake.TooMany(0), fake.OK())
	app, _ := e.w.apps.Get(DefaultApp)
	app.Senders[payload.APNs] = &lateFor{Sender: app.Senders[payload.APNs], late: late}
	e.start()
	t.Cleanup(e.shutdown)
	e.waitDone(e.submit(alertJob("refusals", "r", apnsRecipient("u-1", toks...))), time.Minute)
	mu.Lock()
	defer mu.Unlock()
	var delays []time.Duration
	for _, line := range strings.Split(buf.String(), "\n") {
		if !strings.Contains(line, "delivery retried") || !strings.Contains(line, "TooManyRequests") {
			continue
		}
		var rec struct {
			Attempt int   `json:"attempt"`
			In      int64 `json:"in"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		t.Logf("throttled retry as attempt %d, in %s", rec.Attempt, time.Duration(rec.In))
		delays = append(delays, time.Duration(rec.In))
	}
	if len(delays) != 1 {
		t.Fatalf("%d throttled retries logged, want 1", len(delays))
	}
	if delays[0] > time.Second {
		t.Errorf("the first 429's retry waits %s, want decide.Backoff(0): at most 1s (the attempts left late are no refusals)", delays[0])
	}
}

func TestProviderThrottlingIsNotAFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxRetry: 0})
	tok := apnsToken("busy")
	e.apns.Script(tok, fake.TooMany(0), fake.OK())
	st := e.waitDone(e.submit(alertJob("busy", "b", apnsRecipient("u-1", tok))), 20*time.Second)
	if diff := cmp.Diff(counts(1, 0, 0, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s (with HUSH_MAX_RETRY=0 a throttled answer must not use up a retry)", diff)
	}
	info, err := e.insp.GetQueueInfo("normal")
	if err != nil {
		t.Fatal(err)
	}
	if info.FailedTotal != 0 {
		t.Errorf("queue counted %d failures, want 0", info.FailedTotal)
	}
}

func TestFCMRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxRetry: 0})
	tok := fcmToken("quota")
	e.fcm.Script(tok, fake.TooMany(2*time.Second), fake.OK())
	job := payload.Job{ID: "quota", Recipients: []payload.Recipient{{UserID: "u-1", Devices: []payload.Device{{Platform: payload.FCM, Token: tok}}}},
		Content: payload.Content{Alert: &payload.Alert{Title: "q"}}}
	st := e.waitDone(e.submit(job), 20*time.Second)
	if diff := cmp.Diff(counts(1, 0, 0, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	reqs := requestsFor(e.fcm.Requests(), tok)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (429, then OK)", len(reqs))
	}
	if wait := reqs[1].At.Sub(reqs[0].At); wait < 2*time.Second {
		t.Errorf("asked again %s after a 429 with Retry-After 2s", wait)
	}
}

// archived waits for n archived tasks in the normal queue and returns them.
func (e *env) archived(n int) []*asynq.TaskInfo {
	e.t.Helper()
	var tasks []*asynq.TaskInfo
	waitFor(e.t, 20*time.Second, "archived tasks", func() bool {
		var err error
		tasks, err = e.insp.ListArchivedTasks("normal")
		return err == nil && len(tasks) >= n
	})
	return tasks
}

func TestFailuresAreArchivedWithTheReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		answers  []fake.Answer
		requests int
		reason   string
		notReady bool
	}{
		{"transient beyond HUSH_MAX_RETRY", []fake.Answer{fake.Status(500), fake.Status(500), fake.Status(500)}, 2, "giving up after 1 retries: transient provider failure (InternalServerError)", false},
		{"permanent at once", []fake.Answer{fake.APNsReason(400, "BadTopic")}, 1, "permanent provider failure (BadTopic)", false},
		{"credential failure retried, then archived, and fails readiness", []fake.Answer{fake.APNsReason(403, "InvalidProviderToken"), fake.APNsReason(403, "InvalidProviderToken"), fake.APNsReason(403, "InvalidProviderToken")}, 2, "giving up after 1 retries: credentials refused (InvalidProviderToken)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{maxRetry: 1})
			tok := apnsToken(tt.name)
			e.apns.Script(tok, tt.answers...)
			st := e.waitDone(e.submit(alertJob("fail", "f", apnsRecipient("u-1", tok))), 20*time.Second)
			if diff := cmp.Diff(counts(0, 0, 0, 1), st.Counts); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			tasks := e.archived(1)
			if len(tasks) != 1 || !strings.Contains(tasks[0].LastErr, tt.reason) {
				t.Errorf("archived %d tasks, last error %q; want one archived with %q", len(tasks), tasks[0].LastErr, tt.reason)
			}
			if n := len(requestsFor(e.apns.Requests(), tok)); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			if got := len(e.w.NotReady(t.Context())) > 0; got != tt.notReady {
				t.Errorf("not ready = %v (%v), want %v", got, e.w.NotReady(t.Context()), tt.notReady)
			}
		})
	}
}

// TestCredentialFailureIsRetried: a key the provider refuses (revoked
// before the rotated one was loaded) does not lose the push: the delivery
// retries with the backoff, gives its booking back meanwhile, and goes out
// once the provider takes the key again; readiness fails in between.
func TestCredentialFailureIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxRetry: 3})
	tok := apnsToken("cred")
	e.apns.Script(tok, fake.APNsReason(403, "ExpiredProviderToken"), fake.APNsReason(403, "InvalidProviderToken"), fake.OK())
	st := e.waitDone(e.submit(alertJob("cred", "c", apnsRecipient("u-1", tok))), 20*time.Second)
	if diff := cmp.Diff(counts(1, 0, 0, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	reqs := requestsFor(e.apns.Requests(), tok)
	var statuses []int
	for _, r := range reqs {
		statuses = append(statuses, r.Status)
	}
	if !slices.Equal(statuses, []int{403, 403, 200}) {
		t.Errorf("answers %v, want two refusals for the key and then the push", statuses)
	}
	if got := testutil.ToFloat64(e.w.m.credentialRefusals.WithLabelValues(DefaultApp, string(payload.APNs))); got != 2 {
		t.Errorf("hush_credential_refusals_total = %v, want 2 (one per refusal)", got)
	}
	if got := e.w.NotReady(t.Context()); len(got) == 0 {
		t.Errorf("ready right after the provider refused the credentials, want not ready for a minute")
	}
	lst, err := e.lim.Status(t.Context(), "u-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for _, en := range lst.Entries {
		members = append(members, en.Member)
	}
	if len(members) != 1 {
		t.Errorf("limiter entries %v, want only the delivered attempt's (a refused attempt gives its booking back)", members)
	}
}

func TestGarbageTaskIsArchivedAndTheWorkerGoesOn(t *testing.T) {
	e := newEnv(t, envOptions{})
	aq := asynq.NewClientFromRedisClient(e.rdb)
	if _, err := aq.Enqueue(asynq.NewTask(TypeDelivery, []byte("{not json")), asynq.Queue("normal"), asynq.MaxRetry(5)); err != nil {
		t.Fatal(err)
	}
	tasks := e.archived(1)
	if !strings.Contains(tasks[0].LastErr, "undecodable delivery payload") || tasks[0].Retried != 0 {
		t.Errorf("archived task: last error %q after %d retries; want archived at once with a readable reason", tasks[0].LastErr, tasks[0].Retried)
	}
	st := e.waitDone(e.submit(alertJob("after", "a", apnsRecipient("u-1", apnsToken("after")))), 10*time.Second)
	if st.Counts[task.Delivered] != 1 {
		t.Errorf("a job after the garbage task: %v, want delivered", st.Counts)
	}
}

// TestExpiryAfterAPartialDelivery: one device got the push, the retry for
// the other runs past the deadline; the delivery counts as delivered and
// its limiter entry (a real push) stays.
func TestExpiryAfterAPartialDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxRetry: 10})
	ok, down := apnsToken("p-ok"), apnsToken("p-down")
	e.apns.Script(down, fake.Status(503), fake.Status(503), fake.Status(503), fake.Status(503), fake.Status(503), fake.Status(503))
	job := alertJob("partial", "p", apnsRecipient("u-1", ok, down))
	job.TTL = payload.Duration(2 * time.Second)
	st := e.waitDone(e.submit(job), 20*time.Second)
	if diff := cmp.Diff(counts(1, 0, 0, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if !e.hasEntry("u-1", "partial/0") {
		t.Errorf("the limiter lost the entry of a push the user received")
	}
	if n := len(requestsFor(e.apns.Requests(), ok)); n != 1 {
		t.Errorf("delivered device got %d requests, want 1", n)
	}
	want := []Event{{Type: EventDelivered, Job: "partial", App: DefaultApp, UserID: "u-1"}}
	if diff := cmp.Diff(want, e.events(), cmpopts.IgnoreFields(Event{}, "At")); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestEveryFinalStateHasItsEvent: each recipient's final state is reported
// by one event (delivered, failed with its reason, dropped with the state
// as reason), a dead token by its device's token_invalid, in a fan-out
// job's chunk as in a single push's delivery task.
func TestEveryFinalStateHasItsEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxRetry: 1})
	ok, bad, dead, single := apnsToken("ok"), apnsToken("bad"), apnsToken("dead"), apnsToken("single")
	e.apns.Script(bad, fake.APNsReason(http.StatusBadRequest, "BadTopic"))
	e.apns.Script(dead, fake.Unregistered())
	fan := e.waitDone(e.submit(alertJob("fan", "f", apnsRecipient("u-ok", ok), apnsRecipient("u-bad", bad), apnsRecipient("u-dead", dead))), 20*time.Second)
	if diff := cmp.Diff(counts(1, 0, 1, 1), fan.Counts); diff != "" {
		t.Errorf("fan-out counts (-want +got):\n%s", diff)
	}
	e.waitDone(e.submit(alertJob("one", "o", apnsRecipient("u-one", single))), 20*time.Second)

	var got []Event
	for _, ev := range e.events() {
		if ev.Type == EventFailed && ev.Reason == "" {
			t.Errorf("failed event without a reason: %+v", ev)
		}
		ev.Reason = strings.TrimSpace(ev.Reason)
		if ev.Type == EventFailed {
			ev.Reason = "<reason>"
		}
		got = append(got, ev)
	}
	want := []Event{
		{Type: EventDelivered, Job: "fan", App: DefaultApp, UserID: "u-ok"},
		{Type: EventFailed, Reason: "<reason>", Job: "fan", App: DefaultApp, UserID: "u-bad"},
		{Type: EventTokenInvalid, Platform: string(payload.APNs), Token: dead, Reason: "Unregistered", Job: "fan", App: DefaultApp, UserID: "u-dead"},
		{Type: EventDelivered, Job: "one", App: DefaultApp, UserID: "u-one"},
	}
	sortEvents := cmpopts.SortSlices(func(a, b Event) bool { return a.Job+a.UserID+a.Type < b.Job+b.UserID+b.Type })
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Event{}, "At"), sortEvents); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
