package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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

// TestStatusNamesWhatHoldsEachBooking: a status names, for each booking
// after now, the first rule of its set that holds it (the limits before
// the gap; a category's own rule for the category's entry, which its
// global entry does not name), and nothing for an entry at or before now.
func TestStatusNamesWhatHoldsEachBooking(t *testing.T) {
	t.Parallel()
	for name, newLimiter := range map[string]newLimiterFunc{"memory": newMemoryLimiter, "redis": redisLimiters(redistest.Client(t))} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := throttle.Policy{Limits: []throttle.Limit{{N: 2, Window: time.Minute}}, MinGap: 3 * time.Second,
				Categories: map[string]throttle.Category{"marketing": {Limits: []throttle.Limit{{N: 1, Window: time.Hour}}}}}
			clock := newFakeClock()
			l := newLimiter(t, p, throttle.Options{Clock: clock.Now})
			ctx := context.Background()
			for _, q := range []throttle.Request{
				{User: "u", Member: "now"},                           // t0
				{User: "u", Member: "gap"},                           // t0+3s: the gap
				{User: "u", Member: "window"},                        // t0+1m: 2/1m
				{User: "u", Member: "promo", Category: "marketing"},  // t0+1m3s: the gap (marketing's 1/1h is free)
				{User: "u", Member: "promo2", Category: "marketing"}, // t0+1h: marketing's 1/1h
			} {
				if _, err := l.ReserveBatch(ctx, []throttle.Request{q}); err != nil {
					t.Fatal(err)
				}
			}
			st, err := l.Status(ctx, "u", nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, e := range st.Entries {
				got[e.Member] = e.HeldBy
			}
			for _, c := range st.Categories {
				for _, e := range c.Entries {
					got[c.Name+":"+e.Member] = e.HeldBy
				}
			}
			want := map[string]string{"now": "", "gap": "min-gap 3s", "window": "2/1m", "promo": "2/1m", "promo2": "",
				"marketing:promo": "", "marketing:promo2": "marketing 1/1h"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("HeldBy by member (-want +got):\n%s", diff)
			}
		})
	}
}
