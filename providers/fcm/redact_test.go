package fcm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/providers"
)

// TestSendErrorsRedactTheToken: on the failures that leave the sender with
// the SDK's error (the server gone, the deadline passed), the error never
// shows the whole registration token.
func TestSendErrorsRedactTheToken(t *testing.T) {
	tok := "fGx1:APA91b" + strings.Repeat("Token-Example_", 8)
	for _, tc := range []struct {
		name string
		ctx  func(t *testing.T) context.Context
		stop bool
	}{
		{"network error", func(t *testing.T) context.Context {
			// The SDK retries a network error for seconds: a bounded
			// context ends it after the first attempts.
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			t.Cleanup(cancel)
			return ctx
		}, true},
		{"timeout", func(t *testing.T) context.Context {
			ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, s := startFake(t)
			if r := s.Warm(); r.Err != nil {
				t.Fatal(r.Err) // the access token, cached before the server goes
			}
			if tc.stop {
				f.Close()
			}
			r := s.Send(tc.ctx(t), alertPush(tok))
			if r.Err == nil || r.Outcome == providers.Delivered {
				t.Fatalf("Send: %+v, want a failure", r)
			}
			if msg := r.Err.Error(); strings.Contains(msg, tok) {
				t.Errorf("error %q shows the whole token", msg)
			}
		})
	}
}
