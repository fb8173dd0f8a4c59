package throttle_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/throttle"
)

// model is the brute-force reference: a plain list of timestamps, checked by
// scanning t = now, now+1, ... and counting every window of every rule that
// contains t. It shares nothing with the implementations' candidate search.
type model struct {
	n, w       []int64
	gap        int64
	horizon    int64
	names      []string
	maxPending int     // Options.MaxPending
	entries    []entry // At is absolute ms
}

func newModel(p throttle.Policy, maxPending int) *model {
	m := &model{gap: p.MinGap.Milliseconds(), horizon: p.MinGap.Milliseconds(), maxPending: maxPending}
	for _, l := range p.Limits {
		m.n = append(m.n, int64(l.N))
		m.w = append(m.w, l.Window.Milliseconds())
		m.names = append(m.names, l.String())
		m.horizon = max(m.horizon, l.Window.Milliseconds())
	}
	m.names = append(m.names, throttle.Policy{MinGap: p.MinGap}.String())
	return m
}

// violates reports whether adding t to the sorted times ts breaks rule i
// (len(m.n): the gap).
func (m *model) violates(ts []int64, t int64, i int) bool {
	if i == len(m.n) {
		if m.gap == 0 {
			return false
		}
		for _, e := range near(ts, t-m.gap+1, t+m.gap) {
			if d := t - e; d < m.gap && -d < m.gap {
				return true
			}
		}
		return false
	}
	// Every window [x, x+W) that contains t must hold fewer than N entries.
	w := m.w[i]
	local := near(ts, t-w+1, t+w)
	for x := t - w + 1; x <= t; x++ {
		c := int64(0)
		for _, e := range local {
			if e >= x && e < x+w {
				c++
			}
		}
		if c >= m.n[i] {
			return true
		}
	}
	return false
}

// near returns the entries of the sorted ts in [from, to): only those can
// fall into a window the model checks, and skipping the rest keeps long
// traces fast.
func near(ts []int64, from, to int64) []int64 {
	lo, _ := slices.BinarySearch(ts, from)
	hi, _ := slices.BinarySearch(ts, to)
	return ts[lo:hi]
}

// earliest scans for the first t >= now keeping rule i, or every rule when
// i < 0.
func (m *model) earliest(now int64, i int) int64 {
	ts := make([]int64, 0, len(m.entries))
	for _, e := range m.entries {
		ts = append(ts, e.At)
	}
	slices.Sort(ts)
	for t := now; ; t++ {
		ok := true
		for j := 0; j <= len(m.n) && ok; j++ {
			if i < 0 || i == j {
				ok = !m.violates(ts, t, j)
			}
		}
		if ok {
			return t
		}
	}
}

func (m *model) remaining(now int64) []int {
	out := make([]int, len(m.n))
	for i := range m.n {
		c := int64(0)
		for _, e := range m.entries {
			if e.At > now-m.w[i] && e.At <= now {
				c++
			}
		}
		out[i] = int(max(0, m.n[i]-c))
	}
	return out
}

func (m *model) decide(now int64, record bool) throttle.Decision {
	t := m.earliest(now, -1)
	d := throttle.Decision{Now: time.UnixMilli(now)}
	if t == now {
		d.Allowed = true
		saved := m.entries
		m.entries = append(slices.Clone(m.entries), entry{"allow", now})
		d.Remaining = m.remaining(now)
		if !record {
			m.entries = saved
		}
		return d
	}
	d.RetryAfter = time.Duration(t-now) * time.Millisecond
	d.Remaining = m.remaining(now)
	worst := now
	for i := 0; i <= len(m.n); i++ {
		if ti := m.earliest(now, i); ti > worst { // rule i rules out now
			worst, d.DeniedBy = ti, m.names[i]
		}
	}
	return d
}

// live drops entries that aged out (at or before now - horizon), as the
// implementations do before a write.
func (m *model) live(now int64) {
	m.entries = slices.DeleteFunc(m.entries, func(e entry) bool { return e.At <= now-m.horizon })
}

// reserve books member's slot; notAfter (absolute ms) applies when by is
// set. Refusals follow the documented order: an existing member first, then
// the cap (counting entries after now), then notAfter.
func (m *model) reserve(now int64, member string, by bool, notAfter int64) throttle.Reservation {
	m.live(now)
	answer := func(at int64, existing bool, refused throttle.Refusal) throttle.Reservation {
		return throttle.Reservation{At: time.UnixMilli(at), Wait: time.Duration(max(0, at-now)) * time.Millisecond,
			Existing: existing, Refused: refused, Now: time.UnixMilli(now)}
	}
	for _, e := range m.entries {
		if e.Member == member {
			return answer(e.At, true, "")
		}
	}
	var pending []int64
	for _, e := range m.entries {
		if e.At > now {
			pending = append(pending, e.At)
		}
	}
	if m.maxPending > 0 && len(pending) >= m.maxPending {
		return answer(slices.Min(pending), false, throttle.RefusedFull)
	}
	t := m.earliest(now, -1)
	if by && t > notAfter {
		return answer(t, false, throttle.RefusedLate)
	}
	m.entries = append(m.entries, entry{member, t})
	return answer(t, false, "")
}

func (m *model) release(now int64, member string) bool {
	m.live(now)
	n := len(m.entries)
	m.entries = slices.DeleteFunc(m.entries, func(e entry) bool { return e.Member == member })
	return len(m.entries) < n
}

func (m *model) status(now int64) status {
	s := status{Remaining: m.remaining(now), Next: m.earliest(now, -1)}
	for _, e := range m.entries {
		if e.At > now-m.horizon {
			s.Entries = append(s.Entries, e)
		}
	}
	slices.SortFunc(s.Entries, func(a, b entry) int {
		if a.At != b.At {
			return int(a.At - b.At)
		}
		return strings.Compare(a.Member, b.Member)
	})
	return s
}

// trace is a policy, a cap and a sequence of operations at non-decreasing
// times.
type trace struct {
	policy     throttle.Policy
	maxPending int // Options.MaxPending
	ops        []traceOp
}

type traceOp struct {
	dt     int64 // ms after the previous op
	kind   string
	member string
	// by is set when a reserve carries a NotAfter, notAfter ms after the
	// op's instant (negative: before it).
	by       bool
	notAfter int64
}

var opKinds = []string{"allow", "allow", "allow", "allow", "peek", "reserve", "reserve", "reserve", "release", "status"}

// decodeTrace turns arbitrary bytes into a valid trace with small windows
// (1-60 ms), small caps (1-4) and a gap of 0-30 ms. The gap's byte, from 160
// on, also sets MaxPending 1-3; a reserve's member byte, from 150 on, gives
// it a NotAfter 3 ms before to 49 ms after its instant. Bytes below those
// (as in the seeds written before either existed) mean neither.
func decodeTrace(b []byte) trace {
	next := func() int {
		if len(b) == 0 {
			return 0
		}
		v := int(b[0])
		b = b[1:]
		return v
	}
	var tr trace
	for range next() % 3 {
		tr.policy.Limits = append(tr.policy.Limits, throttle.Limit{N: 1 + next()%4, Window: time.Duration(1+next()%60) * time.Millisecond})
	}
	g := next()
	tr.policy.MinGap = time.Duration(g%31) * time.Millisecond
	if g >= 160 {
		tr.maxPending = g/32 - 4
	}
	if len(tr.policy.Limits) == 0 && tr.policy.MinGap == 0 {
		tr.policy.MinGap = 7 * time.Millisecond
	}
	for len(b) >= 3 && len(tr.ops) < 200 {
		k, dt, m := next(), next(), next()
		op := traceOp{kind: opKinds[k%len(opKinds)], member: fmt.Sprintf("m%d", m%5)}
		if op.kind == "reserve" && m >= 150 {
			op.by, op.notAfter = true, int64((m-150)/2-3)
		}
		if dt%3 != 0 { // a third of the ops happen at the same instant
			op.dt = int64(dt % 25)
		}
		tr.ops = append(tr.ops, op)
	}
	return tr
}

// checkTrace runs tr on l (built with tr.maxPending) and the model in
// lockstep and fails at the first difference. Runs of two or more allows
// (or reserves) at the same instant go through AllowBatch (ReserveBatch) in
// one call, so the batch scripts face the model too; so does a lone reserve
// with a NotAfter, which Reserve does not take.
func checkTrace(t *testing.T, l limiter, clock *fakeClock, tr trace) {
	t.Helper()
	ctx := context.Background()
	m := newModel(tr.policy, tr.maxPending)
	now := int64(t0)
	fail := func(i int, format string, args ...any) {
		t.Helper()
		op := tr.ops[i]
		t.Fatalf("policy %s, max pending %d, op %d (%s %s at +%d ms): "+format, append([]any{tr.policy, tr.maxPending, i, op.kind, op.member, now - t0}, args...)...)
	}
	for i := 0; i < len(tr.ops); i++ {
		op := tr.ops[i]
		now += op.dt
		clock.ms.Store(now)
		if end := batchEnd(tr.ops, i); end > i+1 {
			got, err := runBatch(ctx, l, now, tr.ops[i:end])
			if err != nil {
				fail(i, "batch of %d: %v", end-i, err)
			}
			for j := i; j < end; j++ {
				var want any
				if op.kind == "allow" {
					want = m.decide(now, true)
				} else {
					want = m.reserve(now, tr.ops[j].member, tr.ops[j].by, now+tr.ops[j].notAfter)
				}
				if diff := cmp.Diff(want, got[j-i], equateEmpty); diff != "" {
					fail(i, "batch of %d, element %d: -model +limiter:\n%s\ntrace so far:\n%s", end-i, j-i, diff, describe(tr.ops[:end]))
				}
			}
			i = end - 1
			continue
		}
		var want, got any
		var err error
		switch op.kind {
		case "allow", "peek":
			want = m.decide(now, op.kind == "allow")
			if op.kind == "allow" {
				got, err = l.Allow(ctx, "u")
			} else {
				got, err = l.Peek(ctx, "u")
			}
		case "reserve":
			want = m.reserve(now, op.member, op.by, now+op.notAfter)
			if op.by {
				var rs []any
				rs, err = runBatch(ctx, l, now, tr.ops[i:i+1])
				if err == nil {
					got = rs[0]
				}
			} else {
				got, err = l.Reserve(ctx, "u", op.member)
			}
		case "release":
			want = m.release(now, op.member)
			got, err = l.Release(ctx, "u", op.member)
		case "status":
			want = m.status(now)
			var st throttle.Status
			st, err = l.Status(ctx, "u")
			got = foldStatus(st, 0)
		}
		if err != nil {
			fail(i, "%v", err)
		}
		if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
			fail(i, "-model +limiter:\n%s\ntrace so far:\n%s", diff, describe(tr.ops[:i+1]))
		}
	}
}

// batchEnd returns the end of the run of ops of ops[i]'s kind (allow or
// reserve) that all happen at ops[i]'s instant; i+1 for other kinds.
func batchEnd(ops []traceOp, i int) int {
	end := i + 1
	if k := ops[i].kind; k == "allow" || k == "reserve" {
		for end < len(ops) && ops[end].kind == k && ops[end].dt == 0 {
			end++
		}
	}
	return end
}

// runBatch runs ops (all allows or all reserves, for user "u") as one batch
// at now.
func runBatch(ctx context.Context, l limiter, now int64, ops []traceOp) ([]any, error) {
	var out []any
	if ops[0].kind == "allow" {
		ds, err := l.AllowBatch(ctx, slices.Repeat([]string{"u"}, len(ops)))
		for _, d := range ds {
			out = append(out, d)
		}
		return out, err
	}
	reqs := make([]throttle.Request, len(ops))
	for i, op := range ops {
		reqs[i] = throttle.Request{User: "u", Member: op.member}
		if op.by {
			reqs[i].NotAfter = time.UnixMilli(now + op.notAfter)
		}
	}
	rs, err := l.ReserveBatch(ctx, reqs)
	for _, r := range rs {
		out = append(out, r)
	}
	return out, err
}

func describe(ops []traceOp) string {
	var sb strings.Builder
	at := int64(0)
	for _, op := range ops {
		at += op.dt
		fmt.Fprintf(&sb, "  +%d %s %s", at, op.kind, op.member)
		if op.by {
			fmt.Fprintf(&sb, " not after +%d", at+op.notAfter)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// randomSeeds is how many random traces each implementation replays in a
// normal test run.
const randomSeeds = 150

func testRandomTraces(t *testing.T, newLimiter newLimiterFunc) {
	for seed := range uint64(randomSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			b := make([]byte, 4+3*(40+rng.IntN(80)))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			tr := decodeTrace(b)
			clock := newFakeClock()
			checkTrace(t, newLimiter(t, tr.policy, throttle.Options{Clock: clock.Now, MaxPending: tr.maxPending}), clock, tr)
		})
	}
}
