package apns_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/fake"
)

// TestSendAnswerBounded: the answer is back as soon as its status is: an
// endless body after APNs's status holds neither Send nor its outcome.
func TestSendAnswerBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  fake.Answer
		outcome providers.Outcome
	}{
		{"endless 200", fake.OK().WithEndlessBody(), providers.Delivered},
		{"endless 410", fake.Unregistered().WithEndlessBody(), providers.TokenInvalid},
		{"endless 500", fake.Status(http.StatusInternalServerError).WithEndlessBody(), providers.Transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, s := startFake(t)
			f.Script(deviceToken, tc.answer)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			r := s.Send(ctx, providers.Push{ID: "job/u/0", Platform: payload.APNs, Token: deviceToken,
				Content: &payload.Content{Alert: &payload.Alert{Title: "t", Body: "b"}}})
			if r.Outcome != tc.outcome {
				t.Errorf("Send = %+v, want %s", r, tc.outcome)
			}
			if ctx.Err() != nil {
				t.Errorf("Send returned only at its caller's deadline: the body held it")
			}
		})
	}
}
