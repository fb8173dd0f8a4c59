package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
)

// e2eKey is the data key that carries a notification's identity through the
// providers: "<user>#<k>".
const e2eKey = "hush_e2e_n"

// push is one notification to one device.
type push struct {
	Platform payload.Platform
	Token    string
	N        string // the notification, data[e2eKey]
}

// user is the user the notification was for.
func (p push) user() string { u, _, _ := strings.Cut(p.N, "#"); return u }

// arrival is one request a fake provider accepted.
type arrival struct {
	push
	At     time.Time
	Status int
	// Answered is when the fake's answer reached a client still waiting
	// for it; zero when the request was cancelled first.
	Answered time.Time
}

// ok reports whether the fake accepted the push: APNs and FCM answer 200,
// a Web Push service 201.
func (a arrival) ok() bool { return a.Status >= 200 && a.Status < 300 }

// pushed reports whether the arrival is a push the sender was told about:
// a 2xx answered to a waiting client. A request cancelled before its answer
// is not one (the sender could not know, and sends it again).
func (a arrival) pushed() bool { return a.ok() && !a.Answered.IsZero() }

// burst is perUser distinct notifications for each of users users, one job
// each, every user with an APNs and an FCM device.
type burst struct {
	prefix  string
	users   int
	perUser int
}

func (b burst) user(u int) string { return fmt.Sprintf("%s-u%02d", b.prefix, u) }

// apnsToken is a user's APNs token: 64 hex characters.
func apnsToken(user string) string {
	h := sha256.Sum256([]byte(user))
	return hex.EncodeToString(h[:])
}

// fcmToken is a user's FCM registration token.
func fcmToken(user string) string { return "fcm:" + user + ":e2e_device-1" }

// notificationJob is the k-th job for user: one recipient, both devices.
func notificationJob(user string, k int) (payload.Job, []push) {
	n := fmt.Sprintf("%s#%02d", user, k)
	job := payload.Job{
		ID: fmt.Sprintf("e2e-%s-%02d", user, k),
		Recipients: []payload.Recipient{{UserID: user, Devices: []payload.Device{
			{Platform: payload.APNs, Token: apnsToken(user)},
			{Platform: payload.FCM, Token: fcmToken(user)},
		}}},
		Content: payload.Content{
			Alert: &payload.Alert{Title: "Notification " + n, Body: "end-to-end test"},
			Data:  map[string]string{e2eKey: n},
		},
	}
	return job, []push{{payload.APNs, apnsToken(user), n}, {payload.FCM, fcmToken(user), n}}
}

// jobs returns the burst's jobs, round k for every user before round k+1,
// and the pushes they must produce.
func (b burst) jobs() ([]payload.Job, []push) {
	var jobs []payload.Job
	var pushes []push
	for k := range b.perUser {
		for u := range b.users {
			j, ps := notificationJob(b.user(u), k)
			jobs = append(jobs, j)
			pushes = append(pushes, ps...)
		}
	}
	return jobs, pushes
}

// fanout is jobs fan-out jobs, each to all of users users (every user with
// an APNs and an FCM device).
type fanout struct {
	prefix string
	users  int
	jobs   int
}

// everyone stands for the recipient in a fan-out job's notification key
// ("*#<k>"): the job's data is the same for all its recipients, so
// arrivals puts the user the device belongs to in its place.
const everyone = "*"

// fanoutJobs returns f's jobs and the pushes they must produce, and lets c
// tell the devices' users apart.
func (c *cluster) fanoutJobs(f fanout) ([]payload.Job, []push) {
	if c.owners == nil {
		c.owners = make(map[string]string)
	}
	b := burst{prefix: f.prefix, users: f.users}
	var jobs []payload.Job
	var pushes []push
	for k := range f.jobs {
		job := payload.Job{
			ID: fmt.Sprintf("e2e-%s-fanout-%02d", f.prefix, k),
			Content: payload.Content{
				Alert: &payload.Alert{Title: fmt.Sprintf("Fan-out %d", k), Body: "end-to-end test"},
				Data:  map[string]string{e2eKey: fmt.Sprintf("%s#%02d", everyone, k)},
			},
		}
		for u := range f.users {
			user := b.user(u)
			j, ps := notificationJob(user, k)
			job.Recipients = append(job.Recipients, j.Recipients...)
			pushes = append(pushes, ps...)
			c.owners[apnsToken(user)], c.owners[fcmToken(user)] = user, user
		}
		jobs = append(jobs, job)
	}
	return jobs, pushes
}

// arrivals is everything the fakes accepted, in no particular order. A
// Web Push arrival's body is the plaintext the fake decrypted.
func (c *cluster) arrivals() []arrival {
	var out []arrival
	add := func(p payload.Platform, reqs []fake.Request) {
		for _, r := range reqs {
			n := findString(r.Body, e2eKey)
			if rest, ok := strings.CutPrefix(n, everyone+"#"); ok {
				n = c.owners[r.Token] + "#" + rest
			}
			out = append(out, arrival{push{p, r.Token, n}, r.At, r.Status, r.Answered})
		}
	}
	add(payload.APNs, c.apns.Requests())
	add(payload.FCM, c.fcm.Requests())
	add(payload.WebPush, c.webpush.Requests())
	return out
}

// findString returns the first string value under key anywhere in the JSON
// document (APNs carries data keys at the top level, FCM in message.data,
// Web Push in data).
func findString(doc []byte, key string) string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return ""
	}
	var walk func(any) string
	walk = func(v any) string {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v[key].(string); ok {
				return s
			}
			for _, x := range v {
				if s := walk(x); s != "" {
					return s
				}
			}
		case []any:
			for _, x := range v {
				if s := walk(x); s != "" {
					return s
				}
			}
		}
		return ""
	}
	return walk(v)
}

// delivered counts the pushes (200 answers a client waited for) per push.
func delivered(arrs []arrival) map[push]int {
	m := make(map[push]int)
	for _, a := range arrs {
		if a.pushed() {
			m[a.push]++
		}
	}
	return m
}

// rules are the limiter rules a delivery timeline must respect.
type rules struct {
	n         int
	window    time.Duration
	gap       time.Duration
	tolerance time.Duration
}

// timelineStats summarise the timelines that were checked.
type timelineStats struct {
	timelines   int
	maxInWindow int           // most notifications seen in any window (of the rule's length)
	minSpan     time.Duration // smallest span of n+1 consecutive notifications
	minGap      time.Duration // smallest gap between consecutive notifications
	violating   []string      // groups with a violation, in order
}

// checkTimelines groups the first successful arrival of each notification by
// group(arrival) (a user, or a device) and checks, per group: any n+1
// consecutive notifications span at least window-tolerance, and consecutive
// ones are at least gap-tolerance apart. Later arrivals of the same
// notification (allowed duplicates) are not part of the timeline.
func checkTimelines(arrs []arrival, group func(arrival) string, r rules) (violations []string, st timelineStats) {
	first := make(map[string]map[string]time.Time) // group -> N -> first arrival
	for _, a := range arrs {
		if !a.ok() {
			continue
		}
		g := group(a)
		if first[g] == nil {
			first[g] = make(map[string]time.Time)
		}
		if t, ok := first[g][a.N]; !ok || a.At.Before(t) {
			first[g][a.N] = a.At
		}
	}
	st.minGap, st.minSpan = time.Duration(1<<63-1), time.Duration(1<<63-1)
	for _, g := range slices.Sorted(maps.Keys(first)) {
		type ev struct {
			n  string
			at time.Time
		}
		var tl []ev
		for n, at := range first[g] {
			tl = append(tl, ev{n, at})
		}
		slices.SortFunc(tl, func(a, b ev) int { return a.at.Compare(b.at) })
		st.timelines++
		before := len(violations)
		for i := range tl {
			in := 0
			for j := i; j < len(tl) && tl[j].at.Sub(tl[i].at) < r.window; j++ {
				in++
			}
			st.maxInWindow = max(st.maxInWindow, in)
			if i+r.n < len(tl) {
				span := tl[i+r.n].at.Sub(tl[i].at)
				st.minSpan = min(st.minSpan, span)
				if span < r.window-r.tolerance {
					violations = append(violations, fmt.Sprintf("%s: %d notifications within %s (%s at %s .. %s at %s), want at most %d per %s",
						g, r.n+1, span, tl[i].n, tl[i].at.Format("15:04:05.000"), tl[i+r.n].n, tl[i+r.n].at.Format("15:04:05.000"), r.n, r.window))
				}
			}
			if i+1 < len(tl) {
				gap := tl[i+1].at.Sub(tl[i].at)
				st.minGap = min(st.minGap, gap)
				if gap < r.gap-r.tolerance {
					violations = append(violations, fmt.Sprintf("%s: %s and %s only %s apart, want at least %s (tolerance %s)",
						g, tl[i].n, tl[i+1].n, gap, r.gap, r.tolerance))
				}
			}
		}
		if len(violations) > before {
			st.violating = append(st.violating, g)
		}
	}
	return violations, st
}

// timeline describes every request the fakes got for one user, in arrival
// order, for failure messages.
func timeline(arrs []arrival, user string) string {
	var b strings.Builder
	var t0 time.Time
	for _, a := range sortedByTime(arrs) {
		if a.user() != user {
			continue
		}
		if t0.IsZero() {
			t0 = a.At
		}
		fmt.Fprintf(&b, "\n    +%6dms  %-4s %s  %d", a.At.Sub(t0).Milliseconds(), a.Platform, a.N, a.Status)
	}
	return b.String()
}

func byUser(a arrival) string   { return "user " + a.user() }
func byDevice(a arrival) string { return string(a.Platform) + " device of " + a.user() }

// TestCheckTimelines proves the checker the end-to-end tests rely on finds
// what it must find.
func TestCheckTimelines(t *testing.T) {
	r := rules{n: 2, window: time.Second, gap: 300 * time.Millisecond, tolerance: 100 * time.Millisecond}
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	at := func(ms ...int) []arrival {
		var out []arrival
		for i, m := range ms {
			out = append(out, arrival{push{payload.FCM, "t", fmt.Sprintf("u#%d", i)}, t0.Add(time.Duration(m) * time.Millisecond), http.StatusOK, t0.Add(time.Duration(m) * time.Millisecond)})
		}
		return out
	}
	tests := []struct {
		name      string
		arrs      []arrival
		wantViol  int
		wantMaxIn int
	}{
		{"spaced", at(0, 400, 1000, 1400, 2000), 0, 2},
		{"within tolerance", at(0, 210, 910), 0, 3},
		{"window exceeded", at(0, 400, 800), 1, 3},
		{"gap too small", at(0, 100), 1, 2},
		{"duplicate ignored", append(at(0, 1000), arrival{push{payload.FCM, "t", "u#0"}, t0.Add(1100 * time.Millisecond), http.StatusOK, t0.Add(1100 * time.Millisecond)}), 0, 1},
		{"failed answers ignored", append(at(0, 1000), arrival{push{payload.FCM, "t", "u#9"}, t0.Add(10 * time.Millisecond), http.StatusServiceUnavailable, t0.Add(10 * time.Millisecond)}), 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, st := checkTimelines(tt.arrs, byUser, r)
			if len(v) != tt.wantViol || st.maxInWindow != tt.wantMaxIn {
				t.Errorf("got %d violations %q, max in window %d; want %d violations, max %d", len(v), v, st.maxInWindow, tt.wantViol, tt.wantMaxIn)
			}
		})
	}
}

// timingErrorf reports a rule measured in real time at the fakes (a gap,
// a window) that did not hold. Under the race detector the fakes, in the
// test process, take a request up to hundreds of milliseconds after it
// left a hush process, past the 250 ms tolerance docs/delivery.md states
// for the network: there the violation is logged, not failed, and
// .ci/run checks the same tests without the race detector, where it
// fails.
func timingErrorf(t *testing.T, format string, args ...any) {
	t.Helper()
	if raceDetector {
		t.Logf("timing, not failed under -race (checked without it by .ci/run): "+format, args...)
		return
	}
	t.Errorf(format, args...)
}
