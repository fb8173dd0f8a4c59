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

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/worker"
)

// The end-to-end tests run real hush serve processes against a private
// redis-server, with the fake APNs, FCM and Web Push service in the test
// process, and judge hush by what the fakes received. Each logs how long it
// took.

var e2eRules = rules{n: e2eN, window: e2eWindow, gap: e2eMinGap, tolerance: e2eTolerance}

const e2eConcurrency = 16

// TestE2EGuarantees: a burst of 20 users x 15 notifications (each user with
// an APNs and an FCM device), submitted round-robin to three processes:
// every push arrives exactly once, and every user's timeline holds 5/2s and
// the 300 ms gap.
func TestE2EGuarantees(t *testing.T) {
	start := time.Now()
	c := startCluster(t, clusterOptions{procs: 3, concurrency: e2eConcurrency, maxRetry: 3})
	b := burst{prefix: "g", users: 20, perUser: 15}
	jobs, want := b.jobs()
	ready := time.Now()
	c.submit(jobs, c.procs, "")
	took := c.waitDrained(want, 2*time.Minute)
	arrs := c.arrivals()
	c.assertDelivered(arrs, want, 0)
	c.assertTimelines(arrs)
	c.assertNothingArchived()
	c.assertJobsDone(jobs)
	t.Logf("guarantees: %d jobs, %d pushes over 3 processes delivered in %s (from the first POST; cluster start %s, whole test %s)",
		len(jobs), len(want), took.Round(10*time.Millisecond), ready.Sub(start).Round(10*time.Millisecond), time.Since(start).Round(10*time.Millisecond))
}

// TestE2EKillNine: one of three processes is killed with SIGKILL mid-burst.
// The other two finish its work once Asynq's recoverer hands back the dead
// process's leases (60-125 s); nothing is lost, and every duplicate is
// within the contract's one exception: a push whose first copy the provider
// answered so close to the kill (killWindow) that the dead process cannot
// have recorded it. The fakes know when they answered, and a request the
// kill cut off before its answer is not a push.
func TestE2EKillNine(t *testing.T) {
	killNine(t, "k", func(c *cluster, jobs []payload.Job) { c.submit(jobs, c.procs, "") })
}

// TestE2EKillNineBatched is TestE2EKillNine with the jobs submitted in
// batches (POST /v1/notifications:batch): the victim dies holding batch
// tasks of many jobs, each part way through, and their re-runs elsewhere
// resume each job.
func TestE2EKillNineBatched(t *testing.T) {
	killNine(t, "kb", func(c *cluster, jobs []payload.Job) { c.submitBatches(jobs, c.procs, "", 25) })
}

func killNine(t *testing.T, prefix string, submit func(c *cluster, jobs []payload.Job)) {
	start := time.Now()
	c := startCluster(t, clusterOptions{procs: 3, concurrency: e2eConcurrency, maxRetry: 3})
	b := burst{prefix: prefix, users: 20, perUser: 15}
	jobs, want := b.jobs()
	first := time.Now()
	submit(c, jobs)
	atKill := c.waitPushes(len(want)/5, time.Minute)
	victim := c.procs[1]
	killing := time.Now()
	victim.kill(t)
	killed := time.Now()
	if atKill >= len(want) {
		t.Fatalf("the burst was over (%d of %d pushes) before the kill: nothing was tested", atKill, len(want))
	}
	t.Logf("killed %s (kill -9) %s after the burst started, at %d of %d pushes delivered",
		victim.name, killed.Sub(first).Round(10*time.Millisecond), atKill, len(want))
	c.assertRecoveredFromKill(victim, jobs, want, killing, killed, start)
}

// assertRecoveredFromKill waits for every push of jobs after victim was
// killed (between killing and killed) and checks what the kill -9 tests
// promise: nothing lost, a duplicate only within the kill's window, the
// rules held, nothing archived, every job done, the other processes alive.
func (c *cluster) assertRecoveredFromKill(victim *hushProc, jobs []payload.Job, want []push, killing, killed, start time.Time) {
	t := c.t
	t.Helper()
	c.waitDrained(want, 4*time.Minute)
	recovered := time.Since(killed)
	arrs := c.arrivals()
	dups := c.assertDelivered(arrs, want, len(want))
	c.assertDuplicatesAtKill(arrs, killing, killed)
	late := 0 // pushes that waited for the dead process's leases
	for _, a := range arrs {
		if a.ok() && a.At.Sub(killed) > 30*time.Second {
			late++
		}
	}
	t.Logf("%d pushes arrived more than 30 s after the kill (the dead process's work, recovered by Asynq)", late)
	c.assertTimelines(arrs)
	c.assertNothingArchived()
	c.assertJobsDone(jobs)
	for _, p := range c.procs {
		if p != victim && !p.alive() {
			t.Errorf("%s died too (%v)", p.name, p.waitErr)
		}
	}
	t.Logf("kill -9: all %d pushes delivered %s after the kill (whole test %s); duplicate pushes seen: %d",
		len(want), recovered.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond), dups)
}

// TestE2ERedisRestart: the (persistent) Redis is restarted mid-burst; the
// hush processes reconnect on their own and finish, and the guarantees hold.
func TestE2ERedisRestart(t *testing.T) {
	start := time.Now()
	c := startCluster(t, clusterOptions{procs: 3, concurrency: e2eConcurrency, maxRetry: 3})
	b := burst{prefix: "r", users: 20, perUser: 15}
	jobs, want := b.jobs()
	first := time.Now()
	c.submit(jobs, c.procs, "")
	atRestart := c.waitPushes(len(want)/5, time.Minute)
	restartStart := time.Now()
	c.redis.Stop()
	// Keep Redis down until a worker has noticed (its /readyz fails), so
	// the outage is one the processes really live through.
	c.waitFor("a worker to notice Redis is down", 30*time.Second, func() (bool, string) {
		r, err := c.do(c.procs[0], http.MethodGet, "/readyz", nil, "")
		if err != nil {
			return false, err.Error()
		}
		return r.Status == http.StatusServiceUnavailable, fmt.Sprintf("/readyz %d %s", r.Status, r.Body)
	})
	c.redis.Restart()
	restarted := time.Now()
	if atRestart >= len(want) {
		t.Fatalf("the burst was over (%d of %d pushes) before the restart: nothing was tested", atRestart, len(want))
	}
	t.Logf("restarted Redis %s after the burst started, at %d of %d pushes delivered; it was down for %s",
		restartStart.Sub(first).Round(10*time.Millisecond), atRestart, len(want), restarted.Sub(restartStart).Round(time.Millisecond))
	c.waitDrained(want, 4*time.Minute)
	recovered := time.Since(restarted)
	arrs := c.arrivals()
	c.assertDelivered(arrs, want, 0)
	c.assertTimelines(arrs)
	c.assertNothingArchived()
	c.assertJobsDone(jobs)
	for _, p := range c.procs {
		if !p.alive() {
			t.Errorf("%s exited (%v): the workers must ride out a Redis restart", p.name, p.waitErr)
			continue
		}
		c.waitReady(p)
	}
	t.Logf("redis restart: all %d pushes delivered %s after Redis was back (whole test %s)",
		len(want), recovered.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}

// TestE2EProviderTrouble: providers answering 503 and 429 make deliveries
// wait and then complete (each device exactly once); an APNs 410 is asked
// once, never retried, and produces exactly one token_invalid event.
func TestE2EProviderTrouble(t *testing.T) {
	start := time.Now()
	c := startCluster(t, clusterOptions{procs: 2, concurrency: e2eConcurrency, maxRetry: 5})
	b := burst{prefix: "p", users: 5, perUser: 3}
	u503, u429apns, u429fcm, u503fcm := b.user(0), b.user(1), b.user(2), b.user(3)
	c.apns.Script(apnsToken(u503), fake.Status(http.StatusServiceUnavailable), fake.Status(http.StatusServiceUnavailable), fake.OK())
	c.apns.Script(apnsToken(u429apns), fake.TooMany(0), fake.TooMany(0), fake.OK())
	c.fcm.Script(fcmToken(u429fcm), fake.TooMany(2*time.Second), fake.OK())
	c.fcm.Script(fcmToken(u503fcm), fake.Status(http.StatusServiceUnavailable), fake.OK())
	jobs, want := b.jobs()

	// A user whose APNs token is dead: one notification.
	gone := "p-gone"
	c.apns.Script(apnsToken(gone), fake.Unregistered())
	goneJob, gonePushes := notificationJob(gone, 0)
	jobs = append(jobs, goneJob)
	want = append(want, gonePushes[1]) // the FCM device still gets it

	c.submit(jobs, c.procs, "")
	took := c.waitDrained(want, 2*time.Minute)
	arrs := c.arrivals()
	c.assertDelivered(arrs, want, 0)
	c.assertNothingArchived()

	statuses := func(p payload.Platform, token string) []int {
		var out []int
		for _, a := range sortedByTime(arrs) {
			if a.Platform == p && a.Token == token {
				out = append(out, a.Status)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		platform payload.Platform
		token    string
		failures []int
	}{
		{"apns 503 twice", payload.APNs, apnsToken(u503), []int{503, 503}},
		{"apns 429 twice", payload.APNs, apnsToken(u429apns), []int{429, 429}},
		{"fcm 429 with Retry-After", payload.FCM, fcmToken(u429fcm), []int{429}},
		{"fcm 503", payload.FCM, fcmToken(u503fcm), []int{503}},
	} {
		got := statuses(tc.platform, tc.token)
		if len(got) < len(tc.failures) || !slices.Equal(got[:len(tc.failures)], tc.failures) {
			t.Errorf("%s: the fake answered %v, want it to start with %v (the script did not play)", tc.name, got, tc.failures)
		}
	}

	// Retry-After is honoured: the push answered 429 "Retry-After: 2" is not
	// asked again sooner.
	if wait, ok := retryWait(arrs, payload.FCM, fcmToken(u429fcm)); !ok {
		t.Errorf("fcm 429: no retry of the throttled push found")
	} else if wait < 2*time.Second-e2eTolerance {
		t.Errorf("fcm 429 with Retry-After 2s: retried after %s", wait)
	} else {
		t.Logf("fcm 429 with Retry-After 2s: retried after %s", wait.Round(time.Millisecond))
	}

	// The dead token: asked once, one event.
	if got := statuses(payload.APNs, apnsToken(gone)); !slices.Equal(got, []int{http.StatusGone}) {
		t.Errorf("dead APNs token: the fake answered %v, want exactly one request ([410])", got)
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
	if ev := invalid[0]; ev["token"] != apnsToken(gone) || ev["user_id"] != gone || ev["platform"] != "apns" {
		t.Errorf("token_invalid event %v, want token %s, user_id %s, platform apns", ev, apnsToken(gone), gone)
	}
	t.Logf("provider trouble: %d pushes delivered through 503s and 429s in %s; token_invalid event: %v (whole test %s)",
		len(want), took.Round(10*time.Millisecond), invalid[0], time.Since(start).Round(10*time.Millisecond))
}

// TestE2EBadInput: the API refuses bad jobs with field paths, 401 and 413; a
// garbage task put on the queue directly is archived with a readable reason
// and the worker keeps delivering.
func TestE2EBadInput(t *testing.T) {
	start := time.Now()
	const token = "e2e-secret"
	c := startCluster(t, clusterOptions{procs: 1, concurrency: e2eConcurrency, maxRetry: 3,
		env: []string{"HUSH_API_TOKEN=" + token, "HUSH_MAX_BODY_BYTES=65536"}})
	p := c.procs[0]
	good, wantGood := notificationJob("b-u00", 0)
	goodBody, _ := json.Marshal(good)
	withDevice := func(platform, tok string) string {
		return `{"recipients":[{"user_id":"u","devices":[{"platform":"` + platform + `","token":"` + tok + `"}]}],"alert":{"title":"t"}}`
	}
	tests := []struct {
		name       string
		body       string
		token      string
		wantStatus int
		wantField  string // a field the 400 answer's problems must name; "-": it has none
	}{
		{"malformed JSON", `{"recipients": [`, token, http.StatusBadRequest, "-"},
		{"oversized body", `{"data":{"x":"` + strings.Repeat("x", 70_000) + `"}}`, token, http.StatusRequestEntityTooLarge, ""},
		{"unknown platform", withDevice("blackberry", "abc"), token, http.StatusBadRequest, "recipients[0].devices[0].platform"},
		{"bad apns token", withDevice("apns", "xyz"), token, http.StatusBadRequest, "recipients[0].devices[0].token"},
		{"bad fcm token", withDevice("fcm", "has space"), token, http.StatusBadRequest, "recipients[0].devices[0].token"},
		{"missing recipients", `{"alert":{"title":"t"}}`, token, http.StatusBadRequest, "recipients"},
		{"unknown field", `{"recipients":[],"colour":"red"}`, token, http.StatusBadRequest, "colour"},
		{"no bearer token", string(goodBody), "", http.StatusUnauthorized, ""},
		{"wrong bearer token", string(goodBody), "guess", http.StatusUnauthorized, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := c.do(p, http.MethodPost, "/v1/notifications", []byte(tt.body), tt.token)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %s", r.Status, tt.wantStatus, r.Body)
			}
			// Every error answer is the one envelope; a 400 for a job with
			// field problems lists them, one for malformed JSON has none.
			var doc struct {
				Error struct {
					Message  string `json:"message"`
					Problems []struct {
						Field   string `json:"field"`
						Message string `json:"message"`
					} `json:"problems"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.Body, &doc); err != nil || doc.Error.Message == "" {
				t.Fatalf("%d body %s: want {\"error\":{\"message\",...}} (%v)", r.Status, r.Body, err)
			}
			if tt.wantField == "-" && len(doc.Error.Problems) != 0 {
				t.Errorf("400 for malformed JSON lists field problems: %s", r.Body)
			}
			if tt.wantField == "" || tt.wantField == "-" {
				return
			}
			var fields []string
			for _, e := range doc.Error.Problems {
				fields = append(fields, e.Field)
			}
			if !slices.Contains(fields, tt.wantField) {
				t.Errorf("400 names fields %q, want %q among them; body %s", fields, tt.wantField, r.Body)
			}
		})
	}

	// Garbage straight onto the queue, behind the API's back.
	client := asynq.NewClientFromRedisClient(c.rdb)
	var garbage []*asynq.TaskInfo
	for _, typ := range []string{worker.TypeDelivery, worker.TypeJob} {
		info, err := client.Enqueue(asynq.NewTask(typ, []byte("{this is not a job")), asynq.Queue("normal"))
		if err != nil {
			t.Fatalf("enqueue garbage %s: %v", typ, err)
		}
		garbage = append(garbage, info)
	}
	c.waitFor("garbage archived", time.Minute, func() (bool, string) {
		archived, err := c.insp.ListArchivedTasks("normal")
		if err != nil {
			return false, err.Error()
		}
		var ids []string
		for _, a := range archived {
			ids = append(ids, a.ID)
		}
		for _, g := range garbage {
			if !slices.Contains(ids, g.ID) {
				return false, fmt.Sprintf("archived: %v; waiting for %s", ids, g.ID)
			}
		}
		return true, ""
	})
	for _, g := range garbage {
		ti, err := c.insp.GetTaskInfo("normal", g.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ti.LastErr == "" {
			t.Errorf("archived garbage %s has no reason (LastErr empty)", ti.Type)
		}
		t.Logf("garbage %s archived with reason: %s", ti.Type, ti.LastErr)
	}

	// The worker is still there and still delivers.
	c.submit([]payload.Job{good}, c.procs, token)
	c.waitDrained(wantGood, time.Minute)
	c.assertDelivered(c.arrivals(), wantGood, 0)
	if !p.alive() {
		t.Errorf("%s exited: %v", p.name, p.waitErr)
	}
	t.Logf("bad input: %d refused requests, 2 garbage tasks archived, a later job delivered (whole test %s)",
		len(tests), time.Since(start).Round(10*time.Millisecond))
}
