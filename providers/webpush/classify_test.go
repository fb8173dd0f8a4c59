package webpush

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hushpush/hush/providers"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	const origin = "https://updates.push.services.mozilla.com"
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		body       string
		want       providers.Result
	}{
		{"created", 201, "", "", providers.Result{Outcome: providers.Delivered, StatusCode: 201}},
		{"ok", 200, "", "", providers.Result{Outcome: providers.Delivered, StatusCode: 200}},
		{"gone", 410, "", `{"errno":106}`, providers.Result{Outcome: providers.TokenInvalid, StatusCode: 410, Reason: "410 Gone at " + origin}},
		{"not found", 404, "", "", providers.Result{Outcome: providers.TokenInvalid, StatusCode: 404, Reason: "404 Not Found at " + origin}},
		{"throttled seconds", 429, "30", "", providers.Result{Outcome: providers.Throttled, StatusCode: 429, RetryAfter: 30 * time.Second, Reason: "429 Too Many Requests at " + origin}},
		{"throttled date", 429, now.Add(90 * time.Second).Format(timeFormat), "", providers.Result{Outcome: providers.Throttled, StatusCode: 429, RetryAfter: 90 * time.Second, Reason: "429 Too Many Requests at " + origin}},
		{"throttled no header", 429, "", "", providers.Result{Outcome: providers.Throttled, StatusCode: 429, Reason: "429 Too Many Requests at " + origin}},
		{"too large", 413, "", `{"code":413,"errno":104,"error":"Payload Too Large","message":"Request body too large"}`,
			providers.Result{Outcome: providers.Permanent, StatusCode: 413, Reason: "413 Request Entity Too Large: Request body too large"}},
		{"bad request text", 400, "", "Bad\nTopic header\x00", providers.Result{Outcome: providers.Permanent, StatusCode: 400, Reason: "400 Bad Request: Bad Topic header"}},
		{"forbidden", 403, "", `{"message":"key mismatch"}`, providers.Result{Outcome: providers.TokenInvalid, KeyRefusedBy: origin, StatusCode: 403, Reason: "403 Forbidden at " + origin + ": the VAPID key is refused (key mismatch)"}},
		{"unauthorized", 401, "", "", providers.Result{Outcome: providers.TokenInvalid, KeyRefusedBy: origin, StatusCode: 401, Reason: "401 Unauthorized at " + origin + ": the VAPID key is refused"}},
		{"server error", 500, "", "", providers.Result{Outcome: providers.Transient, StatusCode: 500, Reason: "500 Internal Server Error"}},
		{"unavailable", 503, "", "", providers.Result{Outcome: providers.Transient, StatusCode: 503, Reason: "503 Service Unavailable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := classify(tc.status, tc.retryAfter, strings.NewReader(tc.body), origin, now)
			if (got.Err != nil) != (tc.want.Outcome == providers.Permanent || tc.want.Outcome == providers.Transient) {
				t.Errorf("Err = %v for outcome %s", got.Err, got.Outcome)
			}
			got.Err = nil
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("classify (-want +got):\n%s", d)
			}
		})
	}
}

const timeFormat = "Mon, 02 Jan 2006 15:04:05 GMT"

func TestClassifyError(t *testing.T) {
	const origin = "https://push.example.net"
	secret := &url.Error{Op: "Post", URL: origin + "/push/SECRET", Err: syscall.ECONNREFUSED}
	r := classifyError(context.Background(), origin, secret)
	if r.Outcome != providers.Transient || r.Reason != "network" || !errors.Is(r.Err, syscall.ECONNREFUSED) {
		t.Errorf("classifyError = %+v, want transient network wrapping ECONNREFUSED", r)
	}
	if strings.Contains(r.Err.Error(), "SECRET") {
		t.Errorf("error shows the endpoint: %v", r.Err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	if r := classifyError(ctx, origin, &url.Error{Op: "Post", URL: origin, Err: context.DeadlineExceeded}); r.Reason != "timeout" {
		t.Errorf("reason = %q, want timeout", r.Reason)
	}
}
