package throttle_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

// A user's collapse records are bounded by what its windows hold: two
// pushes every 30 minutes for 14 days, each with a collapse key of its own
// and one of them collapsing a held push of a shared key, leave at most
// the records of the last day's bookings, and none beyond the newest
// booking's once the windows pass.
func TestCollapseRecordsStayBounded(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
	const perDay = 48 // rounds of pushes in the longest window
	impls := []struct {
		name    string
		build   func(p throttle.Policy, o throttle.Options) (limiter, func() int)
		options throttle.Options
	}{
		{"memory", func(p throttle.Policy, o throttle.Options) (limiter, func() int) {
			m, err := throttle.NewMemory(p, o)
			if err != nil {
				t.Fatal(err)
			}
			return m, func() int { return throttle.CollapseRecords(m, "u") }
		}, throttle.Options{}},
		{"redis", func(p throttle.Policy, o throttle.Options) (limiter, func() int) {
			o.Prefix = prefix
			r, err := throttle.NewRedis(rdb, p, o)
			if err != nil {
				t.Fatal(err)
			}
			return r, func() int { return int(rdb.HLen(context.Background(), r.Key("u")+":k").Val()) }
		}, throttle.Options{}},
	}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			clock := newFakeClock()
			o := impl.options
			o.Clock = clock.Now
			l, records := impl.build(mustPolicy(t, "10/1m,100/24h", "3s"), o)
			ctx := context.Background()
			book := func(member, key string, acc int64) throttle.Reservation {
				t.Helper()
				rs, err := l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: member, CollapseKey: key, Accepted: time.UnixMilli(acc)}})
				if err != nil {
					t.Fatal(err)
				}
				return rs[0]
			}
			most := 0
			for i := range 14 * perDay {
				now := clock.ms.Add(30 * 60 * 1000)
				book(fmt.Sprintf("own-%d", i), fmt.Sprintf("key-%d", i), now)
				held := book(fmt.Sprintf("held-%d", i), "score", now)
				if held.Wait == 0 {
					t.Fatalf("round %d: the second push was not held: %+v", i, held)
				}
				if r := book(fmt.Sprintf("newer-%d", i), "score", now+1); r.Collapsed != fmt.Sprintf("held-%d", i) {
					t.Fatalf("round %d: the newer push collapsed %q, want the held one", i, r.Collapsed)
				}
				most = max(most, records())
			}
			// Per booking within a day: its key's record, and per collapse
			// the collapsed member's.
			if bound := 3*perDay + 3; most > bound {
				t.Errorf("%d collapse records at most over 14 days, want at most %d (a day's)", most, bound)
			}
			clock.ms.Add(25 * 60 * 60 * 1000)
			book("after", "key-after", clock.ms.Load())
			if n := records(); n != 1 {
				t.Errorf("%d collapse records once the windows passed, want 1 (the last booking's)", n)
			}
		})
	}
}

// A collapse record written as a bare member (the form kept before records
// had an end) still collapses, as a push accepted at 0, and is rewritten
// to end with the window like every other record.
func TestRedisCollapseReadsBareRecords(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
	clock := newFakeClock()
	l, err := throttle.NewRedis(rdb, mustPolicy(t, "10/1m", "3s"), throttle.Options{Prefix: prefix, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	book := func(member, key string) throttle.Reservation {
		t.Helper()
		rs, err := l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: member, CollapseKey: key, Accepted: clock.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		return rs[0]
	}
	book("sent", "other")
	if r := book("held", "score"); r.Wait == 0 {
		t.Fatalf("held: %+v, want held", r)
	}
	hash := l.Key("u") + ":k"
	if err := rdb.HSet(ctx, hash, "k::score", "held", "k::other", "sent", "x:gone", "sent").Err(); err != nil {
		t.Fatal(err)
	}
	if r := book("newer", "score"); r.Collapsed != "held" {
		t.Errorf("newer: %+v, want it to collapse held", r)
	}
	if r := book("gone", "score"); r.Refused != throttle.RefusedCollapsed {
		t.Errorf("gone: %+v, want refused collapsed", r)
	}
	for f, v := range rdb.HGetAll(ctx, hash).Val() {
		if !strings.Contains(v, " ") {
			t.Errorf("record %s = %q after a booking, want it rewritten with its end", f, v)
		}
	}
	clock.ms.Add(2 * 60 * 1000)
	book("later", "again")
	if n := rdb.HLen(ctx, hash).Val(); n != 1 {
		t.Errorf("%d collapse records once the window passed, want 1", n)
	}
}
