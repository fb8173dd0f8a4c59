package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

// TestMovedUserCollapseRecordsSplit: a default user whose id reads like
// another app's (courier:alice) has its keys at {:courier:alice} on this
// build and had them at {courier:alice} on builds before the move
// (CHANGELOG.md, "Limiter keys"), which is the key this build gives app
// courier's alice. So while processes of both builds book that user on one
// Redis, its collapse records live in two hashes: a push booked by an old
// process is not collapsed by a newer one with the same collapse key booked
// by a new process (both stay held, both are sent), and an older push
// booked by an old process after that is not refused. On one key (control)
// the newer push takes the older one's place.
func TestMovedUserCollapseRecordsSplit(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	p := mustPolicy(t, "1/1m", "")
	clock := newFakeClock()
	limiter := func(scope string) *throttle.Redis {
		l, err := throttle.NewRedis(rdb, p, throttle.Options{Prefix: prefix, Scope: scope, Clock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// The old build's key for the default user courier:alice is the one this
	// build gives app courier's alice.
	oldBuild, newBuild := limiter("courier"), limiter("")
	if got, want := oldBuild.Key("alice"), prefix+"{courier:alice}"; got != want {
		t.Fatalf("old key %s, want %s", got, want)
	}
	if got, want := newBuild.Key("courier:alice"), prefix+"{:courier:alice}"; got != want {
		t.Fatalf("new key %s, want %s", got, want)
	}
	ctx := context.Background()
	accepted := time.UnixMilli(1_700_000_000_000)
	book := func(l *throttle.Redis, user, member string, acceptedAfter time.Duration) throttle.Reservation {
		t.Helper()
		rs, err := l.ReserveBatch(ctx, []throttle.Request{{User: user, Member: member, CollapseKey: "score", Accepted: accepted.Add(acceptedAfter)}})
		if err != nil {
			t.Fatal(err)
		}
		return rs[0]
	}

	t.Run("one key", func(t *testing.T) {
		book(newBuild, "one", "sent-now", 0)
		if a := book(newBuild, "one", "a", time.Second); a.Refused != "" || !a.At.After(clock.Now()) {
			t.Fatalf("a: %+v, want held", a)
		}
		if b := book(newBuild, "one", "b", 2*time.Second); b.Collapsed != "a" {
			t.Errorf("b on the same key: %+v, want it to collapse a", b)
		}
	})

	t.Run("old and new keys", func(t *testing.T) {
		book(oldBuild, "alice", "sent-now", 0)
		a := book(oldBuild, "alice", "a", time.Second)
		if a.Refused != "" || !a.At.After(clock.Now()) {
			t.Fatalf("a (old build): %+v, want held", a)
		}
		b := book(newBuild, "courier:alice", "b", 2*time.Second)
		if b.Refused != "" || b.Collapsed != "" {
			t.Errorf("b (new build): %+v, want booked without collapsing a (the records are split)", b)
		}
		// An older push (accepted before b) booked by an old process is not
		// refused: the old hash never heard of b.
		if c := book(oldBuild, "alice", "c", 1500*time.Millisecond); c.Refused != "" || c.Collapsed != "a" {
			t.Errorf("c (old build, accepted before b): %+v, want booked in a's place", c)
		}
		for _, key := range []string{oldBuild.Key("alice") + ":k", newBuild.Key("courier:alice") + ":k"} {
			if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 1 {
				t.Errorf("collapse hash %s: exists %d (%v), want both hashes", key, n, err)
			}
		}
	})
}
