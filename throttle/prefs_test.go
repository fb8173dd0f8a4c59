package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

// prefsLimiter is a limiter that keeps users' preferences.
type prefsLimiter interface {
	limiter
	PutPreferences(ctx context.Context, user string, p throttle.Preferences) error
	GetPreferences(ctx context.Context, user string) (throttle.Preferences, error)
	DeleteUser(ctx context.Context, user string) error
}

var (
	_ prefsLimiter = (*throttle.Redis)(nil)
	_ prefsLimiter = (*throttle.Memory)(nil)
)

func TestPreferences(t *testing.T) {
	t.Parallel()
	for name, newLimiter := range map[string]newLimiterFunc{"memory": newMemoryLimiter, "redis": redisLimiters(redistest.Client(t))} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("RoundTrip", func(t *testing.T) { testPreferencesRoundTrip(t, newLimiter) })
			t.Run("Bound", func(t *testing.T) { testPreferencesBound(t, newLimiter) })
			t.Run("DeleteUser", func(t *testing.T) { testDeleteUser(t, newLimiter) })
		})
	}
}

func cmpPrefs(a, b throttle.Preferences) bool {
	return cmp.Equal(a.OptOut, b.OptOut) && a.Quiet == b.Quiet && a.Location.String() == b.Location.String() && (a.Location == nil) == (b.Location == nil)
}

func testPreferencesRoundTrip(t *testing.T, newLimiter newLimiterFunc) {
	ctx := context.Background()
	l := newLimiter(t, mustPolicy(t, "5/1m", ""), throttle.Options{}).(prefsLimiter)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	tests := []struct {
		name     string
		put, get throttle.Preferences
	}{
		{"none", throttle.Preferences{}, throttle.Preferences{}},
		{"opt-outs sorted, deduplicated", throttle.Preferences{OptOut: []string{"promo", "digest", "promo"}},
			throttle.Preferences{OptOut: []string{"digest", "promo"}}},
		{"everything", throttle.Preferences{OptOut: []string{"promo"}, Quiet: throttle.Quiet{From: 22 * time.Hour, To: 7 * time.Hour}, Location: berlin},
			throttle.Preferences{OptOut: []string{"promo"}, Quiet: throttle.Quiet{From: 22 * time.Hour, To: 7 * time.Hour}, Location: berlin}},
		{"a zone alone", throttle.Preferences{Location: berlin}, throttle.Preferences{Location: berlin}},
		{"empty again", throttle.Preferences{}, throttle.Preferences{}},
	}
	for _, tt := range tests {
		if err := l.PutPreferences(ctx, "u", tt.put); err != nil {
			t.Fatalf("%s: PutPreferences: %v", tt.name, err)
		}
		got, err := l.GetPreferences(ctx, "u")
		if err != nil {
			t.Fatalf("%s: GetPreferences: %v", tt.name, err)
		}
		if !cmpPrefs(tt.get, got) {
			t.Errorf("%s: GetPreferences = %+v, want %+v", tt.name, got, tt.get)
		}
	}
	if got, err := l.GetPreferences(ctx, "nobody"); err != nil || !cmpPrefs(throttle.Preferences{}, got) {
		t.Errorf("GetPreferences(nobody) = %+v, %v; want none", got, err)
	}
}

func testPreferencesBound(t *testing.T, newLimiter newLimiterFunc) {
	ctx := context.Background()
	l := newLimiter(t, mustPolicy(t, "5/1m", ""), throttle.Options{}).(prefsLimiter)
	many := make([]string, throttle.MaxOptOuts+1)
	for i := range many {
		many[i] = fmt.Sprintf("c%d", i)
	}
	tests := []struct {
		name  string
		p     throttle.Preferences
		field string // "" accepted
	}{
		{"at the bound", throttle.Preferences{OptOut: many[:throttle.MaxOptOuts]}, ""},
		{"over the bound", throttle.Preferences{OptOut: many}, "OptOut"},
		{"not a category name", throttle.Preferences{OptOut: []string{"Promo:x"}}, "OptOut"},
		{"a category name too long", throttle.Preferences{OptOut: []string{string(make([]byte, throttle.MaxCategoryLen+1))}}, "OptOut"},
		{"quiet hours past a day", throttle.Preferences{Quiet: throttle.Quiet{From: 25 * time.Hour}}, "Quiet"},
		{"the local zone", throttle.Preferences{Location: time.Local}, "Location"},
		{"a zone without a name", throttle.Preferences{Location: time.FixedZone("", 3600)}, "Location"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := l.PutPreferences(ctx, "u", tt.p)
			var pe *throttle.PreferencesError
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("PutPreferences = %v, want accepted", err)
			case tt.field != "" && !errors.As(err, &pe):
				t.Errorf("PutPreferences = %v, want a *PreferencesError for %s", err, tt.field)
			case tt.field != "" && pe.Field != tt.field:
				t.Errorf("PutPreferences names %q, want %q (%v)", pe.Field, tt.field, err)
			}
		})
	}
}

func testDeleteUser(t *testing.T, newLimiter newLimiterFunc) {
	ctx := context.Background()
	at := time.UnixMilli(1_700_000_000_000)
	p := mustPolicy(t, "1/1m", "")
	p.Categories = map[string]throttle.Category{"promo": {Limits: []throttle.Limit{{N: 1, Window: time.Hour}}}}
	l := newLimiter(t, p, throttle.Options{Clock: func() time.Time { return at }}).(prefsLimiter)
	if err := l.PutPreferences(ctx, "u", throttle.Preferences{OptOut: []string{"news"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: "a", Category: "promo", CollapseKey: "k"}, {User: "u", Member: "b"}, {User: "v", Member: "c"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteUser(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got, err := l.GetPreferences(ctx, "u"); err != nil || !cmpPrefs(throttle.Preferences{}, got) {
		t.Errorf("GetPreferences after DeleteUser = %+v, %v; want none", got, err)
	}
	st, err := l.Status(ctx, "u", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Entries) != 0 || len(st.Categories[0].Entries) != 0 {
		t.Errorf("Status after DeleteUser = %+v, want no entries", st)
	}
	if st, _ := l.Status(ctx, "v", nil); len(st.Entries) != 1 {
		t.Errorf("another user's entries = %+v, want its one booking kept", st.Entries)
	}
}

// DeleteUser leaves no key of the user in Redis.
func TestRedisDeleteUserLeavesNoKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := mustPolicy(t, "1/1m", "1s")
	p.Categories = map[string]throttle.Category{"promo": {Limits: []throttle.Limit{{N: 1, Window: time.Hour}}}}
	l := redisLimiters(rdb)(t, p, throttle.Options{Scope: "app"}).(*throttle.Redis)
	if err := l.PutPreferences(ctx, "u", throttle.Preferences{OptOut: []string{"news"}, Quiet: throttle.Quiet{From: time.Hour, To: 2 * time.Hour}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: "a", Category: "promo", CollapseKey: "k"}, {User: "u", Member: "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteUser(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, l.Key("u")+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("keys left after DeleteUser: %q", keys)
	}
}

func TestOptOut(t *testing.T) {
	t.Parallel()
	for name, newLimiter := range map[string]newLimiterFunc{"memory": newMemoryLimiter, "redis": redisLimiters(redistest.Client(t)), "cluster": redisLimiters(oneNodeCluster(t))} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testOptOut(t, newLimiter)
		})
	}
}

func testOptOut(t *testing.T, newLimiter newLimiterFunc) {
	ctx := context.Background()
	p := mustPolicy(t, "1/1h", "")
	p.Categories = map[string]throttle.Category{
		"promo":    {Limits: []throttle.Limit{{N: 5, Window: time.Hour}}},
		"news":     {},                 // no set of its own: booked in the global set
		"solo":     {SkipGlobal: true}, // no rule at all
		"security": {Required: true},
	}
	tests := []struct {
		name   string
		optOut []string
		req    throttle.Request
		want   throttle.Refusal
		booked bool // whether the request used budget
	}{
		{"no preferences", nil, throttle.Request{Category: "promo"}, "", true},
		{"another category opted out", []string{"news"}, throttle.Request{Category: "promo"}, "", true},
		{"opted out, own set", []string{"promo"}, throttle.Request{Category: "promo"}, throttle.RefusedOptedOut, false},
		{"opted out, global set only", []string{"news"}, throttle.Request{Category: "news"}, throttle.RefusedOptedOut, false},
		{"opted out, no set", []string{"solo"}, throttle.Request{Category: "solo"}, throttle.RefusedOptedOut, false},
		{"opted out with a collapse key", []string{"promo"}, throttle.Request{Category: "promo", CollapseKey: "k"}, throttle.RefusedOptedOut, false},
		{"opted out, critical", []string{"promo"}, throttle.Request{Category: "promo", Critical: true}, "", true},
		{"required category", []string{"security"}, throttle.Request{Category: "security"}, "", true},
		{"no category is never opted out", []string{"promo"}, throttle.Request{}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := time.UnixMilli(1_700_000_000_000)
			l := newLimiter(t, p, throttle.Options{Clock: func() time.Time { return at }}).(prefsLimiter)
			if err := l.PutPreferences(ctx, "u", throttle.Preferences{OptOut: tt.optOut}); err != nil {
				t.Fatal(err)
			}
			q := tt.req
			q.User, q.Member = "u", "m1"
			rs, err := l.ReserveBatch(ctx, []throttle.Request{q})
			if err != nil {
				t.Fatal(err)
			}
			if rs[0].Refused != tt.want || (tt.want != "" && !rs[0].At.Equal(at)) {
				t.Errorf("Reserve = %+v, want refused %q at now", rs[0], tt.want)
			}
			// The budget: an uncategorized booking after it waits only when
			// the first used the global 1/1h (solo skips the global rules).
			r2, err := l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: "m2"}})
			if err != nil {
				t.Fatal(err)
			}
			usedGlobal := tt.booked && q.Category != "solo"
			if got := r2[0].Wait > 0; got != usedGlobal {
				t.Errorf("next booking's wait = %v; want a wait: %v", r2[0].Wait, usedGlobal)
			}
			st, err := l.Status(ctx, "u", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range st.Categories {
				for _, e := range c.Entries {
					if e.Member == "m1" && !tt.booked {
						t.Errorf("category %s holds m1 %+v, want nothing booked", c.Name, e)
					}
				}
			}
		})
	}
}

// A held booking whose category the user opts out of afterwards is
// refused when it wakes to check its slot, and its booking is given back.
func TestOptOutHeld(t *testing.T) {
	t.Parallel()
	for name, newLimiter := range map[string]newLimiterFunc{"memory": newMemoryLimiter, "redis": redisLimiters(redistest.Client(t)), "cluster": redisLimiters(oneNodeCluster(t))} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := mustPolicy(t, "1/1h", "")
			p.Categories = map[string]throttle.Category{"promo": {Limits: []throttle.Limit{{N: 5, Window: time.Hour}}}}
			at := time.UnixMilli(1_700_000_000_000)
			l := newLimiter(t, p, throttle.Options{Clock: func() time.Time { return at }}).(prefsLimiter)
			rs, err := l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: "a", Category: "promo"}, {User: "u", Member: "b", Category: "promo"}})
			if err != nil {
				t.Fatal(err)
			}
			if rs[1].Refused != "" || rs[1].Wait != time.Hour {
				t.Fatalf("b = %+v, want held an hour", rs[1])
			}
			if err := l.PutPreferences(ctx, "u", throttle.Preferences{OptOut: []string{"promo"}}); err != nil {
				t.Fatal(err)
			}
			rs, err = l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: "b", Category: "promo"}})
			if err != nil {
				t.Fatal(err)
			}
			if rs[0].Refused != throttle.RefusedOptedOut || rs[0].Existing {
				t.Errorf("b woken = %+v, want RefusedOptedOut", rs[0])
			}
			if found, err := l.Release(ctx, "u", "b"); err != nil || found {
				t.Errorf("Release(b) = %v, %v; want its booking already given back", found, err)
			}
			// Opted back in, b books again, in the hole b left.
			if err := l.PutPreferences(ctx, "u", throttle.Preferences{}); err != nil {
				t.Fatal(err)
			}
			rs, err = l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: "b", Category: "promo"}})
			if err != nil || rs[0].Refused != "" || rs[0].Existing || rs[0].Wait != time.Hour {
				t.Errorf("b after opting back in = %+v, %v; want a new booking an hour ahead", rs, err)
			}
		})
	}
}

// What preferences cost a booking, counted by a private Redis (trims left
// out): the opt-out check is one HEXISTS in the booking's own script call,
// for a booking of a category a user may opt out of, whether the user has
// preferences or not; a booking without a category, of a Required
// category or Critical runs none. An opted-out booking runs HEXISTS and a
// ZREM per set, nothing else. Every booking is one script call, one round
// trip.
func TestRedisPreferencesCommands(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	if !srv.Real() {
		t.Skip("needs a real redis-server for INFO commandstats")
	}
	ctx := context.Background()
	rdb := srv.Client(t)
	hook := &countingHook{}
	rdb.AddHook(hook)
	clock := newFakeClock()
	p := mustPolicy(t, "10/1m", "")
	p.Categories = map[string]throttle.Category{
		"promo":    {Limits: []throttle.Limit{{N: 5, Window: time.Hour}}},
		"security": {Required: true},
	}
	l, err := throttle.NewRedis(rdb, p, throttle.Options{Clock: clock.Now, MaxPending: throttle.NoMaxPending})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.PutPreferences(ctx, "picky", throttle.Preferences{OptOut: []string{"news"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.PutPreferences(ctx, "out", throttle.Preferences{OptOut: []string{"promo"}}); err != nil {
		t.Fatal(err)
	}
	// The script loaded (a first EVALSHA answers NOSCRIPT, then EVAL).
	if _, err := l.Reserve(ctx, "warm", "m"); err != nil {
		t.Fatal(err)
	}
	ignored := func(name string) bool {
		return name == "info" || name == "hello" || name == "evalsha" || name == "eval" || name == "zremrangebyscore" ||
			strings.HasPrefix(name, "client|") || strings.HasPrefix(name, "script|")
	}
	tests := []struct {
		name string
		q    throttle.Request
		want map[string]int64
	}{
		{"no category", throttle.Request{User: "plain"}, map[string]int64{"zcount": 1, "zadd": 1, "pexpire": 1}},
		{"a category, no preferences", throttle.Request{User: "fresh", Category: "promo"}, map[string]int64{"hexists": 1, "zcount": 2, "zadd": 2, "pexpire": 2}},
		{"a category, other opt-outs", throttle.Request{User: "picky", Category: "promo"}, map[string]int64{"hexists": 1, "zcount": 2, "zadd": 2, "pexpire": 2}},
		{"a category, critical", throttle.Request{User: "fresh2", Category: "promo", Critical: true}, map[string]int64{"zcount": 2, "zadd": 2, "pexpire": 2}},
		{"a required category", throttle.Request{User: "fresh3", Category: "security"}, map[string]int64{"zcount": 1, "zadd": 1, "pexpire": 1}},
		{"opted out", throttle.Request{User: "out", Category: "promo"}, map[string]int64{"hexists": 1, "zrem": 2}},
	}
	for _, tt := range tests {
		clock.Set(0)
		before, err := commandCalls(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		scripts := hook.cmds.Load() + hook.pipelined.Load()
		q := tt.q
		q.Member = "m"
		if _, err := l.ReserveBatch(ctx, []throttle.Request{q}); err != nil {
			t.Fatal(err)
		}
		if n := hook.cmds.Load() + hook.pipelined.Load() - scripts; n != 1 {
			t.Errorf("%s: %d script calls, want 1", tt.name, n)
		}
		after, err := commandCalls(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		ran := map[string]int64{}
		for name, c := range after {
			if d := c - before[name]; d > 0 && !ignored(name) {
				ran[name] = d
			}
		}
		if d := cmp.Diff(tt.want, ran); d != "" {
			t.Errorf("%s: commands (-want +got):\n%s", tt.name, d)
		}
	}
}

// Random traces of bookings, releases and preference changes, replayed on
// the Redis limiter and the memory limiter side by side: every answer
// agrees. The seed is in the subtest's name, so a failure replays.
func TestRandomPreferenceTraces(t *testing.T) {
	t.Parallel()
	rdb, cc := redistest.Client(t), oneNodeCluster(t)
	p := mustPolicy(t, "3/1m", "1s")
	p.Categories = map[string]throttle.Category{
		"promo":    {Limits: []throttle.Limit{{N: 2, Window: 10 * time.Minute}}},
		"news":     {},
		"solo":     {Limits: []throttle.Limit{{N: 1, Window: 5 * time.Minute}}, SkipGlobal: true},
		"security": {Required: true},
	}
	cats := []string{"", "promo", "news", "solo", "security"}
	// The traces must keep opting out: count the refusals they meet.
	var optedOut, held atomic.Int64
	t.Cleanup(func() {
		t.Logf("%d opted-out and %d held answers", optedOut.Load(), held.Load())
		if optedOut.Load() < 30 || held.Load() < 30 {
			t.Errorf("%d opted-out and %d held answers in all traces, want at least 30 of each", optedOut.Load(), held.Load())
		}
	})
	for seed := range uint64(30) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 0x9ef5))
			clock := newFakeClock()
			o := throttle.Options{Clock: clock.Now, MaxPending: []int{throttle.NoMaxPending, 3}[rng.IntN(2)], CollapseMargin: time.Second}
			mem := newMemoryLimiter(t, p, o).(prefsLimiter)
			red := redisLimiters(rdb)(t, p, o).(prefsLimiter)
			if seed%2 == 1 { // the cluster's node form
				red = redisLimiters(cc)(t, p, o).(prefsLimiter)
			}
			now := int64(0)
			var log []string
			for i := range 150 {
				now += []int64{0, 0, 500, 1000, 20_000, 90_000}[rng.IntN(6)]
				clock.Set(now)
				var want, got any
				var werr, gerr error
				switch k := rng.IntN(10); {
				case k < 6:
					var reqs []throttle.Request
					for range 1 + rng.IntN(3) {
						// A member is one push: its category and priority are its own.
						j := rng.IntN(12)
						q := throttle.Request{User: "u", Member: fmt.Sprint("m", j), Category: cats[j%len(cats)], Critical: j >= 10}
						if rng.IntN(3) == 0 {
							q.CollapseKey = "k"
							q.Accepted = clock.Now()
						}
						if rng.IntN(4) == 0 {
							q.NotAfter = clock.Now().Add(time.Duration(rng.IntN(120)) * time.Second)
						}
						reqs = append(reqs, q)
					}
					log = append(log, fmt.Sprintf("+%d reserve %+v", now, reqs))
					want, werr = mem.ReserveBatch(ctx, reqs)
					got, gerr = red.ReserveBatch(ctx, reqs)
				case k < 7:
					m := fmt.Sprint("m", rng.IntN(12))
					log = append(log, fmt.Sprintf("+%d release %s", now, m))
					want, werr = mem.Release(ctx, "u", m)
					got, gerr = red.Release(ctx, "u", m)
				case k < 9:
					var out []string
					for _, c := range cats[1:] {
						if rng.IntN(2) == 0 {
							out = append(out, c)
						}
					}
					log = append(log, fmt.Sprintf("+%d opt out of %q", now, out))
					werr = mem.PutPreferences(ctx, "u", throttle.Preferences{OptOut: out})
					gerr = red.PutPreferences(ctx, "u", throttle.Preferences{OptOut: out})
				default:
					log = append(log, fmt.Sprintf("+%d status", now))
					want, werr = mem.Status(ctx, "u", nil)
					got, gerr = red.Status(ctx, "u", nil)
				}
				if werr != nil || gerr != nil {
					t.Fatalf("op %d: memory %v, redis %v\n%s", i, werr, gerr, strings.Join(log, "\n"))
				}
				if rs, ok := got.([]throttle.Reservation); ok {
					for _, r := range rs {
						switch {
						case r.Refused == throttle.RefusedOptedOut:
							optedOut.Add(1)
						case r.Refused == "" && r.Wait > 0:
							held.Add(1)
						}
					}
				}
				if d := cmp.Diff(want, got, equateEmpty); d != "" {
					t.Fatalf("op %d: -memory +redis:\n%s\ntrace:\n%s", i, d, strings.Join(log, "\n"))
				}
			}
		})
	}
}

// The embedded development Redis (miniredis, gopher-lua) refuses opted-out
// bookings the same way.
func TestMiniredisOptOut(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	testOptOut(t, redisLimiters(rdb))
	testPreferencesRoundTrip(t, redisLimiters(rdb))
	testDeleteUser(t, redisLimiters(rdb))
}
