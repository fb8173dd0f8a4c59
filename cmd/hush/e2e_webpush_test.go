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
	"github.com/hushpush/hush/providers/fake"
)

// webPushRules are short rules for the Web Push test: four notifications
// per user take two windows.
var webPushRules = rules{n: 2, window: 2 * time.Second, gap: 500 * time.Millisecond, tolerance: e2eTolerance}

// TestE2EWebPushMixed: users each with an APNs, an FCM and a Web Push
// device, their jobs submitted round-robin to three processes. The jobs
// address the devices in turns (all three, Web Push alone, APNs alone, FCM
// and Web Push), so a user's caps and gap hold only if one budget spans
// the three platforms. Every push arrives exactly once; a subscription
// answering 410 is asked once and makes one token_invalid event; a 429
// with Retry-After is not asked again sooner.
func TestE2EWebPushMixed(t *testing.T) {
	start := time.Now()
	c := startCluster(t, clusterOptions{procs: 3, concurrency: e2eConcurrency, maxRetry: 5, rules: &webPushRules})
	const users, perUser = 6, 4
	b := burst{prefix: "w", users: users, perUser: perUser}
	var jobs []payload.Job
	var want []push
	for k := range perUser {
		for u := range users {
			j, ps := c.mixedJob(b.user(u), k, (u+k)%4)
			jobs = append(jobs, j)
			want = append(want, ps...)
		}
	}

	// One user's subscription is throttled once, for longer than the
	// user's four notifications take: a retry that ignored Retry-After
	// would come at the user's next free slot (4 s) and show.
	throttled := c.subscription(b.user(0))
	const retryAfter = 6 * time.Second
	c.webpush.Script(throttled, fake.TooMany(retryAfter), fake.OK())

	// A user whose subscription is gone: one notification to all three
	// devices; APNs and FCM still get it.
	gone := "w-gone"
	goneSub := c.subscription(gone)
	c.webpush.Script(goneSub, fake.Unregistered())
	goneJob, gonePushes := c.mixedJob(gone, 0, 0)
	want = append(want, slices.DeleteFunc(gonePushes, func(p push) bool { return p.Platform == payload.WebPush })...)

	c.submit(append(jobs, goneJob), c.procs, "")
	took := c.waitDrained(want, 2*time.Minute)
	arrs := c.arrivals()
	c.assertDelivered(arrs, want, 0)
	// The throttled device's own timeline is left out: its retry's time is
	// set by Retry-After, which the device's other pushes need not be
	// spaced from. The user's timeline (the first arrival of each
	// notification over the user's devices) is checked whole.
	c.assertTimelines(slices.DeleteFunc(slices.Clone(arrs), func(a arrival) bool { return a.Token == throttled }))
	c.assertNothingArchived()
	c.assertJobsDone(jobs)

	statuses := func(token string) []int {
		var out []int
		for _, a := range sortedByTime(arrs) {
			if a.Platform == payload.WebPush && a.Token == token {
				out = append(out, a.Status)
			}
		}
		return out
	}

	// 429 with Retry-After: answered once, asked again no sooner.
	if got := statuses(throttled); len(got) == 0 || got[0] != http.StatusTooManyRequests {
		t.Errorf("throttled subscription: the fake answered %v, want it to start with 429 (the script did not play)", got)
	}
	if wait, ok := retryWait(arrs, payload.WebPush, throttled); !ok {
		t.Errorf("webpush 429: no retry of the throttled push found")
	} else if wait < retryAfter-webPushRules.tolerance {
		t.Errorf("webpush 429 with Retry-After %s: retried after %s", retryAfter, wait)
	} else {
		t.Logf("webpush 429 with Retry-After %s: retried after %s", retryAfter, wait.Round(time.Millisecond))
	}

	// 410: asked once, one token_invalid event naming the subscription.
	if got := statuses(goneSub); !slices.Equal(got, []int{http.StatusGone}) {
		t.Errorf("gone subscription: the fake answered %v, want exactly one request ([410])", got)
	}
	evs, err := c.events(context.Background())
	if err != nil {
		t.Fatalf("XRANGE hush:events: %v", err)
	}
	var invalid []map[string]any
	for _, e := range evs {
		var ev map[string]any
		if s, ok := e["event"].(string); ok && json.Unmarshal([]byte(s), &ev) == nil && ev["type"] == "token_invalid" {
			invalid = append(invalid, ev)
		}
	}
	if len(invalid) != 1 {
		t.Fatalf("hush:events holds %d token_invalid events, want 1: %v", len(invalid), invalid)
	}
	ev := invalid[0]
	if ev["token"] != goneSub || ev["user_id"] != gone || ev["platform"] != string(payload.WebPush) {
		t.Errorf("token_invalid event %v, want token %s, user_id %s, platform webpush", ev, goneSub, gone)
	}
	// The endpoint's path is the subscription's secret: the reason names
	// the push service's origin only.
	var sub struct{ Endpoint string }
	_ = json.Unmarshal([]byte(goneSub), &sub)
	if reason, _ := ev["reason"].(string); strings.Contains(reason, sub.Endpoint) || !strings.Contains(reason, c.webpush.URL) {
		t.Errorf("token_invalid reason %q: want the push service's origin %s and not the endpoint", reason, c.webpush.URL)
	}
	t.Logf("webpush mixed: %d jobs, %d pushes over 3 processes and 3 platforms delivered in %s; token_invalid reason %q (whole test %s)",
		len(jobs)+1, len(want), took.Round(10*time.Millisecond), ev["reason"], time.Since(start).Round(10*time.Millisecond))
}

// mixedDevices are the turns in which TestE2EWebPushMixed's jobs address
// a user's three devices.
var mixedDevices = [][]payload.Platform{
	{payload.APNs, payload.FCM, payload.WebPush},
	{payload.WebPush},
	{payload.APNs},
	{payload.FCM, payload.WebPush},
}

// mixedJob is the k-th job for user, to the user's devices of
// mixedDevices[turn], and the pushes it must produce.
func (c *cluster) mixedJob(user string, k, turn int) (payload.Job, []push) {
	job, _ := notificationJob(user, k)
	job.Recipients[0].Devices = nil
	var pushes []push
	for _, p := range mixedDevices[turn] {
		tok := c.deviceToken(p, user)
		job.Recipients[0].Devices = append(job.Recipients[0].Devices, payload.Device{Platform: p, Token: tok})
		pushes = append(pushes, push{p, tok, fmt.Sprintf("%s#%02d", user, k)})
	}
	return job, pushes
}

// deviceToken is user's device token on platform p.
func (c *cluster) deviceToken(p payload.Platform, user string) string {
	switch p {
	case payload.APNs:
		return apnsToken(user)
	case payload.FCM:
		return fcmToken(user)
	}
	return c.subscription(user)
}
