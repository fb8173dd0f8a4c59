package webpush_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/providers/webpush"
)

// startHostile starts a hostile fake push service (fake.WebPushOptions)
// and a sender that trusts it.
func startHostile(tb testing.TB, o fake.WebPushOptions) (*fake.WebPush, *webpush.Sender) {
	tb.Helper()
	f, err := fake.StartWebPushWith(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(f.Close)
	ca, err := f.WriteCA(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		tb.Fatal(err)
	}
	s, err := webpush.New(webpush.Config{PrivateKey: key.PrivateKey(), Subject: "mailto:ops@example.com", CAFile: ca, Egress: testEgress})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return f, s
}

// TestSendNothingAfterSendBy: a push to an origin whose connection is slow
// to set up (DNS, TCP or TLS outlasting SendBy) is not written once
// SendBy passes: the sender answers not sent, and the push service never
// sees it (a later push on the same sender arrives alone).
func TestSendNothingAfterSendBy(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    fake.WebPushOptions
	}{
		{"slow dial", fake.WebPushOptions{DialDelay: time.Second}},
		{"slow tls", fake.WebPushOptions{TLSDelay: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, s := startHostile(t, tc.o)
			late, later := subscribe(t, f, ""), subscribe(t, f, "")
			p := alertPush(late)
			p.SendBy = time.Now().Add(100 * time.Millisecond)
			r := s.Send(t.Context(), p)
			if r.Outcome != providers.Transient || !errors.Is(r.Err, providers.ErrNotSent) {
				t.Fatalf("Send past SendBy = %+v, want transient, not sent", r)
			}
			if r2 := s.Send(t.Context(), alertPush(later)); r2.Outcome != providers.Delivered {
				t.Fatalf("Send without SendBy = %+v, want delivered", r2)
			}
			for _, req := range f.Requests() {
				if req.Token == late {
					t.Errorf("the push service got the push at %s, after its SendBy %s", req.At.Format(time.StampMilli), p.SendBy.Format(time.StampMilli))
				}
			}
		})
	}
}

// TestSendAnswerBounded: the answer is back as soon as its status is: an
// endless or a huge body holds neither Send nor its outcome (Send returns
// well within its caller's deadline, which an unbounded read would reach).
func TestSendAnswerBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  fake.Answer
		outcome providers.Outcome
	}{
		{"endless 201", fake.OK().WithEndlessBody(), providers.Delivered},
		{"endless 500", fake.Status(http.StatusInternalServerError).WithEndlessBody(), providers.Transient},
		{"huge 400", fake.Status(http.StatusBadRequest).WithBodySize(64 << 20), providers.Permanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, s := startHostile(t, fake.WebPushOptions{})
			tok := subscribe(t, f, "")
			f.Script(tok, tc.answer)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			r := s.Send(ctx, alertPush(tok))
			if r.Outcome != tc.outcome {
				t.Errorf("Send = %+v, want %s", r, tc.outcome)
			}
			if ctx.Err() != nil {
				t.Errorf("Send returned only at its caller's deadline: the body held it")
			}
		})
	}
}
