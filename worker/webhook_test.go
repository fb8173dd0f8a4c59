package worker

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/webhook"
	"github.com/hushpush/hush/worker/internal/store"
)

// receiver is a webhook endpoint answering each POST with the next of its
// statuses (the last one from then on), or holding it until released when
// the status is 0. It records every POST, checking its signature.
type receiver struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	statuses []int
	posts    []post
	release  chan struct{}
}

type post struct {
	id, body string
	status   int
}

func startReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{t: t, statuses: statuses, release: make(chan struct{})}
	secrets := testWebhookSecrets("signed")
	r.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		if err := webhook.Verify(secrets, req.Header, b, time.Now()); err != nil {
			t.Errorf("webhook POST does not verify: %v", err)
		}
		r.mu.Lock()
		status := r.statuses[min(len(r.posts), len(r.statuses)-1)]
		r.posts = append(r.posts, post{id: req.Header.Get(webhook.HeaderID), body: string(b), status: status})
		r.mu.Unlock()
		if status == 0 {
			select {
			case <-r.release:
			case <-req.Context().Done():
			}
			return
		}
		rw.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	t.Cleanup(func() { close(r.release) })
	return r
}

func (r *receiver) got() []post {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]post(nil), r.posts...)
}

// kill submits a job whose one device is dead, so the worker emits one
// token_invalid event, and returns the event's id.
func (e *env) deadToken(job string) string {
	e.t.Helper()
	dead := apnsToken(job)
	e.apns.Script(dead, fake.Unregistered())
	e.waitDone(e.submit(alertJob(job, "t", apnsRecipient("u-"+job, dead))), 10*time.Second)
	evs := e.events()
	return store.EventID(evs[len(evs)-1])
}

// TestWebhookRetriesUntilAnswered: a POST answered 500 is tried again on
// the schedule, with the same webhook-id, until a 2xx; then never again.
func TestWebhookRetriesUntilAnswered(t *testing.T) {
	r := startReceiver(t, 500, 503, 200)
	e := newEnv(t, envOptions{webhookURL: r.srv.URL, webhookRetries: []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, time.Hour}})
	id := e.deadToken("retried")
	waitFor(t, 15*time.Second, "three POSTs", func() bool { return len(r.got()) >= 3 })
	time.Sleep(500 * time.Millisecond) // more polls of the retries, which must post nothing
	ps := r.got()
	if len(ps) != 3 {
		t.Fatalf("%d POSTs %v, want 3: 500, 503, then 200", len(ps), ps)
	}
	for _, p := range ps {
		if p.id != id {
			t.Errorf("POST with webhook-id %q, want the event's %q", p.id, id)
		}
	}
	st, err := e.client.WebhookStatus(t.Context())
	if err != nil || st.Retrying != 0 || st.Disabled != nil {
		t.Errorf("webhook status %+v, %v: want nothing retrying and enabled", st, err)
	}
}

// TestWebhookPostsOnlyItsTypes: an endpoint given types receives only
// events of those; the stream holds the others all the same.
func TestWebhookPostsOnlyItsTypes(t *testing.T) {
	r := startReceiver(t, 200)
	e := newEnv(t, envOptions{webhookURL: r.srv.URL, webhookTypes: []string{EventTokenInvalid}})
	e.waitDone(e.submit(alertJob("fine", "f", apnsRecipient("u-fine", apnsToken("fine")))), 10*time.Second)
	id := e.deadToken("dead")
	waitFor(t, 15*time.Second, "the token_invalid POST", func() bool { return len(r.got()) >= 1 })
	time.Sleep(500 * time.Millisecond) // more polls, which must post nothing
	if ps := r.got(); len(ps) != 1 || ps[0].id != id {
		t.Errorf("POSTs %v, want the token_invalid event %s alone", ps, id)
	}
	if evs := e.events(); len(evs) != 2 || evs[0].Type != EventDelivered {
		t.Errorf("the stream holds %v, want the delivered event and the token_invalid one", evs)
	}
}

// TestWebhookGivesUp: an event whose every attempt fails is given up after
// the schedule's last one; a later event failing past the whole schedule
// and the retrier lease disables the endpoint, and enabling it posts the
// events waiting.
func TestWebhookGivesUpThenDisables(t *testing.T) {
	r := startReceiver(t, 500)
	e := newEnv(t, envOptions{webhookURL: r.srv.URL, webhookRetries: []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}})
	first := e.deadToken("given-up")
	waitFor(t, 15*time.Second, "three attempts", func() bool { return len(r.got()) >= 3 })
	waitFor(t, 15*time.Second, "the event given up", func() bool {
		st, err := e.client.WebhookStatus(t.Context())
		return err == nil && st.Retrying == 0
	})
	time.Sleep(300 * time.Millisecond)
	if n := len(r.got()); n != 3 {
		t.Errorf("the first event got %d POSTs, want 3 (its attempt and two retries)", n)
	}
	// Once the endpoint has been failing for longer than the schedule and
	// the retrier lease (failingLimit), the next failure disables it.
	since, err := e.rdb.Get(t.Context(), e.w.webhook.keys.failing).Int64()
	if err != nil {
		t.Fatalf("when the endpoint began failing: %v", err)
	}
	time.Sleep(time.Until(time.UnixMilli(since).Add(e.w.webhook.failingLimit())))
	second := e.deadToken("disables")
	waitFor(t, 15*time.Second, "the endpoint disabled", func() bool {
		st, err := e.client.WebhookStatus(t.Context())
		return err == nil && st.Disabled != nil
	})
	n := len(r.got())
	third := e.deadToken("while-disabled")
	time.Sleep(500 * time.Millisecond)
	if got := len(r.got()); got != n {
		t.Errorf("a disabled endpoint got %d more POSTs", got-n)
	}
	r.mu.Lock()
	r.statuses = []int{200}
	r.mu.Unlock()
	if err := e.client.EnableWebhook(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the waiting events posted", func() bool {
		seen := map[string]bool{}
		for _, p := range r.got() {
			if p.status == 200 {
				seen[p.id] = true
			}
		}
		return seen[second] && seen[third]
	})
	for _, p := range r.got() {
		if p.id == first && p.status == 200 {
			t.Errorf("the given-up event %s was posted again after the enable", first)
		}
	}
}

// TestWebhook410Disables: a 410 disables the endpoint at once.
func TestWebhook410Disables(t *testing.T) {
	r := startReceiver(t, 410)
	e := newEnv(t, envOptions{webhookURL: r.srv.URL})
	e.deadToken("gone")
	waitFor(t, 15*time.Second, "the endpoint disabled", func() bool {
		st, err := e.client.WebhookStatus(t.Context())
		return err == nil && st.Disabled != nil && st.Disabled.Reason == "the endpoint answered 410 Gone" && st.Retrying == 1
	})
}

// TestWebhookEventSurvivesItsProcess: a process stopped while its POST is
// under way (as kill -9 would leave it: not acknowledged) leaves the event
// pending in the group, and the next process claims and posts it.
func TestWebhookEventSurvivesItsProcess(t *testing.T) {
	r := startReceiver(t, 0, 200)
	e := newEnv(t, envOptions{webhookURL: r.srv.URL})
	id := e.deadToken("survives")
	waitFor(t, 15*time.Second, "the first POST under way", func() bool { return len(r.got()) == 1 })
	e.shutdown()
	opts := e.opts
	opts.WebhookClaimAfter = 300 * time.Millisecond
	w, err := New(e.rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	w.webhook.poll = 50 * time.Millisecond
	e.w, e.client = w, w.Client()
	e.start()
	t.Cleanup(e.shutdown)
	waitFor(t, 15*time.Second, "the event posted by the next process", func() bool {
		ps := r.got()
		return len(ps) == 2 && ps[1].id == id && ps[1].status == 200
	})
	pending, err := e.rdb.XPending(context.Background(), EventsStream, webhookGroup).Result()
	if err != nil || pending.Count != 0 {
		t.Errorf("pending in the group: %+v, %v; want none", pending, err)
	}
}

// TestWebhookForgetsConsumersGone: a consumer of the group that holds no
// event and has not read for forgetAfter is removed; one holding an event
// is kept, so its event can still be claimed.
func TestWebhookForgetsConsumersGone(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := t.Context()
	if err := rdb.XGroupCreateMkStream(ctx, EventsStream, webhookGroup, "$").Err(); err != nil {
		t.Fatal(err)
	}
	read := func(consumer string) {
		rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: webhookGroup, Consumer: consumer, Streams: []string{EventsStream, ">"}, Count: 1, Block: -1})
	}
	read("gone")
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: EventsStream, Values: []any{"event", "{}"}})
	read("holding")
	d := newWebhookDelivery(rdb, "http://127.0.0.1:1", nil, nil, testLogger(t), newMetrics())
	d.forgetAfter = 20 * time.Millisecond
	time.Sleep(50 * time.Millisecond)
	d.forgetConsumers(ctx)
	cs, err := rdb.XInfoConsumers(ctx, EventsStream, webhookGroup).Result()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	if len(names) != 1 || names[0] != "holding" {
		t.Errorf("consumers left %v, want [holding]", names)
	}
}

// TestWebhookFailingLimitOutlastsADeadRetrier: a process killed holding
// the retrier lease holds every retry back for the lease, while only
// first POSTs go out; the endpoint is not disabled before the lease and
// then the whole schedule have had their time.
func TestWebhookFailingLimitOutlastsADeadRetrier(t *testing.T) {
	for _, retries := range [][]time.Duration{{100 * time.Millisecond, 100 * time.Millisecond}, DefaultWebhookRetries} {
		d := newWebhookDelivery(nil, "http://example.invalid", nil, retries, nil, nil)
		var schedule time.Duration
		for _, w := range retries {
			schedule += w
		}
		if got, least := d.failingLimit(), d.retrierLease()+schedule; got < least {
			t.Errorf("retries %v: failing limit %s, want at least the lease and the schedule, %s", retries, got, least)
		}
	}
}
