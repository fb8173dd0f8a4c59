package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
)

// The apps end-to-end tests: hush serve processes whose apps come from an
// apps file (docs/configuration.md#apps), judged by what the fakes
// received, the API's answers and /metrics.

const (
	reloadedMsg = "apps reloaded"
	refusedMsg  = "apps reload refused; the apps in use go on"
)

// TestE2EAppsMixed: three processes, three apps (shop and courier on APNs
// with topics and keys of their own, rider on FCM), each with rules of its
// own, the same user ids in every app. A mixed burst posted round-robin:
// every push arrives exactly once, at its app's device, with its app's
// topic, key and team (or project); every app's users keep that app's
// rules; and the same user id's pushes of the three apps together hold
// more than one budget could.
func TestE2EAppsMixed(t *testing.T) {
	start := time.Now()
	c, fx := startAppsCluster(t, 3, e2eConcurrency, mixedApps)
	ready := time.Now()
	const users, perUser = 12, 6
	jobs, want := fx.mixedBurst(users, perUser)
	c.submit(jobs, c.procs, "")
	took := c.waitDrained(want, 2*time.Minute)
	arrs := appArrivals(c)
	c.assertDelivered(plain(arrs), want, 0)
	seen := fx.assertCredentials(arrs, nil)
	fx.assertAppTimelines(arrs)
	fx.assertSeparateBudgets(arrs, users)
	c.assertNothingArchived()
	c.assertJobsDone(jobs)
	if _, rejected := fx.apns.Counts(); rejected > 0 {
		t.Errorf("the fake APNs refused %d requests for their credentials", rejected)
	}
	if _, rejected := fx.fcm.Counts(); rejected > 0 {
		t.Errorf("the fake FCM refused %d requests for their credentials", rejected)
	}
	t.Logf("apps: %d jobs, %d pushes over 3 processes and 3 apps delivered in %s; requests per app and credential: %v (cluster start %s, whole test %s)",
		len(jobs), len(want), took.Round(10*time.Millisecond), seen, ready.Sub(start).Round(10*time.Millisecond), time.Since(start).Round(10*time.Millisecond))
}

// assertSeparateBudgets checks that each user id's budget is its app's: the
// user's pushes of every app together hold, in some window of 3 s, more
// than the rules of any one app would let one budget hold (its limits and
// gap less the tolerance, pushes placed as early as they allow).
func (fx *appsFixture) assertSeparateBudgets(arrs []appArrival, users int) {
	t := fx.t
	t.Helper()
	const w = 3 * time.Second
	shared := 0
	for _, a := range fx.apps {
		shared = max(shared, mostAllowed(a.rules, w))
	}
	first := map[string]map[string]time.Time{} // user id -> notification -> first arrival
	for _, a := range arrs {
		if !a.pushed() {
			continue
		}
		u := strings.TrimPrefix(a.user(), a.app+":")
		if first[u] == nil {
			first[u] = map[string]time.Time{}
		}
		if at, ok := first[u][a.N]; !ok || a.At.Before(at) {
			first[u][a.N] = a.At
		}
	}
	var weak, all []string
	for u := range users {
		user := fmt.Sprintf("u%02d", u)
		ats := slices.SortedFunc(maps.Values(first[user]), time.Time.Compare)
		most, _ := mostInWindow(ats, w)
		all = append(all, fmt.Sprintf("%s %d", user, most))
		if most <= shared {
			weak = append(weak, fmt.Sprintf("%s: %d pushes over the apps in %s", user, most, w))
		}
	}
	if len(weak) > 0 {
		t.Errorf("the same user id in several apps: %d users got no more pushes in any %s over all apps than one budget allows (%d): budgets shared? %s",
			len(weak), w, shared, head(weak, 10))
	}
	t.Logf("the same user id in 3 apps, most pushes over all apps in any %s (one budget would allow at most %d): %s", w, shared, strings.Join(all, ", "))
}

// mostAllowed is the most pushes the rules let one budget hold in a
// window of length w, with the tolerance taken off both rules: each push
// as early as the gap and the limit allow.
func mostAllowed(r rules, w time.Duration) int {
	gap, window := max(r.gap-r.tolerance, 0), r.window-r.tolerance
	var at []time.Duration
	for {
		var next time.Duration
		if k := len(at); k > 0 {
			next = at[k-1] + gap
			if k >= r.n {
				next = max(next, at[k-r.n]+window)
			}
		}
		if next >= w {
			return len(at)
		}
		at = append(at, next)
	}
}

// TestE2EAppsRotation: three processes, the three apps, a burst. Mid-burst
// courier's .p8 is overwritten with garbage and the processes get SIGHUP:
// each refuses the reload (log, hush_apps_reloads_total{result="refused"})
// and courier's pushes go on with the key in use. Then courier's key is
// rotated in the worst order: the fake APNs drops the old key first and
// refuses courier's pushes for it; a second later the new key is written
// over the same path and its id into the apps file, with no SIGHUP, so
// each process's poll must find it. Every process logs "apps reloaded";
// every push arrives exactly once (a 200 answered to a waiting client; a
// 403 refused for the key is not a push, and its delivery retries); no
// push was accepted with the new key before it was written, nor with the
// old one after it was dropped; the other apps' keys never change.
func TestE2EAppsRotation(t *testing.T) {
	start := time.Now()
	c, fx := startAppsCluster(t, 3, e2eConcurrency, mixedApps)
	courier := fx.app("courier")
	oldKey := fx.keys[courier.name]
	const users, perUser = 12, 10 // courier: 2/3s with a 1 s gap, about 13 s per user
	jobs, want := fx.mixedBurst(users, perUser)
	courierWant := 0
	for _, w := range want {
		if appOfNote(w.N) == courier.name {
			courierWant++
		}
	}
	// courierPushed counts courier's pushes answered after since, with key
	// kid ("" any).
	courierPushed := func(since time.Time, kid string) int {
		n := 0
		for _, a := range appArrivals(c) {
			if a.app == courier.name && a.pushed() && a.At.After(since) && (kid == "" || a.kid == kid) {
				n++
			}
		}
		return n
	}
	burstAt := time.Now()
	c.submit(jobs, c.procs, "")

	// A corrupt key: refused everywhere, the key in use goes on.
	c.waitFor("a fifth of courier's pushes", time.Minute, func() (bool, string) {
		n := courierPushed(time.Time{}, "")
		return n >= courierWant/5, fmt.Sprintf("%d of %d courier pushes", n, courierWant)
	})
	refusedBefore := c.logCounts(refusedMsg)
	corruptAt := time.Now()
	fx.writeFile(fx.keyFile(courier.name), []byte("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n\x00\xff garbage"))
	c.sighup()
	c.waitFor("every process to count the refused reload on /metrics", 30*time.Second, func() (bool, string) {
		var missing []string
		for _, p := range c.procs {
			if n, err := c.reloads(p, "refused"); err != nil || n < 1 {
				missing = append(missing, fmt.Sprintf("%s: %d (%v)", p.name, n, err))
			}
		}
		return len(missing) == 0, "hush_apps_reloads_total{result=\"refused\"}: " + strings.Join(missing, "; ")
	})
	refusals := c.waitLogged(refusedMsg, refusedBefore, 30*time.Second)
	refusedAt := time.Now()
	atRefusal := courierPushed(time.Time{}, "")
	c.waitFor("courier's pushes going on with the old key after the refusal", time.Minute, func() (bool, string) {
		n := courierPushed(refusedAt, oldKey.id)
		return n >= 10, fmt.Sprintf("%d courier pushes with key %s since the refusal", n, oldKey.id)
	})
	for _, p := range c.procs {
		for _, l := range refusals[p.name] {
			if !strings.Contains(l, "apps["+courier.name+"].apns.key_file") {
				t.Errorf("%s refused the corrupt key without naming apps[%s].apns.key_file: %s", p.name, courier.name, l)
			}
		}
		if ok, _ := c.reloads(p, "ok"); ok != 0 {
			t.Errorf("%s counts %d ok reloads after the corrupt key, want 0", p.name, ok)
		}
	}

	// The rotation, in the worst order: the provider drops the old key
	// before the new one is deployed (pushes are refused for their key
	// meanwhile), then the new key is written over the old path and its id
	// into the apps file, with no SIGHUP: each process's poll must find it.
	newKey := newAPNsKey(t)
	newKey.team = oldKey.team // a key rotates; the team stays
	fx.apns.TrustKey(newKey.id, newKey.pub)
	_, rejectedAtForget := fx.apns.Counts()
	fx.apns.ForgetKey(oldKey.id)
	forgotAt := time.Now()
	atRotation := courierPushed(time.Time{}, "")
	c.waitFor("the fake APNs to refuse courier's old key", 30*time.Second, func() (bool, string) {
		_, rejected := fx.apns.Counts()
		return rejected > rejectedAtForget, fmt.Sprintf("%d requests refused for their key", rejected-rejectedAtForget)
	})
	reloadedBefore := c.logCounts(reloadedMsg)
	rotateAt := time.Now()
	fx.writeFile(fx.keyFile(courier.name), newKey.pem)
	fx.keys[courier.name] = newKey
	fx.writeApps(fx.doc())
	reloads := c.waitLogged(reloadedMsg, reloadedBefore, time.Minute)
	switched := time.Since(rotateAt)
	_, rejectedAtSwitch := fx.apns.Counts()
	if atRotation >= courierWant {
		t.Fatalf("courier's burst was over (%d of %d pushes) before the rotation: nothing was tested", atRotation, courierWant)
	}
	for _, p := range c.procs {
		for _, l := range reloads[p.name] {
			if !strings.Contains(l, courier.name+": apns") {
				t.Errorf("%s: %q does not say courier's apns changed: %s", p.name, reloadedMsg, l)
			}
		}
	}

	c.waitSettled(want, 2*time.Minute)
	arrs := appArrivals(c)
	c.assertDelivered(plain(arrs), want, 0)
	seen := fx.assertCredentials(arrs, func(a appArrival) bool {
		if a.app != courier.name {
			return a.kid == fx.keys[a.app].id
		}
		return a.kid == oldKey.id && a.At.Before(forgotAt) || a.kid == newKey.id && !a.At.Before(rotateAt)
	})
	var oldAfter, newAfter int
	for _, a := range arrs {
		if a.app == courier.name && a.pushed() && !a.At.Before(forgotAt) {
			if a.kid == newKey.id {
				newAfter++
			} else {
				oldAfter++
			}
		}
	}
	if newAfter == 0 {
		t.Errorf("no courier push with the new key %s after the rotation", newKey.id)
	}
	fx.assertAppTimelines(arrs)
	_, rejected := fx.apns.Counts()
	c.assertNothingArchived()
	c.assertJobsDone(jobs)
	for _, p := range c.procs {
		if !p.alive() {
			t.Errorf("%s exited: %v", p.name, p.waitErr)
		}
	}
	t.Logf("corrupt key written %s into the burst (at %d of %d courier pushes), refused by every process within %s; %d courier pushes with the old key %s followed",
		corruptAt.Sub(burstAt).Round(time.Millisecond), atRefusal, courierWant, refusedAt.Sub(corruptAt).Round(time.Millisecond),
		courierPushed(refusedAt, oldKey.id), oldKey.id)
	t.Logf("rotation %s into the burst (at %d of %d courier pushes): old key %s dropped by the fake, new key %s written %s later; every process's poll reloaded within %s; the fake refused %d requests for their key by then, %d in all; %d courier pushes with the new key since; requests per app and key: %v; whole test %s",
		forgotAt.Sub(burstAt).Round(time.Millisecond), atRotation, courierWant, oldKey.id, newKey.id, rotateAt.Sub(forgotAt).Round(time.Millisecond),
		switched.Round(time.Millisecond), rejectedAtSwitch-rejectedAtForget, rejected-rejectedAtForget, newAfter, seen, time.Since(start).Round(10*time.Millisecond))
}

// TestE2EAppsGlobalRate: one app paced at 500 APNs sends per second across
// three processes; three fan-out jobs of 1000 recipients (one device each,
// rules too loose to matter), one posted to each process. The fake sees at
// most the rate plus the documented tolerance in any one second, and every
// push exactly once.
func TestE2EAppsGlobalRate(t *testing.T) {
	start := time.Now()
	const rate, perJob, nJobs = 500, 1000, 3
	bulk := e2eApp{name: "bulk", platform: payload.APNs, topic: "com.example.bulk", maxRate: fmt.Sprintf("%d/s", rate),
		rules: rules{n: 100, window: time.Second, tolerance: e2eTolerance}}
	c, fx := startAppsCluster(t, 3, 2*e2eConcurrency, []e2eApp{bulk})
	jobs, want := fx.fanout(c, bulk, nJobs, perJob)
	first := time.Now()
	c.submit(jobs, c.procs, "")
	took := c.waitDrained(want, 2*time.Minute)
	arrs := appArrivals(c)
	c.assertDelivered(plain(arrs), want, 0)
	fx.assertCredentials(arrs, nil)

	var ats []time.Time
	for _, a := range arrs {
		ats = append(ats, a.At)
	}
	slices.SortFunc(ats, func(a, b time.Time) int { return a.Compare(b) })
	most, at := mostInWindow(ats, time.Second)
	limit := rateTolerance(rate)
	if most > limit {
		t.Errorf("%d requests reached the fake APNs within one second from %s; max_rate %d/s allows at most %d (%d + 1 + ceil(2 x %d x 0.025))",
			most, at.UTC().Format("15:04:05.000"), rate, limit, rate, rate)
	}
	span := ats[len(ats)-1].Sub(ats[0])
	overall := float64(len(ats)-1) / span.Seconds()
	// Per whole second from the first request, for the log.
	var perSecond []int
	for _, a := range ats {
		s := int(a.Sub(ats[0]) / time.Second)
		for len(perSecond) <= s {
			perSecond = append(perSecond, 0)
		}
		perSecond[s]++
	}
	c.assertNothingArchived()
	c.assertJobsDone(jobs)
	t.Logf("global rate: %d pushes (%d jobs x %d recipients over 3 processes) at max_rate %d/s: most in any one second %d (limit %d), overall %.1f/s over %s, per second from the first: %v; first request %s after the first POST, drained in %s (whole test %s)",
		len(ats), nJobs, perJob, rate, most, limit, overall, span.Round(time.Millisecond), perSecond,
		ats[0].Sub(first).Round(time.Millisecond), took.Round(10*time.Millisecond), time.Since(start).Round(10*time.Millisecond))
}

// fanout is jobs fan-out jobs of app, each to users recipients of its own
// with one device, and the pushes they must make.
func (fx *appsFixture) fanout(c *cluster, app e2eApp, jobs, users int) ([]payload.Job, []push) {
	var out []payload.Job
	var pushes []push
	for k := range jobs {
		job := payload.Job{
			ID: fmt.Sprintf("e2e-%s-fanout-%02d", app.name, k),
			Content: payload.Content{
				App:   app.name,
				Alert: &payload.Alert{Title: fmt.Sprintf("Fan-out %d", k), Body: "end-to-end apps test"},
				Data:  map[string]string{e2eKey: fmt.Sprintf("%s#%02d", everyone, k)},
			},
		}
		for i := range users {
			user := fmt.Sprintf("f%d-%04d", k, i)
			tok := appToken(app, user)
			job.Recipients = append(job.Recipients, payload.Recipient{UserID: user, Devices: []payload.Device{{Platform: app.platform, Token: tok}}})
			c.owners[tok] = appUser(app.name, user)
			pushes = append(pushes, push{app.platform, tok, fmt.Sprintf("%s#%02d", appUser(app.name, user), k)})
		}
		out = append(out, job)
	}
	return out, pushes
}

// TestE2EAppsBadInput: with several apps configured, a job naming an
// unknown app, one naming none, and one whose devices use a platform its
// app has no credentials for are refused with 400 naming the field app
// and the reason; an apps file with an unknown key, a missing credential
// file or a topic without credentials stops hush serve with exit status 1
// and a message naming the file, the app and the field.
func TestE2EAppsBadInput(t *testing.T) {
	start := time.Now()
	c, fx := startAppsCluster(t, 1, e2eConcurrency, mixedApps)
	p := c.procs[0]
	shop, rider := fx.app("shop"), fx.app("rider")
	job := func(app e2eApp, edit func(*payload.Job)) []byte {
		j, _ := fx.appJob(app, "bad-u00", 0)
		j.ID = ""
		edit(&j)
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const configured = "courier, rider, shop"
	tests := []struct {
		name   string
		body   []byte
		reason []string // substrings of the message of the problem on app
	}{
		{"unknown app", job(shop, func(j *payload.Job) { j.App = "nosuch" }),
			[]string{`unknown app "nosuch"`, configured}},
		{"no app", job(shop, func(j *payload.Job) { j.App = "" }),
			[]string{"required", configured}},
		{"fcm device of an apns app", job(shop, func(j *payload.Job) {
			j.Recipients[0].Devices = []payload.Device{{Platform: payload.FCM, Token: fcmToken("bad-u00")}}
		}), []string{`app "shop" has no fcm credentials`, "recipients[0].devices[0]"}},
		{"apns device of an fcm app", job(rider, func(j *payload.Job) {
			j.Recipients = append(j.Recipients, payload.Recipient{UserID: "bad-u01", Devices: []payload.Device{
				{Platform: payload.FCM, Token: fcmToken("bad-u01")}, {Platform: payload.APNs, Token: apnsToken("bad-u01")}}})
		}), []string{`app "rider" has no apns credentials`, "recipients[1].devices[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Logf("400: app: %s", c.assertRefused(t, p, tt.body, "app", tt.reason))
		})
	}
	// A good job of each app still goes through.
	var good []payload.Job
	var wantGood []push
	for _, a := range fx.apps {
		j, ps := fx.appJob(a, "bad-ok", 0)
		good = append(good, j)
		wantGood = append(wantGood, ps)
	}
	c.submit(good, c.procs, "")
	c.waitDrained(wantGood, time.Minute)
	c.assertDelivered(c.arrivals(), wantGood, 0)

	// Bad files: the good one with one thing broken.
	appsOf := func(doc map[string]any) []map[string]any {
		var out []map[string]any
		for _, a := range doc["apps"].([]any) {
			out = append(out, a.(map[string]any))
		}
		return out
	}
	byName := func(doc map[string]any, name string) map[string]any {
		for _, a := range appsOf(doc) {
			if a["name"] == name {
				return a
			}
		}
		t.Fatalf("no app %s in the file", name)
		return nil
	}
	starts := []struct {
		name   string
		edit   func(doc map[string]any)
		reason []string // substrings of the output besides HUSH_APPS_FILE and the file
	}{
		{"unknown key", func(doc map[string]any) {
			apns := byName(doc, "shop")["apns"].(map[string]any)
			apns["kye_id"] = apns["key_id"]
			delete(apns, "key_id")
		}, []string{"apps[shop].apns.kye_id", "unknown field", `"key_id"`}},
		{"missing credential file", func(doc map[string]any) {
			byName(doc, "courier")["apns"].(map[string]any)["key_file"] = "keys/AuthKey_MISSING.p8"
		}, []string{"apps[courier].apns.key_file", "AuthKey_MISSING.p8", "no such file or directory"}},
		{"missing service account", func(doc map[string]any) {
			byName(doc, "rider")["fcm"].(map[string]any)["credentials_file"] = "rider-firebase.json"
		}, []string{"apps[rider].fcm.credentials_file", "rider-firebase.json", "no such file or directory"}},
		{"topic without credentials", func(doc map[string]any) {
			doc["apps"] = append(doc["apps"].([]any), map[string]any{"name": "tracker", "apns": map[string]any{"topic": "com.example.tracker"}})
		}, []string{"apps[tracker].apns.topic", "a topic without credentials"}},
	}
	for i, tt := range starts {
		t.Run("start/"+tt.name, func(t *testing.T) {
			doc := fx.doc()
			tt.edit(doc)
			b, err := json.MarshalIndent(doc, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			file := fmt.Sprintf("%s/bad-%d.json", fx.dir, i)
			fx.writeFile(file, b)
			code, out := serveOnce(t, append(slices.Clone(c.env), "HUSH_APPS_FILE="+file))
			if code != 1 {
				t.Fatalf("%s: hush serve exit status %d, want 1 (-1: still running after 15 s). Output:\n%s", tt.name, code, out)
			}
			for _, w := range append([]string{"HUSH_APPS_FILE", file}, tt.reason...) {
				if !strings.Contains(out, w) {
					t.Errorf("%s: exit 1, output does not say %q:\n%s", tt.name, w, out)
				}
			}
			t.Logf("%s: exit %d: %s", tt.name, code, strings.TrimSpace(out))
		})
	}
	if !p.alive() {
		t.Errorf("%s exited: %v", p.name, p.waitErr)
	}
	t.Logf("apps bad input: %d refused jobs, %d refused starts (whole test %s)", len(tests), len(starts), time.Since(start).Round(10*time.Millisecond))
}

// waitSettled waits until every wanted push was delivered and no task is
// left in any queue, or until the queues have been empty for 3 s with
// pushes missing; unlike waitDrained it does not end the test then, so
// that the caller's checks say what was lost and why.
func (c *cluster) waitSettled(want []push, timeout time.Duration) {
	c.t.Helper()
	var idleSince time.Time
	c.waitFor("deliveries to settle", timeout, func() (bool, string) {
		open, archived, err := c.queueLoad()
		if err != nil || open > 0 {
			idleSince = time.Time{}
			return false, fmt.Sprintf("%d tasks open, %d archived (queue error: %v)", open, archived, err)
		}
		got := delivered(c.arrivals())
		missing := 0
		for _, w := range want {
			if got[w] == 0 {
				missing++
			}
		}
		switch {
		case missing == 0:
			return true, ""
		case idleSince.IsZero():
			idleSince = time.Now()
		case time.Since(idleSince) > 3*time.Second:
			c.t.Logf("the queues are empty with %d of %d pushes missing; %d tasks archived: %s", missing, len(want), archived, head(c.archivedErrors(), 5))
			return true, ""
		}
		return false, fmt.Sprintf("%d of %d pushes missing, queues empty", missing, len(want))
	})
}
