package worker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/providers/webpush"
)

// fakeWebPush is a fake push service and the VAPID public key of the
// sender pointed at it.
type fakeWebPush struct {
	*fake.WebPush
	key string
}

// subscribe makes a subscription for the sender's key.
func (f *fakeWebPush) subscribe(t *testing.T) string {
	t.Helper()
	tok, err := f.Subscribe(f.key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// startWebPush starts a fake push service (hostile as o says) and adds the
// real Web Push sender, trusting the fake's certificate, to senders.
func startWebPush(tb testing.TB, senders map[payload.Platform]Sender, o fake.WebPushOptions) *fakeWebPush {
	tb.Helper()
	fw, err := fake.StartWebPushWith(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(fw.Close)
	ca, err := fw.WriteCA(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		tb.Fatal(err)
	}
	s, err := webpush.New(webpush.Config{PrivateKey: key.PrivateKey(), Subject: "mailto:ops@example.com", CAFile: ca,
		Egress: webpush.Egress{Origins: []string{webpush.OriginsPublic}, PrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	senders[payload.WebPush] = s
	return &fakeWebPush{WebPush: fw, key: key.PublicKey()}
}

// TestWebPushSharesTheUsersBudget: one user's APNs, FCM and Web Push
// devices share the user's caps and gap: every job reaches all three
// devices once, and the jobs' arrivals keep the window and the gap
// whatever the platform.
func TestWebPushSharesTheUsersBudget(t *testing.T) {
	const jobs = 5
	const limitN, window, gap = 2, 2 * time.Second, 500 * time.Millisecond
	const tolerance = 250 * time.Millisecond
	e := newEnv(t, envOptions{limits: "2/2s", gap: "500ms"})
	web := e.webpush.subscribe(t)
	devices := []payload.Device{
		{Platform: payload.APNs, Token: apnsToken("mixed")},
		{Platform: payload.FCM, Token: fcmToken("mixed")},
		{Platform: payload.WebPush, Token: web},
	}
	var ids []string
	for i := range jobs {
		job := alertJob(fmt.Sprintf("mixed-%d", i), fmt.Sprintf("title %d", i), payload.Recipient{UserID: "u-mixed", Devices: devices})
		ids = append(ids, e.submit(job))
	}
	if e.waitDelivered(ids, 40*time.Second) == 0 {
		t.Errorf("no delivery was deferred; the test does not exercise the shared budget")
	}

	// Each job reaches each platform once.
	titles := func(reqs []fake.Request, title func(fake.Request) string) []string {
		var out []string
		for _, r := range reqs {
			out = append(out, title(r))
		}
		slices.Sort(out)
		return out
	}
	var want []string
	for i := range jobs {
		want = append(want, fmt.Sprintf("title %d", i))
	}
	webTitle := func(r fake.Request) string {
		var b payload.WebPushBody
		if err := json.Unmarshal(r.Body, &b); err != nil || b.Notification == nil {
			t.Errorf("webpush body %s: %v", r.Body, err)
			return ""
		}
		return b.Notification.Title
	}
	apnsTitle := func(r fake.Request) string {
		var b struct {
			APS struct {
				Alert struct{ Title string } `json:"alert"`
			} `json:"aps"`
		}
		_ = json.Unmarshal(r.Body, &b)
		return b.APS.Alert.Title
	}
	fcmTitle := func(r fake.Request) string {
		var b struct {
			Message struct {
				Notification struct{ Title string } `json:"notification"`
			} `json:"message"`
		}
		_ = json.Unmarshal(r.Body, &b)
		return b.Message.Notification.Title
	}
	for _, p := range []struct {
		name  string
		got   []string
		times []time.Time
	}{
		{"webpush", titles(e.webpush.Requests(), webTitle), nil},
		{"apns", titles(e.apns.Requests(), apnsTitle), nil},
		{"fcm", titles(e.fcm.Requests(), fcmTitle), nil},
	} {
		if d := cmp.Diff(want, p.got); d != "" {
			t.Errorf("%s: titles received (-want +got):\n%s", p.name, d)
		}
	}

	// The arrivals, per job the earliest of its three, keep the rules;
	// every push of a job arrives at or after the job's booked slot.
	first := map[string]time.Time{}
	for _, reqs := range [][]fake.Request{e.webpush.Requests(), e.apns.Requests(), e.fcm.Requests()} {
		for _, r := range reqs {
			var title string
			switch {
			case r.Token == web:
				title = webTitle(r)
			case r.Token == apnsToken("mixed"):
				title = apnsTitle(r)
			default:
				title = fcmTitle(r)
			}
			var i int
			fmt.Sscanf(title, "title %d", &i)
			member := ids[i] + "/0"
			if slot, ok := e.lim.slot(member); !ok || r.At.Before(slot) {
				t.Errorf("%s (%s) arrived at %s, before its slot %s (booked %v)", member, r.Path, r.At, slot, ok)
			}
			if f, ok := first[member]; !ok || r.At.Before(f) {
				first[member] = r.At
			}
		}
	}
	var arrivals []time.Time
	for _, at := range first {
		arrivals = append(arrivals, at)
	}
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(arrivals); i++ {
		if d := arrivals[i].Sub(arrivals[i-1]); d < gap-tolerance {
			t.Errorf("jobs %d and %d arrived %s apart, want at least the gap %s", i-1, i, d, gap)
		}
		if i >= limitN {
			if d := arrivals[i].Sub(arrivals[i-limitN]); d < window-tolerance {
				t.Errorf("jobs %d..%d within %s: more than %d in a %s window", i-limitN, i, d, limitN, window)
			}
		}
	}
}

func TestWebPushGoneIsTokenInvalid(t *testing.T) {
	e := newEnv(t, envOptions{maxRetry: 3})
	dead := e.webpush.subscribe(t)
	e.webpush.Script(dead, fake.Unregistered())
	job := payload.Job{ID: "gone", Recipients: []payload.Recipient{{UserID: "u-1", Devices: []payload.Device{{Platform: payload.WebPush, Token: dead}}}},
		Content: payload.Content{Alert: &payload.Alert{Title: "g"}}}
	st := e.waitDone(e.submit(job), 10*time.Second)
	if diff := cmp.Diff(counts(0, 0, 1, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	want := []Event{{Type: EventTokenInvalid, Platform: string(payload.WebPush), Token: dead, UserID: "u-1", Reason: "410 Gone at " + e.webpush.URL, Job: "gone", App: DefaultApp}}
	if diff := cmp.Diff(want, e.events(), cmpopts.IgnoreFields(Event{}, "At")); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if n := len(e.webpush.Requests()); n != 1 {
		t.Errorf("the gone subscription got %d pushes, want 1 (never retried)", n)
	}
}

func TestWebPushRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxRetry: 0})
	tok := e.webpush.subscribe(t)
	e.webpush.Script(tok, fake.TooMany(2*time.Second), fake.OK())
	job := payload.Job{ID: "busy", Recipients: []payload.Recipient{{UserID: "u-1", Devices: []payload.Device{{Platform: payload.WebPush, Token: tok}}}},
		Content: payload.Content{Alert: &payload.Alert{Title: "b"}}}
	st := e.waitDone(e.submit(job), 20*time.Second)
	if diff := cmp.Diff(counts(1, 0, 0, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s (a 429 must not use up a retry)", diff)
	}
	reqs := e.webpush.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d pushes, want 2 (429, then 201)", len(reqs))
	}
	if wait := reqs[1].At.Sub(reqs[0].At); wait < 2*time.Second {
		t.Errorf("pushed again %s after a 429 with Retry-After 2s", wait)
	}
}

// TestWebPushOpenConnectionsGauge: hush_webpush_open_connections counts,
// per app, the connections the app's Web Push sender holds open: one
// after a push to the fake push service.
func TestWebPushOpenConnectionsGauge(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.waitDelivered([]string{e.submit(alertJob("conns-1", "hi", payload.Recipient{UserID: "u-conns",
		Devices: []payload.Device{{Platform: payload.WebPush, Token: e.webpush.subscribe(t)}}}))}, 20*time.Second)
	fams, err := e.w.m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "hush_webpush_open_connections" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				got[l.GetName()+"="+l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	if diff := cmp.Diff(map[string]float64{"app=" + DefaultApp: 1}, got); diff != "" {
		t.Errorf("hush_webpush_open_connections (-want +got):\n%s", diff)
	}
}

// TestWebPushRefusedKeyEndsTheSubscription: a push service answering 403
// for one subscription (issue 47, item 1) ends that subscription at once
// (token_invalid, with the reason, never retried) and leaves the worker
// ready: one subscriber's push service says nothing of the app's key.
func TestWebPushRefusedKeyEndsTheSubscription(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxRetry: 3})
	stale := e.webpush.subscribe(t)
	e.webpush.Script(stale, fake.Status(http.StatusForbidden))
	job := payload.Job{ID: "stale", Recipients: []payload.Recipient{{UserID: "u-1", Devices: []payload.Device{{Platform: payload.WebPush, Token: stale}}}},
		Content: payload.Content{Alert: &payload.Alert{Title: "s"}}}
	st := e.waitDone(e.submit(job), 20*time.Second)
	if diff := cmp.Diff(counts(0, 0, 1, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	evs := e.events()
	if len(evs) != 1 || evs[0].Type != EventTokenInvalid || evs[0].Token != stale ||
		!strings.HasPrefix(evs[0].Reason, "403 Forbidden at "+e.webpush.URL+": the VAPID key is refused") {
		t.Errorf("events = %+v, want one token_invalid naming the 403 and the origin", evs)
	}
	if n := len(e.webpush.Requests()); n != 1 {
		t.Errorf("the subscription got %d pushes, want 1 (never retried)", n)
	}
	if problems := e.w.NotReady(t.Context()); len(problems) != 0 {
		t.Errorf("NotReady = %q after one subscription's 403, want ready", problems)
	}
}

// TestWebPushAbsurdRetryAfterEnds: a 429 with Retry-After: 315360000 (ten
// years; issue 47, item 4) through the real sender does not schedule the
// delivery past its deadline: it ends expired at its deadline.
func TestWebPushAbsurdRetryAfterEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxRetry: 3, maxThrottled: time.Hour})
	tok := e.webpush.subscribe(t)
	e.webpush.Script(tok, fake.TooMany(0).WithRetryAfterHeader("315360000"))
	job := payload.Job{ID: "decade", Recipients: []payload.Recipient{{UserID: "u-1", Devices: []payload.Device{{Platform: payload.WebPush, Token: tok}}}},
		Content: payload.Content{Alert: &payload.Alert{Title: "d"}, TTL: payload.Duration(3 * time.Second)}}
	st := e.waitDone(e.submit(job), 30*time.Second)
	if diff := cmp.Diff(counts(0, 1, 0, 0), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestWebPushAbsurdRetryAfterFails: the same 429 with a deadline far off
// fails the delivery now, since its retry would come after
// HUSH_MAX_THROTTLED.
func TestWebPushAbsurdRetryAfterFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxRetry: 3, maxThrottled: time.Hour})
	tok := e.webpush.subscribe(t)
	e.webpush.Script(tok, fake.TooMany(0).WithRetryAfterHeader("315360000"))
	job := payload.Job{ID: "decade-2", Recipients: []payload.Recipient{{UserID: "u-1", Devices: []payload.Device{{Platform: payload.WebPush, Token: tok}}}},
		Content: payload.Content{Alert: &payload.Alert{Title: "d"}}}
	st := e.waitDone(e.submit(job), 30*time.Second)
	if diff := cmp.Diff(counts(0, 0, 0, 1), st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestWebPushNothingAfterTheCancelAnswer: a push whose connection to its
// push service is still being set up (a slow TLS handshake) when its job
// is cancelled never reaches the push service after the cancel's answer
// (issue 47, item 3): the request is not written once the cancel gate's
// window has passed, and the delivery drops as cancelled.
func TestWebPushNothingAfterTheCancelAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{bypass: []payload.Priority{payload.PriorityCritical}, webpush: fake.WebPushOptions{TLSDelay: 6 * time.Second}})
	tok := e.webpush.subscribe(t)
	job := payload.Job{ID: "slow-origin", Recipients: []payload.Recipient{{UserID: "u-1", Devices: []payload.Device{{Platform: payload.WebPush, Token: tok}}}},
		Content: payload.Content{Alert: &payload.Alert{Title: "c"}, Priority: payload.PriorityCritical}}
	id := e.submit(job)
	waitFor(t, 10*time.Second, "the push's call to start", func() bool { return len(e.calls.sendBys(tok)) > 0 })
	if _, err := e.client.Cancel(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	var st JobStatus
	waitFor(t, 20*time.Second, "the job's recipient final", func() bool {
		var err error
		st, err = e.client.Status(t.Context(), id)
		return err == nil && st.Counts["pending"] == 0
	})
	for _, r := range requestsFor(e.webpush.Requests(), tok) {
		if r.At.After(answered) {
			t.Errorf("the push reached the push service at %s, after the cancel's answer at %s", r.At.Format(time.StampMilli), answered.Format(time.StampMilli))
		}
	}
	if st.Counts["cancelled"] != 1 {
		t.Errorf("counts %v, want the delivery cancelled", st.Counts)
	}
}
