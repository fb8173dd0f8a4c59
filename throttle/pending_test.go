package throttle_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

// A flood of 10,000 Reserve calls for one user, from 8 goroutines, under
// the production policy with MaxPending 1000: the user ends with exactly
// 1000 bookings after now (and the one the first call booked at now), and
// every other call is refused for the cap without booking.
func TestMaxPendingFlood(t *testing.T) {
	t.Parallel()
	const (
		calls      = 10_000
		maxPending = 1000
		goroutines = 8
	)
	impls := []struct {
		name string
		new  newLimiterFunc
	}{{"memory", newMemoryLimiter}, {"redis", redisLimiters(redistest.Client(t))}}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			l := impl.new(t, mustPolicy(t, "10/1m,100/24h", "3s"), throttle.Options{Clock: clock.Now, MaxPending: maxPending})
			ctx := context.Background()
			var (
				mu      sync.Mutex
				answers = map[throttle.Refusal]int{}
				firstAt = map[time.Time]int{} // RefusedFull's At
				wg      sync.WaitGroup
				errs    = make(chan error, goroutines)
			)
			for g := range goroutines {
				wg.Go(func() {
					for i := g; i < calls; i += goroutines {
						r, err := l.Reserve(ctx, "flood", fmt.Sprintf("m%d", i))
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						answers[r.Refused]++
						if r.Refused == throttle.RefusedFull {
							firstAt[r.At]++
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			want := map[throttle.Refusal]int{"": maxPending + 1, throttle.RefusedFull: calls - maxPending - 1}
			if diff := cmp.Diff(want, answers); diff != "" {
				t.Errorf("answers by refusal, -want +got:\n%s", diff)
			}
			// The first booking is now; the earliest pending one is a gap later.
			if diff := cmp.Diff(map[time.Time]int{at(3000): calls - maxPending - 1}, firstAt); diff != "" {
				t.Errorf("RefusedFull's At, -want +got:\n%s", diff)
			}
			st, err := l.Status(ctx, "flood", nil)
			if err != nil {
				t.Fatal(err)
			}
			pending := 0
			for _, e := range st.Entries {
				if e.At.After(st.Now) {
					pending++
				}
			}
			if pending != maxPending || len(st.Entries) != maxPending+1 {
				t.Errorf("the user holds %d entries, %d after now; want %d, %d", len(st.Entries), pending, maxPending+1, maxPending)
			}
		})
	}
}

// A limiter built with zero Options caps a user's bookings as `hush serve`
// does by default (HUSH_THROTTLE_MAX_PENDING, 100): with one booking at now
// and 100 after it, the next new member is RefusedFull and books nothing;
// NoMaxPending books it.
func TestZeroOptionsCapPending(t *testing.T) {
	t.Parallel()
	const serveDefault = 100
	impls := []struct {
		name string
		new  newLimiterFunc
	}{{"memory", newMemoryLimiter}, {"redis", redisLimiters(redistest.Client(t))}}
	for _, impl := range impls {
		for _, tt := range []struct {
			name       string
			maxPending int
			want       throttle.Refusal
		}{{"zero", 0, throttle.RefusedFull}, {"none", throttle.NoMaxPending, ""}} {
			t.Run(impl.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				clock := newFakeClock()
				l := impl.new(t, mustPolicy(t, "1/1m", ""), throttle.Options{Clock: clock.Now, MaxPending: tt.maxPending})
				ctx := context.Background()
				for i := range serveDefault + 1 {
					r, err := l.Reserve(ctx, "u", fmt.Sprintf("m%d", i))
					if err != nil {
						t.Fatal(err)
					}
					if r.Refused != "" {
						t.Fatalf("booking %d refused %q", i, r.Refused)
					}
				}
				r, err := l.Reserve(ctx, "u", "one-more")
				if err != nil {
					t.Fatal(err)
				}
				if r.Refused != tt.want {
					t.Errorf("the %dst booking after now: refused %q, want %q", serveDefault+1, r.Refused, tt.want)
				}
			})
		}
	}
}
