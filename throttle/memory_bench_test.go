package throttle_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hushpush/hush/throttle"
)

// BenchmarkMemoryReserveBookedAhead: one user already booked far ahead
// (10/1m,100/24h with a 3 s gap; each Reserve adds a booking at the end),
// the case `hush simulate` meets without --ttl on heavy users. Compare the
// per-op time at 1,000 and 5,000 bookings.
func BenchmarkMemoryReserveBookedAhead(b *testing.B) {
	for _, booked := range []int{1000, 5000} {
		b.Run(strconv.Itoa(booked), func(b *testing.B) {
			p, err := throttle.ParsePolicy("10/1m,100/24h", "3s")
			if err != nil {
				b.Fatal(err)
			}
			now := time.UnixMilli(1_800_000_000_000)
			m, err := throttle.NewMemory(p, throttle.Options{Clock: func() time.Time { return now }})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for i := range booked {
				if _, err := m.Reserve(ctx, "heavy", "pre"+strconv.Itoa(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				// Book one more and give it back: the user stays at
				// `booked` bookings.
				member := "m" + strconv.Itoa(i)
				i++
				if _, err := m.Reserve(ctx, "heavy", member); err != nil {
					b.Fatal(err)
				}
				if _, err := m.Release(ctx, "heavy", member); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
