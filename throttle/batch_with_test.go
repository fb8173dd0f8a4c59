package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

// TestReserveBatchWith: the caller's commands and the bookings share one
// round trip; the caller reads its results afterwards, and its failing
// command does not fail the bookings.
func TestReserveBatchWith(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := redistest.Client(t)
	opts := *base.Options()
	rdb := redis.NewClient(&opts)
	t.Cleanup(func() { _ = rdb.Close() })
	counter := &redistest.RoundTrips{}
	rdb.AddHook(counter)
	prefix := redistest.Prefix(t)
	l, err := throttle.NewRedis(rdb, mustPolicy(t, "1/1m", "1s"), throttle.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if !l.Uses(rdb) || l.Uses(base) || l.Uses(nil) {
		t.Errorf("Uses: own client %v, another %v, nil %v; want true, false, false", l.Uses(rdb), l.Uses(base), l.Uses(nil))
	}
	mine := prefix + "mine"
	t.Cleanup(func() { rdb.Del(context.Background(), mine, l.Key("a"), l.Key("b")) })
	// Warm the script cache so the count below is the steady state.
	if _, err := l.ReserveBatch(ctx, []throttle.Request{{User: "warm", Member: "w"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), l.Key("warm")) })

	before := counter.Count()
	var set *redis.StatusCmd
	var bad *redis.IntCmd
	res, err := l.ReserveBatchWith(ctx, []throttle.Request{{User: "a", Member: "a1"}, {User: "b", Member: "b1"}}, func(p redis.Pipeliner) {
		set = p.Set(ctx, mine, "x", time.Minute)
		bad = p.Incr(ctx, mine+":nan") // set below to a non-integer: fails
	})
	if err != nil {
		t.Fatalf("ReserveBatchWith: %v", err)
	}
	if got := counter.Count() - before; got != 1 {
		t.Errorf("%d round trips, want 1", got)
	}
	if set.Err() != nil {
		t.Errorf("the caller's SET: %v", set.Err())
	}
	if v, err := rdb.Get(ctx, mine).Result(); err != nil || v != "x" {
		t.Errorf("the caller's key holds %q, %v; want x", v, err)
	}
	if bad.Err() != nil {
		t.Errorf("INCR of a missing key: %v", bad.Err())
	}
	for i, r := range res {
		if r.Now.IsZero() || r.Wait != 0 || r.Existing {
			t.Errorf("booking %d: %+v, want a fresh booking for now", i, r)
		}
	}

	// A caller's command that fails leaves the bookings alone.
	if err := rdb.Set(ctx, mine+":nan", "not a number", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), mine+":nan") })
	res, err = l.ReserveBatchWith(ctx, []throttle.Request{{User: "a", Member: "a1"}}, func(p redis.Pipeliner) {
		bad = p.Incr(ctx, mine+":nan")
	})
	if err != nil || len(res) != 1 || !res[0].Existing {
		t.Errorf("after the caller's failing command: %+v, %v; want a1's existing booking", res, err)
	}
	if bad.Err() == nil {
		t.Error("INCR of a string: no error, want one")
	}
}

// The caller's commands run even when no request is left to book (every
// one named an unknown category): the caller still reads their results.
func TestReserveBatchWithNothingToBook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	l, err := throttle.NewRedis(rdb, mustPolicy(t, "1/1m", ""), throttle.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	mine := prefix + "mine"
	t.Cleanup(func() { rdb.Del(context.Background(), mine) })
	var set *redis.StatusCmd
	rs, err := l.ReserveBatchWith(ctx, []throttle.Request{{User: "a", Member: "m", Category: "nope"}},
		func(p redis.Pipeliner) { set = p.Set(ctx, mine, "x", time.Minute) })
	if err == nil || len(rs) != 1 || !rs[0].Now.IsZero() {
		t.Errorf("reservations %+v, error %v: want the request failed", rs, err)
	}
	if set == nil || set.Err() != nil || rdb.Get(ctx, mine).Val() != "x" {
		t.Errorf("the caller's command did not run: %v", set)
	}
}
