package throttle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/throttle"
)

// accepted is a push's accepted instant, ms after t0.
func accepted(ms int64) time.Time { return time.UnixMilli(t0 + ms) }

// policyStep is one ReserveBatch of one request at an explicit time (ms
// after the case's base), or a Status when status is set.
type policyStep struct {
	at      int64
	req     throttle.Request // User "u" filled in
	want    throttle.Reservation
	status  bool
	wantSt  status // with status: Now and times relative to base
	explain string
}

func testPolicies(t *testing.T, newLimiter newLimiterFunc) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// 21:59:59 in Berlin on an ordinary day; quiet hours 22:00-08:00.
	evening := time.Date(2026, 11, 23, 21, 59, 59, 0, berlin).UnixMilli()
	hour := int64(time.Hour / time.Millisecond)
	res := func(at, wait int64, refused throttle.Refusal, collapsed string) throttle.Reservation {
		return throttle.Reservation{At: time.UnixMilli(at), Wait: time.Duration(wait) * time.Millisecond, Refused: refused, Collapsed: collapsed}
	}
	held := func(r throttle.Reservation, by string) throttle.Reservation { r.HeldBy = by; return r }
	// replacedBy is r naming the member that replaced the refused one.
	replacedBy := func(r throttle.Reservation, member string) throttle.Reservation { r.ReplacedBy = member; return r }
	cats := map[string]throttle.Category{
		"marketing": {Limits: []throttle.Limit{{N: 1, Window: 100 * time.Millisecond}}},
		"social":    {MinGap: 50 * time.Millisecond},
		"ops":       {SkipGlobal: true},
		"night":     {Quiet: &throttle.Quiet{}},
	}
	quiet := throttle.Quiet{From: 22 * time.Hour, To: 8 * time.Hour}
	tests := []struct {
		name   string
		policy throttle.Policy
		margin time.Duration
		base   int64
		steps  []policyStep
	}{
		{"a category keeps its own rules and the global ones", throttle.Policy{Limits: []throttle.Limit{{N: 2, Window: time.Second}}, Categories: cats}, 0, t0, []policyStep{
			{0, throttle.Request{Member: "m1", Category: "marketing"}, res(t0, 0, "", ""), false, status{}, "free"},
			{0, throttle.Request{Member: "m2", Category: "marketing"}, held(res(t0+100, 100, "", ""), "marketing 1/100ms"), false, status{}, "marketing's 1/100ms"},
			{0, throttle.Request{Member: "g1"}, held(res(t0+1000, 1000, "", ""), "2/1s"), false, status{}, "the global 2/1s holds m1 and m2"},
			{0, throttle.Request{Member: "o1", Category: "ops"}, res(t0, 0, "", ""), false, status{}, "global=off: nothing applies"},
			{0, throttle.Request{Member: "o2", Category: "ops"}, res(t0, 0, "", ""), false, status{}, "still nothing"},
			{0, throttle.Request{Member: "s1", Category: "social"}, held(res(t0+1100, 1100, "", ""), "2/1s"), false, status{}, "2/1s: no window with m2 and g1"},
			{5, throttle.Request{}, throttle.Reservation{}, true, status{
				Entries: []entry{{"m1", 0}, {"m2", 100}, {"g1", 1000}, {"s1", 1100}}, Remaining: []int{1}, Next: 2000,
				Categories: []catStatus{
					{Name: "marketing", Entries: []entry{{"m1", 0}, {"m2", 100}}, Remaining: []int{0}, Next: 2000},
					{Name: "night", Next: 2000},
					// ops has no rules: its horizon is 1 ms.
					{Name: "ops", Next: 5},
					{Name: "social", Entries: []entry{{"s1", 1100}}, Next: 2000},
				}}, "status per category"},
		}},
		{"quiet hours move a slot to their end in the user's zone", throttle.Policy{MinGap: 10 * time.Millisecond, Quiet: quiet, Categories: cats}, 0, evening, []policyStep{
			{0, throttle.Request{Member: "a", Location: berlin}, res(evening, 0, "", ""), false, status{}, "21:59:59, not quiet yet"},
			{1000, throttle.Request{Member: "b", Location: berlin}, held(res(evening+1000+10*hour, 10*hour, "", ""), "quiet 22:00-08:00"), false, status{}, "22:00 to 08:00"},
			{1000, throttle.Request{Member: "c", Location: time.UTC}, res(evening+1000, 0, "", ""), false, status{}, "21:00 in UTC"},
			{1000, throttle.Request{Member: "d", Location: berlin, Category: "night"}, held(res(evening+1010, 10, "", ""), "min-gap 10ms"), false, status{}, "a category without quiet hours"},
			{1000, throttle.Request{Member: "e", Location: berlin, NotAfter: time.UnixMilli(evening + 2*hour)}, held(res(evening+1000+10*hour+10, 10*hour+10, throttle.RefusedLate, ""), "min-gap 10ms"), false, status{}, "late: its slot after the night is past NotAfter"},
			{2000, throttle.Request{}, throttle.Reservation{}, true, status{
				// a, c and d are older than the global set's horizon
				// (marketing's 100 ms).
				Entries: []entry{{"b", 1000 + 10*hour}}, Next: 10*hour + 1010, Quiet: true,
				Categories: []catStatus{
					{Name: "marketing", Remaining: []int{1}, Next: 10*hour + 1010, Quiet: true},
					{Name: "night", Next: 2000},
					{Name: "ops", Next: 10*hour + 1000, Quiet: true},
					{Name: "social", Next: 10*hour + 1010, Quiet: true},
				}}, "status in Berlin"},
		}},
		{"not before a send-at", throttle.Policy{MinGap: 10 * time.Millisecond}, 0, t0, []policyStep{
			{0, throttle.Request{Member: "a", NotBefore: time.UnixMilli(t0 + 500)}, held(res(t0+500, 500, "", ""), throttle.HeldBySendAt), false, status{}, "at send-at"},
			{0, throttle.Request{Member: "b"}, res(t0, 0, "", ""), false, status{}, "now, before it"},
			{0, throttle.Request{Member: "c", NotBefore: time.UnixMilli(t0 + 495)}, held(res(t0+510, 510, "", ""), "min-gap 10ms"), false, status{}, "not within the gap of a"},
			{600, throttle.Request{Member: "d", NotBefore: time.UnixMilli(t0 + 100)}, res(t0+600, 0, "", ""), false, status{}, "a past send-at is now"},
		}},
		{"a newer push with the same collapse key takes the held one's place", throttle.Policy{Limits: []throttle.Limit{{N: 1, Window: time.Second}}}, 100 * time.Millisecond, t0, []policyStep{
			{0, throttle.Request{Member: "now", CollapseKey: "score"}, res(t0, 0, "", ""), false, status{}, "sent now"},
			{0, throttle.Request{Member: "old", CollapseKey: "score"}, held(res(t0+1000, 1000, "", ""), "1/1s"), false, status{}, "held for a second"},
			{10, throttle.Request{Member: "new", CollapseKey: "score"}, held(res(t0+1000, 990, "", "old"), "1/1s"), false, status{}, "takes old's slot"},
			{20, throttle.Request{Member: "old", CollapseKey: "score"}, replacedBy(res(t0+20, 0, throttle.RefusedCollapsed, ""), "new"), false, status{}, "old is told"},
			{20, throttle.Request{Member: "new", CollapseKey: "score"}, throttle.Reservation{At: time.UnixMilli(t0 + 1000), Wait: 980 * time.Millisecond, Existing: true}, false, status{}, "new holds it"},
			{30, throttle.Request{Member: "other", CollapseKey: "news"}, held(res(t0+2000, 1970, "", ""), "1/1s"), false, status{}, "another key collapses nothing"},
			{30, throttle.Request{Member: "cat", CollapseKey: "score", Category: "c"}, held(res(t0+3000, 2970, "", ""), "1/1s"), false, status{}, "nor another category's"},
			{950, throttle.Request{Member: "newer", CollapseKey: "score"}, held(res(t0+4000, 3050, "", ""), "1/1s"), false, status{}, "new is within the margin of its slot: on its way"},
			{960, throttle.Request{Member: "late", CollapseKey: "score", NotAfter: time.UnixMilli(t0 + 2000)}, held(res(t0+4000, 3040, throttle.RefusedLate, ""), "1/1s"), false, status{}, "refused: newer stays"},
			{970, throttle.Request{Member: "newest", CollapseKey: "score"}, held(res(t0+4000, 3030, "", "newer"), "1/1s"), false, status{}, "newer collapses"},
		}},
		{"the newest accepted push wins whatever books later", throttle.Policy{Limits: []throttle.Limit{{N: 1, Window: time.Second}}}, 100 * time.Millisecond, t0, []policyStep{
			{0, throttle.Request{Member: "old#0", CollapseKey: "score", Accepted: accepted(10)}, res(t0, 0, "", ""), false, status{}, "old's first attempt is sent now"},
			{10, throttle.Request{Member: "latest", CollapseKey: "score", Accepted: accepted(20)}, held(res(t0+1000, 990, "", ""), "1/1s"), false, status{}, "latest is held; old is on its way"},
			{20, throttle.Request{Member: "old#1", CollapseKey: "score", Accepted: accepted(10)}, replacedBy(res(t0+20, 0, throttle.RefusedCollapsed, ""), "latest"), false, status{}, "old's retry is older than latest: collapsed"},
			{30, throttle.Request{Member: "latest", CollapseKey: "score", Accepted: accepted(20)}, throttle.Reservation{At: time.UnixMilli(t0 + 1000), Wait: 970 * time.Millisecond, Existing: true}, false, status{}, "latest keeps its slot"},
			{40, throttle.Request{Member: "tie", CollapseKey: "score", Accepted: accepted(20)}, held(res(t0+1000, 960, "", "latest"), "1/1s"), false, status{}, "accepted at the same instant: the later booking wins"},
			{50, throttle.Request{Member: "latest", CollapseKey: "score", Accepted: accepted(20)}, replacedBy(res(t0+50, 0, throttle.RefusedCollapsed, ""), "tie"), false, status{}, "latest is told"},
			{1500, throttle.Request{Member: "old#2", CollapseKey: "score", Accepted: accepted(10)}, replacedBy(res(t0+1500, 0, throttle.RefusedCollapsed, ""), "tie"), false, status{}, "tie was sent; old is still older"},
			{2001, throttle.Request{Member: "old#3", CollapseKey: "score", Accepted: accepted(10)}, res(t0+2001, 0, "", ""), false, status{}, "tie's booking left the window: nothing is remembered"},
		}},
	}
	tests[3].policy.Categories = map[string]throttle.Category{"c": {}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			l := newLimiter(t, tt.policy, throttle.Options{Clock: clock.Now, CollapseMargin: tt.margin})
			ctx := context.Background()
			for i, s := range tt.steps {
				now := tt.base + s.at
				clock.ms.Store(now)
				var got, want any
				if s.status {
					loc := berlin
					st, err := l.Status(ctx, "u", loc)
					if err != nil {
						t.Fatalf("step %d (%s): %v", i, s.explain, err)
					}
					got, want = foldStatus(st, tt.base), s.wantSt
				} else {
					q := s.req
					q.User = "u"
					rs, err := l.ReserveBatch(ctx, []throttle.Request{q})
					if err != nil {
						t.Fatalf("step %d (%s): %v", i, s.explain, err)
					}
					w := s.want
					w.Now = time.UnixMilli(now)
					got, want = rs[0], w
				}
				if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
					t.Fatalf("step %d (%s): -want +got:\n%s", i, s.explain, diff)
				}
			}
		})
	}
	t.Run("an unknown category fails that request alone", func(t *testing.T) {
		l := newLimiter(t, throttle.Policy{MinGap: time.Millisecond, Categories: cats}, throttle.Options{})
		rs, err := l.ReserveBatch(context.Background(), []throttle.Request{{User: "u", Member: "a", Category: "nope"}, {User: "u", Member: "b", Category: "social"}})
		if !errors.Is(err, throttle.ErrUnknownCategory) {
			t.Fatalf("error %v, want ErrUnknownCategory", err)
		}
		if len(rs) != 2 || !rs[0].Now.IsZero() || rs[1].Now.IsZero() {
			t.Errorf("reservations %+v: want the first failed, the second booked", rs)
		}
	})
}

// Explain says what Reserve would book and why, booking nothing: the
// rules' slot, the quiet hours' share and the rule to blame, a category's
// rule named with its category.
func TestMemoryExplain(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	evening := time.Date(2026, 11, 23, 21, 59, 59, 0, berlin)
	now := evening
	l, err := throttle.NewMemory(throttle.Policy{MinGap: 2 * time.Second, Quiet: throttle.Quiet{From: 22 * time.Hour, To: 8 * time.Hour},
		Categories: map[string]throttle.Category{"social": {Limits: []throttle.Limit{{N: 1, Window: time.Hour}}}}},
		throttle.Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: "a", Category: "social", Location: berlin}}); err != nil {
		t.Fatal(err)
	}
	q := throttle.Request{User: "u", Category: "social", Location: berlin}
	got, err := l.Explain(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	want := throttle.Explanation{At: time.Date(2026, 11, 24, 8, 0, 0, 0, berlin), WithoutQuiet: evening.Add(time.Hour), HeldBy: "social 1/1h", Now: evening}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	q.Category = ""
	got, _ = l.Explain(ctx, q)
	if got.HeldBy != "min-gap 2s" || !got.WithoutQuiet.Equal(evening.Add(2*time.Second)) || !got.At.Equal(want.At) {
		t.Errorf("without a category: %+v", got)
	}
	st, _ := l.Status(ctx, "u", berlin)
	if len(st.Entries) != 1 {
		t.Errorf("Explain booked something: %+v", st.Entries)
	}
}
