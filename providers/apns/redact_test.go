package apns_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
)

// TestSendErrorsRedactTheToken: on every failure that leaves the sender
// with the transport's error (the server gone, the deadline passed), the
// error shows the device token's ends, never the whole token.
func TestSendErrorsRedactTheToken(t *testing.T) {
	tok := strings.Repeat("3f1c9a0b", 8)
	push := providers.Push{ID: "job/u/0", Platform: payload.APNs, Token: tok,
		Content: &payload.Content{Alert: &payload.Alert{Title: "t"}}}
	for _, tc := range []struct {
		name string
		ctx  func(t *testing.T) context.Context
		stop bool
	}{
		{"network error", func(t *testing.T) context.Context { return t.Context() }, true},
		{"timeout", func(t *testing.T) context.Context {
			ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, s := startFake(t)
			if tc.stop {
				f.Close()
			}
			r := s.Send(tc.ctx(t), push)
			if r.Err == nil || r.Outcome == providers.Delivered {
				t.Fatalf("Send: %+v, want a failure", r)
			}
			if msg := r.Err.Error(); strings.Contains(msg, tok) || !strings.Contains(msg, providers.TokenEnds(tok)) {
				t.Errorf("error %q: want the token's ends %s, not the whole token", msg, providers.TokenEnds(tok))
			}
		})
	}
}
