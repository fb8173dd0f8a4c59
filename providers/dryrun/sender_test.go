package dryrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/dryrun"
)

func TestSendLogsAndDelivers(t *testing.T) {
	const token = "a4f1c0ffee0123456789abcdef0123456789abcdef0123456789abcdef012345"
	var buf bytes.Buffer
	s := dryrun.New(slog.New(slog.NewJSONHandler(&buf, nil)))
	got := s.Send(context.Background(), providers.Push{
		ID: "job-1/u-42/0", UserID: "u-42", Platform: payload.APNs, Token: token,
		Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
		Content: &payload.Content{
			Alert:       &payload.Alert{Title: "Shipped", Body: "Order 4711"},
			Data:        map[string]string{"order": "4711"},
			CollapseKey: "order-4711",
		},
	})
	if diff := cmp.Diff(providers.Result{Outcome: providers.Delivered}, got); diff != "" {
		t.Errorf("Send (-want +got):\n%s", diff)
	}
	if strings.Contains(buf.String(), token[8:]) {
		t.Errorf("log contains the whole token: %s", buf.String())
	}
	var entry map[string]any
	if err := json.Unmarshal(buf.Bytes(), &entry); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	delete(entry, "time")
	want := map[string]any{
		"level": "INFO", "msg": "dry run: would send push",
		"push_id": "job-1/u-42/0", "user_id": "u-42", "platform": "apns", "token": "a4f1c0ff…",
		"title": "Shipped", "body": "Order 4711", "silent": false, "priority": "normal",
		"data_keys": float64(1), "collapse_key": "order-4711", "expiry": "2030-01-02T03:04:05Z",
	}
	if diff := cmp.Diff(want, entry); diff != "" {
		t.Errorf("log entry (-want +got):\n%s", diff)
	}
}

func TestShortToken(t *testing.T) {
	tests := []struct{ name, token, want string }{
		{"apns hex", "a4f1c0ffee0123456789", "a4f1c0ff…"},
		{"fcm", "dGVzdDp0b2tlbg:APA91bH", "dGVzdDp0…"},
		{"short", "abcdefgh", "…"},
		{"empty", "", "…"},
		{"multibyte", "ééééééééé", "éééééééé…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dryrun.ShortToken(tt.token); got != tt.want {
				t.Errorf("ShortToken(%q) = %q, want %q", tt.token, got, tt.want)
			}
		})
	}
}
