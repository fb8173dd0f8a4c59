package throttle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
	"github.com/redis/go-redis/v9"
)

// hostileIDs are user ids that look like another scope's user, break
// the braces of a hash tag, or are otherwise odd.
var hostileIDs = []string{
	"alice", "courier:alice", "courier", ":courier:alice", "::courier:alice",
	"}", "}}", "}alice", "}courier:alice", "{", "{}", "{}}", "a}b", "a{b}c",
	":", "::", ":}", "}:", "alice}:k", "alice}:c:news", "x:}", " ", " }",
	"User:42", "Ünïcødé:ü", "日本}語", "courier:", "-:x",
}

// hashTag is what Redis Cluster hashes of key: the text between its first
// "{" and the first "}" after it, when that is not empty; else the key.
func hashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

// Plain ids keep their keys, scoped ones too; an unscoped id that a
// scoped key could read the same is written after a ":".
func TestKeyOfEachKindOfID(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"}) // never dialled
	t.Cleanup(func() { rdb.Close() })
	mk := func(scope string) *throttle.Redis {
		l, err := throttle.NewRedis(rdb, clusterPolicy, throttle.Options{Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	none, courier := mk(""), mk("courier")
	for _, c := range []struct {
		name string
		l    *throttle.Redis
		user string
		want string
	}{
		{"plain", none, "u-42", "hush:throttle:{u-42}"},
		{"email", none, "alice@example.com", "hush:throttle:{alice@example.com}"},
		{"colon after no scope name", none, "User:42", "hush:throttle:{User:42}"},
		{"colon after a long name", none, strings.Repeat("a", 33) + ":1", "hush:throttle:{" + strings.Repeat("a", 33) + ":1}"},
		{"brace inside", none, "a}b", "hush:throttle:{a}b}"},
		{"looks scoped", none, "courier:alice", "hush:throttle:{:courier:alice}"},
		{"ends with a colon", none, "courier:", "hush:throttle:{:courier:}"},
		{"leading colon", none, ":alice", "hush:throttle:{::alice}"},
		{"leading brace", none, "}alice", "hush:throttle:{:}alice}"},
		{"scoped", courier, "alice", "hush:throttle:{courier:alice}"},
		{"scoped, looks scoped", courier, "courier:alice", "hush:throttle:{courier:courier:alice}"},
		{"scoped, leading brace", courier, "}alice", "hush:throttle:{courier:}alice}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.l.Key(c.user); got != c.want {
				t.Errorf("Key(%q) = %q, want %q", c.user, got, c.want)
			}
		})
	}
	for _, prefix := range []string{"a{b:", "a}b:"} {
		if _, err := throttle.NewRedis(rdb, clusterPolicy, throttle.Options{Prefix: prefix}); err == nil {
			t.Errorf("prefix %q, which moves the hash tag, was accepted", prefix)
		}
	}
}

// No two users of any scopes share a key, nor a user's set another's
// category set or collapse hash, and every key of one user has one
// non-empty hash tag (one Redis Cluster slot).
func TestKeysAreNeverShared(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"}) // never dialled
	t.Cleanup(func() { rdb.Close() })
	type owner struct{ scope, user, set string }
	seen := map[string]owner{}
	for _, scope := range []string{"", "courier", "c", "k", "news"} {
		l, err := throttle.NewRedis(rdb, clusterPolicy, throttle.Options{Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		for _, user := range hostileIDs {
			tag := hashTag(l.Key(user))
			for _, set := range []string{"", ":c:news", ":c:k", ":k"} {
				key, me := l.Key(user)+set, owner{scope, user, set}
				if o, ok := seen[key]; ok {
					t.Errorf("%q is the key of %+v and of %+v", key, o, me)
				}
				seen[key] = me
				switch got := hashTag(key); {
				case got == key:
					t.Errorf("%+v: key %q has no hash tag", me, key)
				case got != tag:
					t.Errorf("%+v: key %q has the hash tag %q, want %q, the one of %q", me, key, got, tag, l.Key(user))
				}
			}
		}
	}
}

// A default-app user whose id reads like another app's user
// ("courier:alice") keeps a budget of its own: its booking does not
// wait on courier's alice, its status does not show hers, and its reset
// leaves hers.
func TestUnscopedUserIsNotAScopedOne(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
	p := mustPolicy(t, "1/1h", "")
	mk := func(scope string) *throttle.Redis {
		l, err := throttle.NewRedis(rdb, p, throttle.Options{Prefix: prefix, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	none, courier := mk(""), mk("courier")
	ctx := context.Background()
	if r, err := courier.Reserve(ctx, "alice", "m1"); err != nil || r.Wait != 0 {
		t.Fatalf("courier's alice: %+v, %v; want a booking now", r, err)
	}
	st, err := none.Status(ctx, "courier:alice", time.UTC)
	if err != nil || len(st.Entries) != 0 {
		t.Errorf("default's courier:alice: status %+v, %v; want no entries", st.Entries, err)
	}
	if r, err := none.Reserve(ctx, "courier:alice", "m2"); err != nil || r.Wait != 0 || r.Refused != "" {
		t.Errorf("default's courier:alice: %+v, %v; want a booking now", r, err)
	}
	if err := none.Reset(ctx, "courier:alice"); err != nil {
		t.Fatal(err)
	}
	st, err = courier.Status(ctx, "alice", time.UTC)
	if err != nil || len(st.Entries) != 1 || st.Entries[0].Member != "m1" {
		t.Errorf("courier's alice after default's courier:alice was reset: %+v, %v; want m1 still booked", st.Entries, err)
	}
}

// On Redis Cluster every user's keys share one slot, whatever the id
// holds: a booking with a category and a collapse key (three keys),
// status and reset work for hostile ids, scoped or not, one at a time
// and in one batch, and no two of them share a budget.
func TestRedisClusterHostileUserIDs(t *testing.T) {
	t.Parallel()
	_, rdb, none := clusterLimiter(t)
	courier, err := throttle.NewRedis(rdb, clusterPolicy, throttle.Options{Prefix: redistest.Prefix(t), Scope: "courier"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, l := range map[string]*throttle.Redis{"default": none, "courier": courier} {
		// One request each, in one batch: the first booking of each id is
		// due now, so no id waits on another's.
		var batch []throttle.Request
		for _, u := range hostileIDs {
			batch = append(batch, throttle.Request{User: u, Member: "a", Category: "news", CollapseKey: "c"})
		}
		res, err := l.ReserveBatch(ctx, batch)
		if err != nil {
			t.Fatalf("%s: batch: %v", name, err)
		}
		for i, r := range res {
			if r.Wait != 0 || r.Refused != "" || r.Existing {
				t.Errorf("%s: %q: first booking %+v, want one due now", name, batch[i].User, r)
			}
		}
		for _, u := range hostileIDs {
			r, err := l.Reserve(ctx, u, "b")
			if err != nil || r.Wait < time.Minute-time.Second {
				t.Errorf("%s: %q: second booking %+v, %v; want it to wait the gap", name, u, r, err)
			}
			st, err := l.Status(ctx, u, time.UTC)
			if err != nil || len(st.Entries) != 2 {
				t.Errorf("%s: %q: status %+v, %v; want its 2 entries", name, u, st.Entries, err)
			}
			if err := l.Reset(ctx, u); err != nil {
				t.Errorf("%s: %q: reset: %v", name, u, err)
			}
			if r, err := l.Reserve(ctx, u, "c"); err != nil || r.Wait != 0 {
				t.Errorf("%s: %q: booking after the reset %+v, %v; want one due now", name, u, r, err)
			}
		}
	}
}
