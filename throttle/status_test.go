package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

// Status names a next allowed instant outside the quiet hours however far
// ahead it lies: past the quiet-hours lookahead (62 days) too, where
// Reserve refuses a booking as late.
func TestStatusNextAllowedIsNeverQuiet(t *testing.T) {
	t.Parallel()
	for name, newLimiter := range map[string]newLimiterFunc{"memory": newMemoryLimiter, "redis": redisLimiters(redistest.Client(t))} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// One push per 90 days; quiet from 22:00 to 08:00 UTC.
			p := throttle.Policy{Limits: []throttle.Limit{{N: 1, Window: 90 * 24 * time.Hour}}, Quiet: throttle.Quiet{From: 22 * time.Hour, To: 8 * time.Hour}}
			now := time.Date(2027, 1, 10, 21, 30, 0, 0, time.UTC)
			clock := newFakeClock()
			clock.ms.Store(now.UnixMilli())
			l := newLimiter(t, p, throttle.Options{Clock: clock.Now})
			ctx := context.Background()
			if d, err := l.Allow(ctx, "u"); err != nil || !d.Allowed {
				t.Fatalf("allow: %+v, %v", d, err)
			}
			st, err := l.Status(ctx, "u", nil)
			if err != nil {
				t.Fatal(err)
			}
			// 90 days later is 21:30; quiet begins at 22:00, so 21:30 is free.
			if want := now.Add(90 * 24 * time.Hour); !st.NextAllowed.Equal(want) {
				t.Errorf("next allowed %s, want %s", st.NextAllowed.UTC(), want)
			}
			clock.ms.Store(now.Add(time.Hour).UnixMilli()) // 22:30
			if d, err := l.Allow(ctx, "v"); err != nil || !d.Allowed {
				t.Fatalf("allow: %+v, %v", d, err)
			}
			st, err = l.Status(ctx, "v", nil)
			if err != nil {
				t.Fatal(err)
			}
			// 90 days after 22:30 is quiet until 08:00 the next morning.
			if want := time.Date(2027, 4, 11, 8, 0, 0, 0, time.UTC); !st.NextAllowed.Equal(want) {
				t.Errorf("next allowed %s, want %s (the end of that night's quiet hours)", st.NextAllowed.UTC(), want)
			}
		})
	}
}
