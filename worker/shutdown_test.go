package worker

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
)

// TestShutdownHandsBackAWaitingDelivery stops the worker while a delivery
// waits in the handler for its slot (a gap within maxInlineWait: a longer
// one holds the job back in a held jobs task, TestShutdownHandsBackWaitingHeldJobs):
// the delivery goes back to its queue without using a retry, and a worker
// started later sends it once, not before its slot.
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
	info, err := e.insp.GetTaskInfo(string(payload.PriorityNormal), deliveryTaskID("second", 0))
	if err != nil {
		t.Fatalf("the handed-back delivery is not in its queue: %v", err)
	}
	if info.Retried != 0 || info.State.String() == "archived" {
		t.Errorf("handed-back delivery: state %s, retried %d; want back in the queue without a retry", info.State, info.Retried)
	}

	e.start()
	t.Cleanup(e.shutdown)
	if st := e.waitDone(id, 15*time.Second); st.Counts[stateDelivered] != 1 {
		t.Errorf("after the restart: counts %v, want 1 delivered", st.Counts)
	}
	reqs := requestsFor(e.apns.Requests(), tok)
	slot, _ := e.lim.slot("second/0")
	if len(reqs) != 1 || reqs[0].At.Before(slot) {
		t.Errorf("second push: %d requests (first at %v), want exactly one at or after its slot %v", len(reqs), reqs, slot)
	}
}

func TestWebhookReceivesEvents(t *testing.T) {
	var mu sync.Mutex
	var got []Event
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
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
}
