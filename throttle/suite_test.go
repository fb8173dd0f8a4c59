package throttle_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hushpush/hush/throttle"
)

// limiter is what both implementations offer; the shared suite runs against
// it.
type limiter interface {
	Allow(ctx context.Context, user string) (throttle.Decision, error)
	Peek(ctx context.Context, user string) (throttle.Decision, error)
	Reserve(ctx context.Context, user, member string) (throttle.Reservation, error)
	Release(ctx context.Context, user, member string) (bool, error)
	Status(ctx context.Context, user string, loc *time.Location) (throttle.Status, error)
	Reset(ctx context.Context, user string) error
	AllowBatch(ctx context.Context, users []string) ([]throttle.Decision, error)
	ReserveBatch(ctx context.Context, reqs []throttle.Request) ([]throttle.Reservation, error)
	ReleaseBatch(ctx context.Context, hs []throttle.Held) ([]bool, error)
	Policy() throttle.Policy
}

var (
	_ limiter = (*throttle.Redis)(nil)
	_ limiter = (*throttle.Memory)(nil)
)

// newLimiterFunc builds a limiter for p with o (its Prefix is the
// builder's); o.Clock nil means the implementation's own clock (Redis TIME,
// time.Now).
type newLimiterFunc func(t *testing.T, p throttle.Policy, o throttle.Options) limiter

// t0 is the epoch of the explicit clocks, in ms.
const t0 = 1_800_000_000_000

// fakeClock is an explicit clock the test moves.
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ms.Store(t0)
	return c
}

func (c *fakeClock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) Set(at int64)   { c.ms.Store(t0 + at) }

func at(ms int64) time.Time { return time.UnixMilli(t0 + ms) }

func mustPolicy(t testing.TB, limits, gap string) throttle.Policy {
	t.Helper()
	p, err := throttle.ParsePolicy(limits, gap)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// step is one call at an explicit time; want is a throttle.Decision (Now
// filled in from at), a throttle.Reservation (Now filled in), a bool
// (Release), a []entry with remaining and next (status) or nil (Reset).
type step struct {
	at     int64
	op     string // allow, peek, reserve, release, status, reset
	member string
	want   any
}

type status struct {
	Entries    []entry
	Remaining  []int
	Next       int64 // ms after t0
	Quiet      bool
	Categories []catStatus
}

// catStatus is a CategoryStatus folded like status.
type catStatus struct {
	Name      string
	Entries   []entry
	Remaining []int
	Next      int64
	Quiet     bool
}

// entry is a Status entry with Allow's random member names folded to
// "allow", so implementations compare.
type entry struct {
	Member string
	At     int64 // ms after t0
}

func allowed(rem ...int) throttle.Decision {
	return throttle.Decision{Allowed: true, Remaining: rem}
}

func denied(retryMs int64, by string, rem ...int) throttle.Decision {
	return throttle.Decision{RetryAfter: time.Duration(retryMs) * time.Millisecond, DeniedBy: by, Remaining: rem}
}

func slot(atMs, waitMs int64, existing bool) throttle.Reservation {
	return throttle.Reservation{At: at(atMs), Wait: time.Duration(waitMs) * time.Millisecond, Existing: existing}
}

// full is a reservation refused by the cap; atMs is the user's earliest
// booking after now.
func full(atMs, waitMs int64) throttle.Reservation {
	r := slot(atMs, waitMs, false)
	r.Refused = throttle.RefusedFull
	return r
}

// late is a reservation refused by NotAfter; atMs is the slot it would have
// booked.
func late(atMs, waitMs int64) throttle.Reservation {
	r := slot(atMs, waitMs, false)
	r.Refused = throttle.RefusedLate
	return r
}

var equateEmpty = cmpopts.EquateEmpty()

// heldByAside leaves Reservation.HeldBy out of the step tables' checks:
// the random traces check it on every booking against the model, and
// testPolicies names it where a table means to.
var heldByAside = cmpopts.IgnoreFields(throttle.Reservation{}, "HeldBy")

func foldStatus(s throttle.Status, base int64) status {
	out := status{Remaining: s.Remaining, Next: s.NextAllowed.UnixMilli() - base, Quiet: s.Quiet, Entries: foldEntries(s.Entries, base)}
	for _, c := range s.Categories {
		out.Categories = append(out.Categories, catStatus{Name: c.Name, Entries: foldEntries(c.Entries, base),
			Remaining: c.Remaining, Next: c.NextAllowed.UnixMilli() - base, Quiet: c.Quiet})
	}
	return out
}

func foldEntries(es []throttle.Entry, base int64) []entry {
	var out []entry
	for _, e := range es {
		m := e.Member
		if strings.HasPrefix(m, "allow:") {
			m = "allow"
		}
		out = append(out, entry{Member: m, At: e.At.UnixMilli() - base})
	}
	sortEntries(out)
	return out
}

func sortEntries(es []entry) {
	slices.SortFunc(es, func(a, b entry) int {
		if a.At != b.At {
			return int(a.At - b.At)
		}
		return strings.Compare(a.Member, b.Member)
	})
}

// testLimiter is the suite both implementations must pass.
func testLimiter(t *testing.T, newLimiter newLimiterFunc) {
	t.Run("Steps", func(t *testing.T) { testSteps(t, newLimiter) })
	t.Run("Refusals", func(t *testing.T) { testRefusals(t, newLimiter) })
	t.Run("Batch", func(t *testing.T) { testBatch(t, newLimiter) })
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, newLimiter) })
	t.Run("DefaultClock", func(t *testing.T) { testDefaultClock(t, newLimiter) })
	t.Run("Policies", func(t *testing.T) { testPolicies(t, newLimiter) })
	t.Run("RandomTraces", func(t *testing.T) { testRandomTraces(t, newLimiter) })
}

func testSteps(t *testing.T, newLimiter newLimiterFunc) {
	tests := []struct {
		name        string
		limits, gap string
		steps       []step
	}{
		{"entry exactly W old no longer counts", "1/100ms", "", []step{
			{0, "allow", "", allowed(0)},
			{99, "allow", "", denied(1, "1/100ms", 0)},
			{100, "allow", "", allowed(0)},
		}},
		{"gap exactly met is allowed", "", "50ms", []step{
			{0, "allow", "", allowed()},
			{49, "allow", "", denied(1, "min-gap 50ms")},
			{50, "allow", "", allowed()},
		}},
		{"tighter rule denies", "5/1m,2/1s", "", []step{
			{0, "allow", "", allowed(4, 1)},
			{10, "allow", "", allowed(3, 0)},
			{20, "allow", "", denied(980, "2/1s", 3, 0)},
			{1000, "allow", "", allowed(2, 0)},
			{1005, "allow", "", denied(5, "2/1s", 2, 0)},
		}},
		{"looser rule denies once its cap is reached", "2/10ms,3/1s", "", []step{
			{0, "allow", "", allowed(1, 2)},
			{10, "allow", "", allowed(1, 1)},
			{20, "allow", "", allowed(1, 0)},
			{30, "allow", "", denied(970, "3/1s", 2, 0)},
		}},
		{"window and gap deny, the window lasts longer", "2/100ms", "30ms", []step{
			{0, "allow", "", allowed(1)},
			{30, "allow", "", allowed(0)},
			{40, "allow", "", denied(60, "2/100ms", 0)},
		}},
		{"window and gap deny, the gap lasts longer", "2/100ms", "80ms", []step{
			{0, "allow", "", allowed(1)},
			{80, "allow", "", allowed(0)},
			{90, "allow", "", denied(70, "min-gap 80ms", 0)},
		}},
		{"on a tie the first limit is named", "1/100ms,2/200ms", "", []step{
			{0, "allow", "", allowed(0, 1)},
			{100, "allow", "", allowed(0, 0)},
			{150, "allow", "", denied(50, "1/100ms", 0, 0)},
		}},
		{"on a tie a limit is named before the gap", "1/100ms", "100ms", []step{
			{0, "allow", "", allowed(0)},
			{50, "allow", "", denied(50, "1/100ms", 0)},
		}},
		{"a rule rules out the instant another rule moved to", "2/13ms,3/30ms", "2ms", []step{
			{1, "reserve", "m3", slot(1, 0, false)},
			{1, "reserve", "m1", slot(3, 2, false)},
			{1, "reserve", "m4", slot(14, 13, false)},
			{9, "reserve", "m0", slot(31, 22, false)},
			{9, "reserve", "m2", slot(33, 24, false)},
			{9, "release", "m0", true},
			{9, "release", "m1", true},
			{9, "reserve", "m5", slot(9, 0, false)},
			{9, "reserve", "m0", slot(39, 30, false)},
			{13, "reserve", "x", slot(46, 33, false)},
		}},
		{"peek records nothing", "1/100ms", "", []step{
			{0, "peek", "", allowed(0)},
			{0, "peek", "", allowed(0)},
			{0, "allow", "", allowed(0)},
			{1, "peek", "", denied(99, "1/100ms", 0)},
		}},
		{"denied attempts are not recorded", "2/100ms", "", []step{
			{0, "allow", "", allowed(1)},
			{1, "allow", "", allowed(0)},
			{50, "allow", "", denied(50, "2/100ms", 0)},
			{50, "allow", "", denied(50, "2/100ms", 0)},
			{99, "allow", "", denied(1, "2/100ms", 0)},
			{100, "allow", "", allowed(0)},
			{100, "status", "", status{Entries: []entry{{"allow", 1}, {"allow", 100}}, Remaining: []int{0}, Next: 101}},
		}},
		{"reservations get distinct slots that respect every rule", "2/100ms", "10ms", []step{
			{0, "reserve", "a", slot(0, 0, false)},
			{0, "reserve", "b", slot(10, 10, false)},
			{0, "reserve", "c", slot(100, 100, false)},
			{0, "reserve", "d", slot(110, 110, false)},
			{0, "reserve", "e", slot(200, 200, false)},
			{5, "reserve", "a", slot(0, 0, true)},
			{5, "reserve", "e", slot(200, 195, true)},
		}},
		{"a released slot goes to the next booking", "2/100ms", "10ms", []step{
			{0, "reserve", "a", slot(0, 0, false)},
			{0, "reserve", "b", slot(10, 10, false)},
			{0, "reserve", "c", slot(100, 100, false)},
			{0, "reserve", "d", slot(110, 110, false)},
			{0, "release", "c", true},
			{0, "release", "c", false},
			{0, "release", "never", false},
			{0, "reserve", "f", slot(100, 100, false)},
			{20, "peek", "", denied(180, "2/100ms", 0)},
		}},
		{"allow fits before a later booking", "3/1s", "10ms", []step{
			{0, "reserve", "a", slot(0, 0, false)},
			{0, "reserve", "b", slot(10, 10, false)},
			{0, "release", "a", true},
			{0, "allow", "", allowed(2)},
			{1, "allow", "", denied(19, "min-gap 10ms", 2)},
			{1, "status", "", status{Entries: []entry{{"allow", 0}, {"b", 10}}, Remaining: []int{2}, Next: 20}},
		}},
		{"status lists entries, remaining and next allowed", "2/100ms", "10ms", []step{
			{0, "allow", "", allowed(1)},
			{0, "reserve", "a", slot(10, 10, false)},
			{5, "status", "", status{Entries: []entry{{"allow", 0}, {"a", 10}}, Remaining: []int{1}, Next: 100}},
		}},
		{"status of an unknown user", "2/100ms", "10ms", []step{
			{5, "status", "", status{Remaining: []int{2}, Next: 5}},
		}},
		{"reset forgets the user", "1/1m", "", []step{
			{0, "allow", "", allowed(0)},
			{1, "allow", "", denied(59999, "1/1m", 0)},
			{2, "reset", "", nil},
			{3, "allow", "", allowed(0)},
		}},
		{"entries older than the longest window are dropped", "1/10ms", "", []step{
			{0, "allow", "", allowed(0)},
			{10, "allow", "", allowed(0)},
			{15, "status", "", status{Entries: []entry{{"allow", 10}}, Remaining: []int{0}, Next: 20}},
		}},
		{"an aged-out booking is gone", "1/10ms", "", []step{
			{0, "reserve", "a", slot(0, 0, false)},
			{20, "reserve", "a", slot(20, 0, false)},
			{40, "release", "a", false},
		}},
		{"gap longer than the window keeps old entries", "2/10ms", "50ms", []step{
			{0, "allow", "", allowed(1)},
			{30, "allow", "", denied(20, "min-gap 50ms", 2)},
			{30, "reserve", "a", slot(50, 20, false)},
		}},
		// Rules of different sizes and windows counted side by side.
		{"a rule with a large N next to a small one", "20/100ms,3/2ms", "", largeNSteps()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			l := newLimiter(t, mustPolicy(t, tt.limits, tt.gap), throttle.Options{Clock: clock.Now})
			ctx := context.Background()
			for i, s := range tt.steps {
				clock.Set(s.at)
				got, err := runStep(ctx, l, "u", s)
				if err != nil {
					t.Fatalf("step %d (%s %s at %d): %v", i, s.op, s.member, s.at, err)
				}
				want := s.want
				switch w := want.(type) {
				case throttle.Decision:
					w.Now = at(s.at)
					want = w
				case throttle.Reservation:
					w.Now = at(s.at)
					want = w
				}
				if diff := cmp.Diff(want, got, equateEmpty, heldByAside); diff != "" {
					t.Fatalf("step %d (%s %s at %d): -want +got:\n%s", i, s.op, s.member, s.at, diff)
				}
			}
		})
	}
}

// capStep is a step of testRefusals: op is one of step's, or "reserve-by",
// a Reserve with NotAfter = by (ms after t0) made through ReserveBatch,
// since Reserve takes none.
type capStep struct {
	at     int64
	op     string
	member string
	by     int64
	want   any
}

// testRefusals: Options.MaxPending and Request.NotAfter.
func testRefusals(t *testing.T, newLimiter newLimiterFunc) {
	tests := []struct {
		name        string
		limits, gap string
		maxPending  int
		steps       []capStep
	}{
		{"the cap refuses a new booking and books nothing", "1/100ms", "", 2, []capStep{
			{0, "reserve", "a", 0, slot(0, 0, false)}, // at now: not pending
			{0, "reserve", "b", 0, slot(100, 100, false)},
			{0, "reserve", "c", 0, slot(200, 200, false)},
			{0, "reserve", "d", 0, full(100, 100)},
			{0, "reserve", "d", 0, full(100, 100)},
			{0, "status", "", 0, status{Entries: []entry{{"a", 0}, {"b", 100}, {"c", 200}}, Remaining: []int{0}, Next: 300}},
		}},
		{"an existing member gets its slot at the cap", "1/100ms", "", 2, []capStep{
			{0, "reserve", "a", 0, slot(0, 0, false)},
			{0, "reserve", "b", 0, slot(100, 100, false)},
			{0, "reserve", "c", 0, slot(200, 200, false)},
			{0, "reserve", "x", 0, full(100, 100)},
			{10, "reserve", "c", 0, slot(200, 190, true)},
			{10, "reserve", "b", 0, slot(100, 90, true)},
			{10, "reserve-by", "c", 50, slot(200, 190, true)},
		}},
		{"entries at or before now do not count toward the cap", "1/100ms", "", 1, []capStep{
			{0, "reserve", "a", 0, slot(0, 0, false)},
			{0, "reserve", "b", 0, slot(100, 100, false)},
			{0, "reserve", "c", 0, full(100, 100)},
			{99, "reserve", "c", 0, full(100, 1)},
			{100, "reserve", "c", 0, slot(200, 100, false)}, // b is now, no longer pending
			{100, "reserve", "d", 0, full(200, 100)},
		}},
		{"a released booking frees a place", "1/100ms", "", 1, []capStep{
			{0, "reserve", "a", 0, slot(0, 0, false)},
			{0, "reserve", "b", 0, slot(100, 100, false)},
			{0, "reserve", "c", 0, full(100, 100)},
			{0, "release", "b", 0, true},
			{0, "reserve", "c", 0, slot(100, 100, false)},
		}},
		{"allow records now at the cap", "3/1s", "10ms", 1, []capStep{
			{0, "reserve", "a", 0, slot(0, 0, false)},
			{0, "reserve", "b", 0, slot(10, 10, false)},
			{0, "release", "a", 0, true},
			{0, "reserve", "c", 0, full(10, 10)},
			{0, "allow", "", 0, allowed(2)},
			{0, "status", "", 0, status{Entries: []entry{{"allow", 0}, {"b", 10}}, Remaining: []int{2}, Next: 20}},
		}},
		{"NotAfter refuses a slot after it and books one exactly at it", "1/100ms", "", 0, []capStep{
			{0, "reserve", "a", 0, slot(0, 0, false)},
			{0, "reserve-by", "b", 99, late(100, 100)},
			{0, "status", "", 0, status{Entries: []entry{{"a", 0}}, Remaining: []int{0}, Next: 100}},
			{0, "reserve-by", "b", 100, slot(100, 100, false)},
			{0, "reserve-by", "c", 199, late(200, 200)},
			{0, "reserve-by", "c", 5000, slot(200, 200, false)},
		}},
		{"an existing member is returned past NotAfter", "1/100ms", "", 0, []capStep{
			{0, "reserve", "a", 0, slot(0, 0, false)},
			{0, "reserve", "b", 0, slot(100, 100, false)},
			{0, "reserve-by", "b", 50, slot(100, 100, true)},
			{50, "reserve-by", "a", -1000, slot(0, 0, true)},
		}},
		{"NotAfter before now refuses even a slot now", "1/100ms", "", 0, []capStep{
			{0, "reserve-by", "a", -1, late(0, 0)},
			{0, "reserve-by", "a", 0, slot(0, 0, false)},
		}},
		{"the cap is checked before NotAfter", "1/100ms", "", 1, []capStep{
			{0, "reserve", "a", 0, slot(0, 0, false)},
			{0, "reserve", "b", 0, slot(100, 100, false)},
			{0, "reserve-by", "c", 50, full(100, 100)},
			{100, "reserve-by", "c", 150, late(200, 100)},
			{100, "reserve-by", "c", 200, slot(200, 100, false)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			l := newLimiter(t, mustPolicy(t, tt.limits, tt.gap), throttle.Options{Clock: clock.Now, MaxPending: tt.maxPending})
			ctx := context.Background()
			for i, s := range tt.steps {
				clock.Set(s.at)
				var got any
				var err error
				if s.op == "reserve-by" {
					var rs []throttle.Reservation
					rs, err = l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: s.member, NotAfter: at(s.by)}})
					if err == nil {
						got = rs[0]
					}
				} else {
					got, err = runStep(ctx, l, "u", step{s.at, s.op, s.member, s.want})
				}
				if err != nil {
					t.Fatalf("step %d (%s %s at %d): %v", i, s.op, s.member, s.at, err)
				}
				want := s.want
				if w, ok := want.(throttle.Reservation); ok {
					w.Now = at(s.at)
					want = w
				}
				if w, ok := want.(throttle.Decision); ok {
					w.Now = at(s.at)
					want = w
				}
				if diff := cmp.Diff(want, got, equateEmpty, heldByAside); diff != "" {
					t.Fatalf("step %d (%s %s at %d): -want +got:\n%s", i, s.op, s.member, s.at, diff)
				}
			}
		})
	}
}

// largeNSteps fills a 20/100ms rule one allow per ms under a 3/2ms rule.
func largeNSteps() []step {
	var steps []step
	for i := range int64(20) {
		rem2 := 1 // the previous ms's entry is in the 2ms window
		if i == 0 {
			rem2 = 2
		}
		steps = append(steps, step{i, "allow", "", allowed(19-int(i), rem2)})
	}
	return append(steps,
		step{20, "allow", "", denied(80, "20/100ms", 0, 2)},
		step{99, "peek", "", denied(1, "20/100ms", 0, 3)},
		step{100, "allow", "", allowed(0, 2)},
	)
}

func runStep(ctx context.Context, l limiter, user string, s step) (any, error) {
	switch s.op {
	case "allow":
		return l.Allow(ctx, user)
	case "peek":
		return l.Peek(ctx, user)
	case "reserve":
		return l.Reserve(ctx, user, s.member)
	case "release":
		return l.Release(ctx, user, s.member)
	case "status":
		st, err := l.Status(ctx, user, nil)
		if err != nil {
			return nil, err
		}
		if !st.Now.Equal(at(s.at)) {
			return nil, errors.New("status: Now is " + st.Now.String())
		}
		return foldStatus(st, t0), nil
	case "reset":
		return nil, l.Reset(ctx, user)
	}
	return nil, errors.New("unknown op " + s.op)
}

func testBatch(t *testing.T, newLimiter newLimiterFunc) {
	t.Run("allow for several users, repeats in order", func(t *testing.T) {
		t.Parallel()
		clock := newFakeClock()
		l := newLimiter(t, mustPolicy(t, "1/1m", ""), throttle.Options{Clock: clock.Now})
		got, err := l.AllowBatch(context.Background(), []string{"u1", "u2", "u1", "u3"})
		if err != nil {
			t.Fatal(err)
		}
		want := []throttle.Decision{allowed(0), allowed(0), denied(60000, "1/1m", 0), allowed(0)}
		for i := range want {
			want[i].Now = at(0)
		}
		if diff := cmp.Diff(want, got, equateEmpty, heldByAside); diff != "" {
			t.Errorf("-want +got:\n%s", diff)
		}
	})
	t.Run("reserve for one user books distinct slots", func(t *testing.T) {
		t.Parallel()
		clock := newFakeClock()
		l := newLimiter(t, mustPolicy(t, "2/100ms", "10ms"), throttle.Options{Clock: clock.Now})
		reqs := []throttle.Request{{User: "u", Member: "a"}, {User: "u", Member: "b"}, {User: "v", Member: "a"}, {User: "u", Member: "c"}, {User: "u", Member: "a"}, {User: "u", Member: "d"}}
		got, err := l.ReserveBatch(context.Background(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		want := []throttle.Reservation{slot(0, 0, false), slot(10, 10, false), slot(0, 0, false), slot(100, 100, false), slot(0, 0, true), slot(110, 110, false)}
		for i := range want {
			want[i].Now = at(0)
		}
		if diff := cmp.Diff(want, got, heldByAside); diff != "" {
			t.Errorf("-want +got:\n%s", diff)
		}
	})
	t.Run("reserve batch refuses per request", func(t *testing.T) {
		t.Parallel()
		clock := newFakeClock()
		l := newLimiter(t, mustPolicy(t, "1/100ms", ""), throttle.Options{Clock: clock.Now, MaxPending: 2})
		reqs := []throttle.Request{
			{User: "u", Member: "a"},
			{User: "u", Member: "b", NotAfter: at(50)}, // its slot is 100
			{User: "u", Member: "c"},                   // so c gets 100
			{User: "v", Member: "a", NotAfter: at(0)},  // exactly at NotAfter
			{User: "u", Member: "d", NotAfter: at(200)},
			{User: "u", Member: "e"}, // c and d are pending: full
			{User: "u", Member: "c", NotAfter: at(50)},
			{User: "v", Member: "b", NotAfter: at(99)},
		}
		got, err := l.ReserveBatch(context.Background(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		want := []throttle.Reservation{slot(0, 0, false), late(100, 100), slot(100, 100, false), slot(0, 0, false),
			slot(200, 200, false), full(100, 100), slot(100, 100, true), late(100, 100)}
		for i := range want {
			want[i].Now = at(0)
		}
		if diff := cmp.Diff(want, got, heldByAside); diff != "" {
			t.Errorf("-want +got:\n%s", diff)
		}
		st, err := l.Status(context.Background(), "u", nil)
		if err != nil {
			t.Fatal(err)
		}
		wantSt := status{Entries: []entry{{"a", 0}, {"c", 100}, {"d", 200}}, Remaining: []int{0}, Next: 300}
		if diff := cmp.Diff(wantSt, foldStatus(st, t0), equateEmpty); diff != "" {
			t.Errorf("u's entries, -want +got:\n%s", diff)
		}
	})
	t.Run("release batch gives back each booking once", func(t *testing.T) {
		t.Parallel()
		clock := newFakeClock()
		l := newLimiter(t, mustPolicy(t, "2/100ms", "10ms"), throttle.Options{Clock: clock.Now})
		ctx := context.Background()
		if _, err := l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: "a"}, {User: "u", Member: "b"}, {User: "v", Member: "a"}}); err != nil {
			t.Fatal(err)
		}
		got, err := l.ReleaseBatch(ctx, []throttle.Held{{User: "u", Member: "b"}, {User: "v", Member: "a"}, {User: "u", Member: "c"}, {User: "u", Member: "b"}})
		if err != nil {
			t.Fatal(err)
		}
		if want := []bool{true, true, false, false}; !slices.Equal(got, want) {
			t.Errorf("found %v, want %v (a missing or already released booking is not found)", got, want)
		}
		for user, want := range map[string][]entry{"u": {{"a", 0}}, "v": nil} {
			st, err := l.Status(ctx, user, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, foldStatus(st, t0).Entries, equateEmpty); diff != "" {
				t.Errorf("%s's entries after the release, -want +got:\n%s", user, diff)
			}
		}
		if _, err := l.ReleaseBatch(ctx, []throttle.Held{{User: "u", Member: "a"}, {User: "", Member: "x"}}); !errors.Is(err, throttle.ErrEmptyUser) {
			t.Errorf("a batch with an empty user: %v, want ErrEmptyUser", err)
		}
	})
	t.Run("empty batches", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t, mustPolicy(t, "1/1m", ""), throttle.Options{Clock: newFakeClock().Now})
		ds, err := l.AllowBatch(context.Background(), nil)
		if err != nil || len(ds) != 0 {
			t.Errorf("AllowBatch(nil) = %v, %v; want empty, nil", ds, err)
		}
		rs, err := l.ReserveBatch(context.Background(), nil)
		if err != nil || len(rs) != 0 {
			t.Errorf("ReserveBatch(nil) = %v, %v; want empty, nil", rs, err)
		}
		fs, err := l.ReleaseBatch(context.Background(), nil)
		if err != nil || len(fs) != 0 {
			t.Errorf("ReleaseBatch(nil) = %v, %v; want empty, nil", fs, err)
		}
	})
}

func testBadInput(t *testing.T, newLimiter newLimiterFunc) {
	l := newLimiter(t, mustPolicy(t, "1/1m", ""), throttle.Options{Clock: newFakeClock().Now})
	ctx := context.Background()
	calls := []struct {
		name string
		call func() error
		want error
	}{
		{"allow empty user", func() error { _, err := l.Allow(ctx, ""); return err }, throttle.ErrEmptyUser},
		{"peek empty user", func() error { _, err := l.Peek(ctx, ""); return err }, throttle.ErrEmptyUser},
		{"reserve empty user", func() error { _, err := l.Reserve(ctx, "", "m"); return err }, throttle.ErrEmptyUser},
		{"reserve empty member", func() error { _, err := l.Reserve(ctx, "u", ""); return err }, throttle.ErrEmptyMember},
		{"release empty user", func() error { _, err := l.Release(ctx, "", "m"); return err }, throttle.ErrEmptyUser},
		{"release empty member", func() error { _, err := l.Release(ctx, "u", ""); return err }, throttle.ErrEmptyMember},
		{"status empty user", func() error { _, err := l.Status(ctx, "", nil); return err }, throttle.ErrEmptyUser},
		{"reset empty user", func() error { return l.Reset(ctx, "") }, throttle.ErrEmptyUser},
		{"allow batch with an empty user", func() error { _, err := l.AllowBatch(ctx, []string{"u", ""}); return err }, throttle.ErrEmptyUser},
		{"reserve batch with an empty user", func() error {
			_, err := l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: "m"}, {User: "", Member: "m"}})
			return err
		}, throttle.ErrEmptyUser},
		{"reserve batch with an empty member", func() error {
			_, err := l.ReserveBatch(ctx, []throttle.Request{{User: "u", Member: ""}})
			return err
		}, throttle.ErrEmptyMember},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); !errors.Is(err, c.want) {
				t.Errorf("error = %v, want %v", err, c.want)
			}
		})
	}
	// Nothing was recorded by the rejected calls.
	st, err := l.Status(ctx, "u", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Entries) != 0 {
		t.Errorf("rejected calls recorded entries: %v", st.Entries)
	}
}

func testDefaultClock(t *testing.T, newLimiter newLimiterFunc) {
	l := newLimiter(t, mustPolicy(t, "1/1m", ""), throttle.Options{})
	before := time.Now()
	d, err := l.Allow(context.Background(), "u")
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed {
		t.Fatalf("first Allow denied: %+v", d)
	}
	// The Redis limiter reads the server's clock; on this machine it is ours.
	if skew := d.Now.Sub(before); skew < -2*time.Second || skew > 2*time.Second {
		t.Errorf("Decision.Now = %v, local clock %v: more than 2s apart", d.Now, before)
	}
	r, err := l.Reserve(context.Background(), "u", "m")
	if err != nil {
		t.Fatal(err)
	}
	if want := d.Now.Add(time.Minute); !r.At.Equal(want) || r.Wait <= 0 || r.Wait > time.Minute {
		t.Errorf("Reserve = %+v, want At %v and 0 < Wait <= 1m", r, want)
	}
}
