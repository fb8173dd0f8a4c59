package apns_test

import (
	"context"
	"sync"
	"testing"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
)

// TestWarm: Warm opens the one connection the sends then share; it records
// no push at the fake.
func TestWarm(t *testing.T) {
	f, s := startFake(t)
	ctx := context.Background()
	if err := s.Warm(ctx); err != nil {
		t.Fatalf("Warm: %v", err)
	}
	if got := f.Connections(); got != 1 {
		t.Fatalf("after Warm: %d connections, want 1", got)
	}
	if got := len(f.Requests()); got != 0 {
		t.Fatalf("Warm recorded %d pushes, want 0", got)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			r := s.Send(ctx, providers.Push{
				ID: "warm/0", Platform: payload.APNs, Token: deviceToken,
				Content: &payload.Content{Alert: &payload.Alert{Title: "t"}},
			})
			if r.Outcome != providers.Delivered {
				t.Errorf("Send: %v %s %v", r.Outcome, r.Reason, r.Err)
			}
		})
	}
	wg.Wait()
	if got := f.Connections(); got != 1 {
		t.Errorf("after 20 concurrent sends: %d connections, want the one Warm opened", got)
	}
}

// TestWarmUnreachable: Warm says so when APNs does not answer.
func TestWarmUnreachable(t *testing.T) {
	f, s := startFake(t)
	f.Close()
	if err := s.Warm(context.Background()); err == nil {
		t.Fatal("Warm against a closed server: nil error, want one")
	}
}
