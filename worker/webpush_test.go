package worker

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
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

// startWebPush starts a fake push service and adds the real Web Push
// sender, trusting the fake's certificate, to senders.
func startWebPush(tb testing.TB, senders map[payload.Platform]Sender) *fakeWebPush {
	tb.Helper()
	fw, err := fake.StartWebPush()
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
	want := []Event{{Type: EventTokenInvalid, Platform: payload.WebPush, Token: dead, UserID: "u-1", Reason: "410 Gone at " + e.webpush.URL, Job: "gone", App: DefaultApp}}
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
