package apns_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
)

const deviceToken = "a4f1c0ffee0123456789abcdef0123456789abcdef0123456789abcdef012345"

func intPtr(n int) *int { return &n }

func TestSendHeadersAndBody(t *testing.T) {
	expiry := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name        string
		push        providers.Push
		wantHeaders map[string]string
		wantBody    string
	}{
		{
			name: "urgent alert",
			push: providers.Push{
				ID: "job-1/u-42/0", Platform: payload.APNs, Token: deviceToken, Expiry: expiry,
				Content: &payload.Content{
					Alert:       &payload.Alert{Title: "Shipped", Body: "Order 4711", Sound: "default", Badge: intPtr(3)},
					Data:        map[string]string{"order": "4711"},
					Priority:    payload.PriorityHigh,
					CollapseKey: "order-4711",
				},
			},
			wantHeaders: map[string]string{
				"apns-topic":       topic,
				"apns-push-type":   "alert",
				"apns-priority":    "10",
				"apns-expiration":  strconv.FormatInt(expiry.Unix(), 10),
				"apns-collapse-id": "order-4711",
				"apns-id":          "ebf1a54c-b05c-5e22-a560-aacc2b7de098", // Python: uuid.uuid5(uuid.NAMESPACE_URL, "hush:push:job-1/u-42/0")
			},
			wantBody: `{"aps":{"alert":{"body":"Order 4711","title":"Shipped"},"badge":3,"sound":"default"},"order":"4711"}`,
		},
		{
			name: "silent, no expiry, no collapse key",
			push: providers.Push{
				ID: "job-2/u-42/0", Platform: payload.APNs, Token: deviceToken,
				Content: &payload.Content{Silent: true, Priority: payload.PriorityCritical, Data: map[string]string{"sync": "inbox"}},
			},
			wantHeaders: map[string]string{
				"apns-topic":       topic,
				"apns-push-type":   "background",
				"apns-priority":    "5",
				"apns-expiration":  "",
				"apns-collapse-id": "",
				"apns-id":          "66d34a7d-f2fc-59c1-a22a-fcf4c87daa88", // uuid5(NAMESPACE_URL, "hush:push:job-2/u-42/0")
			},
			wantBody: `{"aps":{"content-available":1},"sync":"inbox"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, s := startFake(t)
			res := s.Send(context.Background(), tt.push)
			if diff := cmp.Diff(providers.Result{Outcome: providers.Delivered, StatusCode: 200}, res); diff != "" {
				t.Fatalf("Send (-want +got):\n%s", diff)
			}
			reqs := f.Requests()
			if len(reqs) != 1 {
				t.Fatalf("fake received %d requests, want 1", len(reqs))
			}
			got := map[string]string{}
			for k := range tt.wantHeaders {
				got[k] = reqs[0].Header.Get(k)
			}
			if diff := cmp.Diff(tt.wantHeaders, got); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBody, string(reqs[0].Body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if reqs[0].Token != deviceToken {
				t.Errorf("token = %q, want %q", reqs[0].Token, deviceToken)
			}
			if !strings.HasPrefix(reqs[0].Header.Get("Authorization"), "bearer ") {
				t.Errorf("no provider token sent")
			}
		})
	}
}
