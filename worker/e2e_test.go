package worker

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/store"
)

func TestEndToEnd(t *testing.T) {
	e := newEnv(t, envOptions{})
	tokA, tokB1, tokB2 := apnsToken("alice"), apnsToken("bob-1"), apnsToken("bob-2")
	fcmB, fcmC := fcmToken("bob"), fcmToken("carol")
	bob := apnsRecipient("u-bob", tokB1, tokB2)
	bob.Devices = append(bob.Devices, payload.Device{Platform: payload.FCM, Token: fcmB})
	carol := payload.Recipient{UserID: "u-carol", Devices: []payload.Device{{Platform: payload.FCM, Token: fcmC}}}
	job := alertJob("order-4711", "Shipped", apnsRecipient("u-alice", tokA), bob, carol)
	job.CollapseKey = "order-4711"
	job.Data = map[string]string{"order": "4711"}
	id := e.submit(job)

	st := e.waitDone(id, 20*time.Second)
	if diff := cmp.Diff(map[string]int{"delivered": 3, "expired": 0, "token_invalid": 0, "failed": 0, "throttle_full": 0, "collapsed": 0, "cancelled": 0, "opted_out": 0, "pending": 0}, st.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}

	reqs := e.apns.Requests()
	if len(reqs) != 3 {
		t.Fatalf("fake APNs got %d requests, want 3", len(reqs))
	}
	for _, tok := range []string{tokA, tokB1, tokB2} {
		got := requestsFor(reqs, tok)
		if len(got) != 1 {
			t.Errorf("token %s…: %d requests, want 1", tok[:8], len(got))
			continue
		}
		r := got[0]
		if h := r.Header.Get("apns-topic"); h != apnsTopic {
			t.Errorf("apns-topic = %q, want %q", h, apnsTopic)
		}
		if h := r.Header.Get("apns-collapse-id"); h != "order-4711" {
			t.Errorf("apns-collapse-id = %q, want order-4711", h)
		}
		var body struct {
			APS struct {
				Alert struct{ Title, Body string } `json:"alert"`
			} `json:"aps"`
			Order string `json:"order"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("body %s: %v", r.Body, err)
		}
		if body.APS.Alert.Title != "Shipped" || body.APS.Alert.Body != "body of Shipped" || body.Order != "4711" {
			t.Errorf("body = %s, want the alert and data of the job", r.Body)
		}
	}

	freqs := e.fcm.Requests()
	if len(freqs) != 2 {
		t.Fatalf("fake FCM got %d requests, want 2", len(freqs))
	}
	for _, tok := range []string{fcmB, fcmC} {
		got := requestsFor(freqs, tok)
		if len(got) != 1 {
			t.Errorf("fcm token %s: %d requests, want 1", tok[:8], len(got))
			continue
		}
		r := got[0]
		if want := "/v1/projects/" + fcmProject + "/messages:send"; r.Path != want {
			t.Errorf("FCM path %q, want %q", r.Path, want)
		}
		var body struct {
			Message struct {
				Token        string                       `json:"token"`
				Notification struct{ Title, Body string } `json:"notification"`
				Data         map[string]string            `json:"data"`
				Android      struct {
					CollapseKey string `json:"collapse_key"`
				} `json:"android"`
			} `json:"message"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("FCM body %s: %v", r.Body, err)
		}
		m := body.Message
		if m.Token != tok || m.Notification.Title != "Shipped" || m.Data["order"] != "4711" || m.Android.CollapseKey != "order-4711" {
			t.Errorf("FCM body = %s, want the job's alert, data and collapse key for %s", r.Body, tok)
		}
	}

	// A second submission with the same id changes nothing.
	acc, err := e.client.Enqueue(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Accepted{ID: id, Duplicate: true}, acc); diff != "" {
		t.Errorf("resubmit (-want +got):\n%s", diff)
	}
}

func TestGeneratedID(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	acc, err := e.client.Enqueue(t.Context(), alertJob("", "hi", apnsRecipient("u-1", apnsToken("x"))))
	if err != nil {
		t.Fatal(err)
	}
	if len(acc.ID) != 32 || acc.Duplicate {
		t.Errorf("Enqueue = %+v, want a generated 32-character id", acc)
	}
	st, err := e.client.Status(t.Context(), acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != store.JobQueued || st.Recipients != 1 || st.Queue != string(payload.PriorityNormal) {
		t.Errorf("status = %+v, want queued with 1 recipient on the normal queue", st)
	}
}
