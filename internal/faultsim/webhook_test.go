package faultsim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/webhook"
	"github.com/hushpush/hush/worker"
)

// The webhook's part of the run: every node posts the events to one
// receiver, which refuses a share of the first POSTs of each event (500,
// or 503 with a Retry-After), so that retries, claims after kills and the
// signatures are all exercised.
const (
	// hookSecret signs the nodes' POSTs.
	hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	// hookClaimAfter is worker.Options.WebhookClaimAfter in the run: a
	// killed node's events are claimed by another this much later.
	hookClaimAfter = 2 * time.Second
	// hookSettle bounds the wait after the drain for the webhook's
	// retries and claims to finish.
	hookSettle = 30 * time.Second
)

// hookRetries are worker.Options.WebhookRetries in the run: short, so the
// schedule plays out within the drain.
var hookRetries = []time.Duration{200 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// hookPost is one POST the receiver got.
type hookPost struct {
	id       string // webhook-id
	body     string
	verified bool // the signature and timestamp verify
	status   int  // what the receiver answered
}

// hookReceiver is the backend's webhook endpoint.
type hookReceiver struct {
	srv     *httptest.Server
	secrets []webhook.Secret
	mu      sync.Mutex
	rng     *rand.Rand
	posts   []hookPost
	tries   map[string]int // POSTs per webhook-id
}

func startHookReceiver(t *testing.T, seed uint64) *hookReceiver {
	secrets, err := webhook.ParseSecrets(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	r := &hookReceiver{secrets: secrets, rng: rand.New(rand.NewPCG(seed, 0x600c)), tries: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<16))
		p := hookPost{id: req.Header.Get(webhook.HeaderID), body: string(b), verified: webhook.Verify(r.secrets, req.Header, b, time.Now()) == nil}
		r.mu.Lock()
		r.tries[p.id]++
		// A refused first or second POST; the third and later are taken.
		switch x := r.rng.IntN(8); {
		case r.tries[p.id] > 2 || x >= 3:
			p.status = http.StatusOK
		case x == 0:
			p.status = http.StatusServiceUnavailable
			rw.Header().Set("Retry-After", "1")
		default:
			p.status = http.StatusInternalServerError
		}
		r.posts = append(r.posts, p)
		r.mu.Unlock()
		rw.WriteHeader(p.status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) got() []hookPost {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookPost(nil), r.posts...)
}

// hookOptions sets a node's webhook options.
func (r *hookReceiver) hookOptions(o *worker.Options) {
	o.WebhookURL = r.srv.URL
	o.WebhookSecrets = r.secrets
	o.WebhookRetries = hookRetries
	o.WebhookClaimAfter = hookClaimAfter
}

// settleWebhook waits, after the drain, until no event waits for the
// webhook: none pending in its consumer group, none waiting for a retry,
// and none of the stream newer than what the group read.
func (s *sim) settleWebhook(rdb redis.UniversalClient) {
	ctx := context.Background()
	deadline := time.Now().Add(hookSettle)
	var state string
	for time.Now().Before(deadline) {
		groups, err := rdb.XInfoGroups(ctx, worker.EventsStream).Result()
		due, derr := rdb.ZCard(ctx, "{hush:webhook:default}:due").Result()
		holder, _ := rdb.Get(ctx, "{hush:webhook:default}:retrier").Result()
		disabled, _ := rdb.Get(ctx, "{hush:webhook:default}:disabled").Result()
		failing, _ := rdb.Get(ctx, "{hush:webhook:default}:failing").Result()
		scores, _ := rdb.ZRangeWithScores(ctx, "{hush:webhook:default}:due", 0, -1).Result()
		state = fmt.Sprintf("groups %+v (%v), due %d %v (%v), retrier %q, disabled %q, failing since %s (now %d)", groups, err, due, scores, derr, holder, disabled, failing, time.Now().UnixMilli())
		if err == nil && derr == nil && len(groups) == 1 && groups[0].Pending == 0 && groups[0].Lag <= 0 && due == 0 {
			s.logf("webhook settled: %d POSTs", len(s.hook.got()))
			return
		}
		time.Sleep(250 * time.Millisecond) // the simulation's own pacing
	}
	s.logf("webhook did not settle: %s", state)
}

// streamEvents are the events hush:events holds after the run, by id, as
// written.
func streamEvents(rdb redis.UniversalClient) map[string]string {
	out := map[string]string{}
	msgs, err := rdb.XRange(context.Background(), worker.EventsStream, "-", "+").Result()
	if err != nil {
		return out
	}
	for _, m := range msgs {
		body, _ := m.Values["event"].(string)
		var e worker.Event
		if json.Unmarshal([]byte(body), &e) == nil && e.ID != "" {
			out[e.ID] = body
		}
	}
	return out
}

// checkWebhook: every event hush wrote reached the webhook at least once
// with a 2xx, signed (docs/events.md, "Delivery": at least once, across
// restarts and kills); every POST verifies, names an event hush wrote and
// carries it as written.
func checkWebhook(h *history) []failure {
	var out []failure
	taken := map[string]bool{}
	for _, p := range h.hookPosts {
		body, known := h.events[p.id]
		switch {
		case !p.verified:
			out = append(out, fail("webhook", nil, "a POST of event %s does not verify", p.id))
		case !known:
			out = append(out, fail("webhook", nil, "a POST names event %q, which hush:events does not hold", p.id))
		case p.body != body:
			out = append(out, fail("webhook", nil, "the POST of event %s carries %.120q, hush wrote %.120q", p.id, p.body, body))
		}
		if p.status/100 == 2 {
			taken[p.id] = true
		}
	}
	for _, id := range sortedKeys(h.events) {
		if !taken[id] {
			n := 0
			for _, p := range h.hookPosts {
				if p.id == id {
					n++
				}
			}
			out = append(out, fail("webhook", nil, "event %s never reached the webhook with a 2xx (%d POSTs): %.160s", id, n, h.events[id]))
		}
	}
	return out
}

// hookPostsOf is a test history's POSTs: each id with its statuses.
func hookPostsOf(events map[string]string, statuses map[string][]int) []hookPost {
	var out []hookPost
	for _, id := range sortedKeys(statuses) {
		for _, st := range statuses[id] {
			out = append(out, hookPost{id: id, body: events[id], verified: true, status: st})
		}
	}
	return out
}

func TestCheckWebhook(t *testing.T) {
	events := map[string]string{"evt_a": `{"id":"evt_a"}`, "evt_b": `{"id":"evt_b"}`}
	for _, tt := range []struct {
		name  string
		posts []hookPost
		want  int
	}{
		{"each taken", hookPostsOf(events, map[string][]int{"evt_a": {200}, "evt_b": {500, 200}}), 0},
		{"one only refused", hookPostsOf(events, map[string][]int{"evt_a": {200}, "evt_b": {500, 503}}), 1},
		{"one never posted", hookPostsOf(events, map[string][]int{"evt_a": {200}}), 1},
		{"unsigned", append(hookPostsOf(events, map[string][]int{"evt_a": {200}, "evt_b": {200}}), hookPost{id: "evt_a", body: events["evt_a"], status: 200}), 1},
		{"an unknown event", append(hookPostsOf(events, map[string][]int{"evt_a": {200}, "evt_b": {200}}), hookPost{id: "evt_x", verified: true, status: 200}), 1},
		{"another body", append(hookPostsOf(events, map[string][]int{"evt_a": {200}, "evt_b": {200}}), hookPost{id: "evt_a", body: "{}", verified: true, status: 200}), 1},
		{"posted twice", hookPostsOf(events, map[string][]int{"evt_a": {200, 200}, "evt_b": {200}}), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := checkWebhook(&history{events: events, hookPosts: tt.posts})
			if len(got) != tt.want {
				t.Errorf("%d failures %v, want %d", len(got), got, tt.want)
			}
		})
	}
}
