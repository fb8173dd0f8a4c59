package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"encoding/json"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/webhook"
	"github.com/hushpush/hush/wire"
)

// flakyReceiver is a webhook receiver that fails: the first POST of one
// event in three answers 500, and the first POSTs of the first
// hangingPosts events hang past hush's POST timeout; every later POST of
// an event is answered 204. Every POST is verified (Standard Webhooks,
// the receiver's secret).
type flakyReceiver struct {
	*httptest.Server
	secrets []webhook.Secret

	mu      sync.Mutex
	posts   int
	seen    map[string]int          // POSTs per event id
	ok      map[string]wire.Event   // events answered 2xx, by id
	bodies  map[string]string       // their bodies, by id
	forged  []string                // POSTs that did not verify
	answers map[string]map[int]bool // statuses answered, per event id
	hanging int
}

const hangingPosts = 3

func newFlakyReceiver(t *testing.T, secrets []webhook.Secret) *flakyReceiver {
	r := &flakyReceiver{secrets: secrets, seen: map[string]int{}, ok: map[string]wire.Event{}, bodies: map[string]string{},
		answers: map[string]map[int]bool{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *flakyReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		return
	}
	id := req.Header.Get(webhook.HeaderID)
	r.mu.Lock()
	r.posts++
	if err := webhook.Verify(r.secrets, req.Header, body, time.Now()); err != nil {
		r.forged = append(r.forged, fmt.Sprintf("%s: %v", id, err))
		r.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.seen[id]++
	first := r.seen[id] == 1
	hang := first && r.hanging < hangingPosts
	if hang {
		r.hanging++
	}
	status := http.StatusNoContent
	if first && len(r.seen)%3 == 0 {
		status = http.StatusInternalServerError
	}
	r.mu.Unlock()
	if hang {
		// Past hush's POST timeout: hush gives up on this POST and
		// retries the event.
		select {
		case <-req.Context().Done():
		case <-time.After(30 * time.Second):
		}
		return
	}
	if status == http.StatusNoContent {
		var ev wire.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.ok[id], r.bodies[id] = ev, string(body)
		r.mu.Unlock()
	}
	r.mu.Lock()
	if r.answers[id] == nil {
		r.answers[id] = map[int]bool{}
	}
	r.answers[id][status] = true
	r.mu.Unlock()
	w.WriteHeader(status)
}

// TestE2EWebhookSurvivesKill: three processes post their events to a
// receiver that answers 500, hangs past the POST timeout and then
// recovers, and one process is killed (kill -9) in the middle of the
// burst. Every event hush:events holds reaches the receiver with a 2xx
// at least once, each as written and signed; none arrives that hush did
// not write; and the events of each job number what its status counts
// (docs/events.md, "Delivery": at least once, across restarts and kill
// -9; the killed process's unacknowledged events are claimed by the
// others after the claim time).
func TestE2EWebhookSurvivesKill(t *testing.T) {
	start := time.Now()
	secretText, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := webhook.ParseSecrets(secretText)
	if err != nil {
		t.Fatal(err)
	}
	recv := newFlakyReceiver(t, secrets)
	c := startCluster(t, clusterOptions{procs: 3, concurrency: e2eConcurrency, maxRetry: 3,
		env: []string{"HUSH_WEBHOOK_URL=" + recv.URL, "HUSH_WEBHOOK_SECRET=" + secretText}})
	c.apns.Script("", fake.OK().WithLatency(100*time.Millisecond))
	c.fcm.Script("", fake.OK().WithLatency(100*time.Millisecond))
	jobs, want := c.fanoutJobs(fanout{prefix: "wh", users: 40, jobs: 3})
	// A job whose devices are all dead (token_invalid per device), and one
	// the provider refuses for good (failed, with its reason).
	dead := payload.Job{ID: "e2e-wh-dead", Content: payload.Content{Alert: &payload.Alert{Title: "dead"}}}
	for u := range 5 {
		tok := apnsToken(fmt.Sprintf("wh-dead-%d", u))
		c.apns.Script(tok, fake.Unregistered())
		dead.Recipients = append(dead.Recipients, payload.Recipient{UserID: fmt.Sprintf("wh-dead-%d", u),
			Devices: []payload.Device{{Platform: payload.APNs, Token: tok}}})
	}
	bad := payload.Job{ID: "e2e-wh-bad", Content: payload.Content{Alert: &payload.Alert{Title: "bad"}}}
	for u := range 3 {
		tok := apnsToken(fmt.Sprintf("wh-bad-%d", u))
		c.apns.Script(tok, fake.APNsReason(400, "BadTopic"))
		bad.Recipients = append(bad.Recipients, payload.Recipient{UserID: fmt.Sprintf("wh-bad-%d", u),
			Devices: []payload.Device{{Platform: payload.APNs, Token: tok}}})
	}
	all := append(slices.Clone(jobs), dead, bad)
	c.submit(all, c.procs, "")

	c.waitFor("webhook POSTs under way", time.Minute, func() (bool, string) {
		recv.mu.Lock()
		defer recv.mu.Unlock()
		return recv.posts >= 20, fmt.Sprintf("%d POSTs", recv.posts)
	})
	victim := c.procs[1]
	victim.kill(t)
	killedAt := c.accepted()
	c.procs[1] = c.startProc(victim.name + "-2")
	c.waitReady(c.procs[1])
	c.waitDrained(want, 3*time.Minute)

	// What hush wrote: every event of the stream, by id.
	ctx := context.Background()
	entries, err := c.rdb.XRange(ctx, "hush:events", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]string{}
	for _, e := range entries {
		body, _ := e.Values["event"].(string)
		var ev wire.Event
		if err := json.Unmarshal([]byte(body), &ev); err != nil {
			t.Fatalf("stream entry %s: %v", e.ID, err)
		}
		written[ev.ID] = body
	}
	// The killed process's read events are claimed after the claim time
	// (a minute); the retries of the failed POSTs come 5 s after.
	c.waitFor("every written event received", 3*time.Minute, func() (bool, string) {
		recv.mu.Lock()
		defer recv.mu.Unlock()
		missing := 0
		for id := range written {
			if _, ok := recv.ok[id]; !ok {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d events not yet received with a 2xx (%d POSTs)", missing, len(written), recv.posts)
	})

	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.forged) > 0 {
		t.Errorf("%d POSTs did not verify: %s", len(recv.forged), head(recv.forged, 5))
	}
	for id, body := range recv.bodies {
		if w, ok := written[id]; !ok {
			t.Errorf("received event %s, which hush:events does not hold: %s", id, body)
		} else if w != body {
			t.Errorf("event %s received as %s, written as %s", id, body, w)
		}
	}
	failedFirst, retried := 0, 0
	for id, n := range recv.seen {
		if n > 1 {
			retried++
		}
		if recv.answers[id][http.StatusInternalServerError] {
			failedFirst++
		}
	}
	if failedFirst == 0 || recv.hanging < hangingPosts {
		t.Errorf("the receiver failed %d events' first POSTs and hung %d, want some of each: nothing was tested", failedFirst, recv.hanging)
	}

	// The events of each job number what its status counts.
	byJob := map[string]map[string]int{}
	for _, ev := range recv.ok {
		if byJob[ev.Job] == nil {
			byJob[ev.Job] = map[string]int{}
		}
		byJob[ev.Job][ev.Type]++
	}
	live := c.procs[0]
	for _, j := range all {
		st, err := c.jobStatus(live, j.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		counts, _ := st["counts"].(map[string]any)
		n := func(s string) int { v, _ := counts[s].(float64); return int(v) }
		wantEvents := map[string]int{"delivered": n("delivered"), "failed": n("failed"),
			"dropped": n("expired") + n("throttle_full") + n("collapsed") + n("cancelled")}
		if j.ID == dead.ID {
			wantEvents["token_invalid"] = len(dead.Recipients) // one per dead device
		}
		maps.DeleteFunc(wantEvents, func(_ string, v int) bool { return v == 0 })
		if got := byJob[j.ID]; !maps.Equal(got, wantEvents) {
			t.Errorf("job %s (counts %v): events received %v, want %v", j.ID, counts, got, wantEvents)
		}
	}
	var reasons []string
	for _, ev := range recv.ok {
		if ev.Type == "failed" && !strings.Contains(ev.Reason, "BadTopic") {
			reasons = append(reasons, ev.Reason)
		}
	}
	if len(reasons) > 0 {
		t.Errorf("failed events without the provider's reason: %s", head(reasons, 3))
	}
	t.Logf("webhook under a kill -9 (at %d provider requests): %d events written, all received with a 2xx; %d POSTs, %d events posted more than once, %d first POSTs answered 500, %d hung past the timeout (whole test %s)",
		killedAt, len(written), recv.posts, retried, failedFirst, recv.hanging, time.Since(start).Round(100*time.Millisecond))
}
