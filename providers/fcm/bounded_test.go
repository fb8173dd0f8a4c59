package fcm

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/fake"
)

// TestSendAnswerBounded: the answer is back as soon as its status is: an
// endless body after FCM's status holds neither Send nor its outcome, and a
// huge one is not read whole.
func TestSendAnswerBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  fake.Answer
		outcome providers.Outcome
	}{
		{"endless 200", fake.OK().WithEndlessBody(), providers.Delivered},
		{"endless unregistered", fake.Unregistered().WithEndlessBody(), providers.TokenInvalid},
		{"huge 500", fake.Status(http.StatusInternalServerError).WithBodySize(64 << 20), providers.Transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, s := startFake(t)
			f.Script("tok", tc.answer)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			r := s.Send(ctx, alertPush("tok"))
			if r.Outcome != tc.outcome {
				t.Errorf("Send = %+v, want %s", r, tc.outcome)
			}
			if ctx.Err() != nil {
				t.Errorf("Send returned only at its caller's deadline: the body held it")
			}
		})
	}
}

// TestSendRetryAfterRaw: FCM's Retry-After is taken as the push service
// wrote it, however absurd; the worker clamps it (worker/decide.go).
func TestSendRetryAfterRaw(t *testing.T) {
	f, s := startFake(t)
	f.Script("tok", fake.TooMany(0).WithRetryAfterHeader("315360000"))
	r := s.Send(t.Context(), alertPush("tok"))
	if r.Outcome != providers.Throttled || r.RetryAfter != 315360000*time.Second {
		t.Errorf("Send = %+v, want throttled with the header's Retry-After", r)
	}
}
