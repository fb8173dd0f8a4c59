package throttle_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/throttle"
)

// BenchmarkPendingBookings measures what one user's bookings cost each
// decision for that user (issue 10, item 7), under the production policy
// 10/1m,100/24h with a 3 s gap and a fixed injected clock, one decision at a
// time (g=1), each case on its own redis-server (see bench_test.go for the
// metrics). The user of a case is
//
//	fresh           one with no entries (a new one per decision)
//	cap=P/held=H    one holding H bookings after now, with MaxPending P
//	nocap/held=H    the same without a cap (NoMaxPending)
//
// and its decision
//
//	Reserve      a new member: a fresh user books now; at the cap it is
//	             RefusedFull before any sweep; without a cap it sweeps and
//	             books after the others (the set grows by one a decision)
//	ReserveLate  a new member with NotAfter = now, one place under the cap:
//	             it sweeps to its slot and books nothing (RefusedLate), the
//	             dearest Reserve under the cap (booking costs one ZADD more)
//	Allow        denied behind the bookings, after sweeping them (a fresh
//	             user is allowed and recorded)
//
// Compare each redis-cpu-us/decision with the fresh user's for the ratio:
//
//	go test -run '^$' -bench PendingBookings -benchtime 2s ./throttle/
func BenchmarkPendingBookings(b *testing.B) {
	reserve := func(ctx context.Context, l *throttle.Redis, user, member string, _ time.Time) error {
		_, err := l.Reserve(ctx, user, member)
		return err
	}
	reserveLate := func(ctx context.Context, l *throttle.Redis, user, member string, now time.Time) error {
		_, err := l.ReserveBatch(ctx, []throttle.Request{{User: user, Member: member, NotAfter: now}})
		return err
	}
	allow := func(ctx context.Context, l *throttle.Redis, user, _ string, _ time.Time) error {
		_, err := l.Allow(ctx, user)
		return err
	}
	cases := []struct {
		name       string
		held       int // bookings after now; 0: a fresh user per decision
		maxPending int
		decide     func(ctx context.Context, l *throttle.Redis, user, member string, now time.Time) error
	}{
		{"fresh/Reserve", 0, 1000, reserve},
		{"fresh/Allow", 0, 1000, allow},
		{"cap=1000/held=1000/Reserve", 1000, 1000, reserve},
		{"cap=1000/held=999/ReserveLate", 999, 1000, reserveLate},
		{"cap=1000/held=1000/Allow", 1000, 1000, allow},
		{"cap=100/held=100/Allow", 100, 100, allow},
		{"nocap/held=10000/Reserve", 10_000, throttle.NoMaxPending, reserve},
		{"nocap/held=10000/Allow", 10_000, throttle.NoMaxPending, allow},
	}
	p := mustPolicy(b, "10/1m,100/24h", "3s")
	now := time.UnixMilli(t0)
	clock := func() time.Time { return now }
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			rdb := benchRedis(b, 1)
			l, err := throttle.NewRedis(rdb, p, throttle.Options{Prefix: "bench:pending:", Clock: clock, MaxPending: c.maxPending})
			if err != nil {
				b.Fatal(err)
			}
			if c.held > 0 {
				holdBookings(b, rdb, l, p, now, "heavy", c.held)
			}
			call := func(ctx context.Context, i int64) error {
				user := "heavy"
				if c.held == 0 {
					user = "fresh-" + strconv.FormatInt(i, 10)
				}
				return c.decide(ctx, l, user, "new-"+strconv.FormatInt(i, 10), now)
			}
			measure(b, rdb, 1, 1, 10, []string{"evalsha", "eval"}, call)
		})
	}
}

// holdBookings gives user held bookings after now (and one at now, the
// first), booked by the in-memory limiter, which decides the same as the
// Redis one (the shared suite proves it), and written with one ZADD in the
// documented schema: booking 10,000 through Redis would take over a minute,
// as each booking sweeps the ones before it, which is what is measured.
func holdBookings(b *testing.B, rdb *redis.Client, l *throttle.Redis, p throttle.Policy, now time.Time, user string, held int) {
	b.Helper()
	ctx := context.Background()
	m, err := throttle.NewMemory(p, throttle.Options{Clock: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	zs := make([]redis.Z, 0, held+1)
	for i := range held + 1 {
		member := "held-" + strconv.Itoa(i)
		r, err := m.Reserve(ctx, user, member)
		if err != nil {
			b.Fatal(err)
		}
		zs = append(zs, redis.Z{Score: float64(r.At.UnixMilli()), Member: member})
	}
	if err := rdb.ZAdd(ctx, l.Key(user), zs...).Err(); err != nil {
		b.Fatal(err)
	}
	st, err := l.Status(ctx, user, nil)
	if err != nil {
		b.Fatal(err)
	}
	pending := 0
	for _, e := range st.Entries {
		if e.At.After(now) {
			pending++
		}
	}
	if pending != held {
		b.Fatalf("%s holds %d bookings after now, want %d", user, pending, held)
	}
}
