package worker

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/webhook"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// TestShutdownHandsBackAWaitingDelivery stops the worker while a delivery
// waits in the handler for its slot (a gap within decide.MaxInlineWait: a
// longer one holds the job back in a held jobs task,
// TestShutdownHandsBackWaitingHeldJobs): the delivery goes back to its queue
// without using a retry, and a worker started later sends it once, not before
// its slot.
func TestShutdownHandsBackAWaitingDelivery(t *testing.T) {
	e := newEnv(t, envOptions{limits: "100/1m", gap: "2s", shutdownTimeout: 300 * time.Millisecond, noRun: true})
	e.start()
	e.waitDone(e.submit(alertJob("first", "1", apnsRecipient("u-1", apnsToken("first")))), 10*time.Second)
	tok := apnsToken("second")
	id := e.submit(alertJob("second", "2", apnsRecipient("u-1", tok)))
	waitFor(t, 10*time.Second, "the second delivery's booking", func() bool {
		_, ok := e.lim.slot("second/0")
		return ok
	})
	stopAt := time.Now()
	e.shutdown()
	if d := time.Since(stopAt); d > 2500*time.Millisecond {
		t.Errorf("shutdown took %s, want about the shutdown timeout (300ms)", d)
	}
	if n := len(requestsFor(e.apns.Requests(), tok)); n != 0 {
		t.Fatalf("the waiting delivery was sent during shutdown (%d requests)", n)
	}
	info, err := e.insp.GetTaskInfo(string(payload.PriorityNormal), task.DeliveryID("second", 0))
	if err != nil {
		t.Fatalf("the handed-back delivery is not in its queue: %v", err)
	}
	if info.Retried != 0 || info.State.String() == "archived" {
		t.Errorf("handed-back delivery: state %s, retried %d; want back in the queue without a retry", info.State, info.Retried)
	}

	e.start()
	t.Cleanup(e.shutdown)
	if st := e.waitDone(id, 15*time.Second); st.Counts[task.Delivered] != 1 {
		t.Errorf("after the restart: counts %v, want 1 delivered", st.Counts)
	}
	reqs := requestsFor(e.apns.Requests(), tok)
	slot, _ := e.lim.slot("second/0")
	if len(reqs) != 1 || reqs[0].At.Before(slot) {
		t.Errorf("second push: %d requests (first at %v), want exactly one at or after its slot %v", len(reqs), reqs, slot)
	}
}

// testWebhookSecret is the secret the harness signs webhook POSTs with.
const testWebhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// testWebhookSecrets are the harness's webhook secrets when it has a
// webhook URL.
func testWebhookSecrets(url string) []webhook.Secret {
	if url == "" {
		return nil
	}
	s, err := webhook.ParseSecrets(testWebhookSecret)
	if err != nil {
		panic(err)
	}
	return s
}

func TestWebhookReceivesEvents(t *testing.T) {
	var mu sync.Mutex
	var got []Event
	secrets := testWebhookSecrets("signed")
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secrets, r.Header, b, time.Now()); err != nil {
			t.Errorf("webhook POST does not verify: %v", err)
		}
		var ev Event
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Errorf("webhook body %q: %v", b, err)
		}
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	e := newEnv(t, envOptions{webhookURL: hook.URL})
	dead := apnsToken("gone")
	e.apns.Script(dead, fake.Unregistered())
	e.waitDone(e.submit(alertJob("hooked", "h", apnsRecipient("u-9", dead))), 10*time.Second)
	waitFor(t, 5*time.Second, "the webhook POST", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if ev := got[0]; ev.Type != EventTokenInvalid || ev.Token != dead || ev.UserID != "u-9" {
		t.Errorf("webhook event %+v, want token_invalid for u-9's token", ev)
	}
	if ev := got[0]; ev.ID != store.EventID(ev) {
		t.Errorf("webhook event id %q, want %q, the id of its outcome", ev.ID, store.EventID(ev))
	}
}

// TestEventIDNamesTheOutcome: an event emitted again for the same outcome
// (a re-run, a lost reply) has the same id, which is what a receiver
// de-duplicates by; another outcome has another.
func TestEventIDNamesTheOutcome(t *testing.T) {
	base := Event{Type: EventTokenInvalid, Platform: string(payload.APNs), Token: "aa", UserID: "u-1", Reason: "Unregistered", Job: "j", App: "default", At: time.Unix(1, 0)}
	again := base
	again.At, again.Reason = time.Unix(2, 0), "BadDeviceToken"
	if store.EventID(base) != store.EventID(again) {
		t.Errorf("the same outcome emitted twice has ids %q and %q", store.EventID(base), store.EventID(again))
	}
	for _, change := range []func(*Event){
		func(e *Event) { e.Type = EventDropped },
		func(e *Event) { e.Token = "ab" },
		func(e *Event) { e.UserID = "u-2" },
		func(e *Event) { e.Job = "k" },
		func(e *Event) { e.App = "shop" },
		func(e *Event) { e.Platform = string(payload.FCM) },
		// The fields are separated: "u-1"+"j" is not "u-"+"1j".
		func(e *Event) { e.UserID, e.Job = "u-", "1j" },
	} {
		other := base
		change(&other)
		if store.EventID(other) == store.EventID(base) {
			t.Errorf("%+v has the id of %+v", other, base)
		}
	}
	if id := store.EventID(base); strings.Contains(id, ".") || !strings.HasPrefix(id, "evt_") || len(id) != 30 {
		t.Errorf("event id %q: want evt_ and 26 characters without '.'", id)
	}
}

func TestNewRefusesAnUnsignedWebhook(t *testing.T) {
	lim, err := throttle.NewMemory(throttle.Policy{MinGap: time.Second}, throttle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(nil, Options{Limiter: lim, WebhookURL: "https://backend.example/hooks"})
	if err == nil || !strings.Contains(err.Error(), "WebhookSecrets") {
		t.Errorf("New with a webhook URL and no secret: %v, want an error naming WebhookSecrets", err)
	}
}
