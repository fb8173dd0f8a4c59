package throttle

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
)

// sweepEvery is how many writes pass between two sweeps that drop users
// whose entries have all aged out, so a long-running process does not keep
// every user it ever saw.
const sweepEvery = 1024

// Memory is the in-memory limiter: the same semantics as Redis, for a single
// process (the demo, `hush simulate`, tests). It is safe for concurrent use.
type Memory struct {
	policy     Policy
	r          rules
	clock      func() time.Time
	maxPending int

	mu     sync.Mutex
	users  map[string][]memEntry // sorted by (at, member)
	seq    uint64                // makes Allow's members unique
	writes int
}

type memEntry struct {
	at     int64
	member string
}

func compareEntries(a, b memEntry) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.member, b.member))
}

// NewMemory returns an in-memory limiter for p. Options.Prefix is ignored;
// Options.Clock defaults to time.Now.
func NewMemory(p Policy, o Options) (*Memory, error) {
	r, err := newRules(p)
	if err != nil {
		return nil, err
	}
	if err := checkOptions(o); err != nil {
		return nil, err
	}
	clock := o.Clock
	if clock == nil {
		clock = time.Now
	}
	return &Memory{policy: copyPolicy(p), r: r, clock: clock, maxPending: o.MaxPending, users: map[string][]memEntry{}}, nil
}

// Policy returns the policy the limiter enforces.
func (m *Memory) Policy() Policy { return copyPolicy(m.policy) }

// Allow decides whether user may act now and records the action when allowed.
func (m *Memory) Allow(ctx context.Context, user string) (Decision, error) {
	return m.decide(ctx, user, true)
}

// Peek answers like Allow but records nothing.
func (m *Memory) Peek(ctx context.Context, user string) (Decision, error) {
	return m.decide(ctx, user, false)
}

func (m *Memory) decide(ctx context.Context, user string, record bool) (Decision, error) {
	if err := check(ctx, user); err != nil {
		return Decision{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock().UnixMilli()
	es := m.users[user]
	ts := times(es)
	t, denied := m.r.earliest(ts, now, true)
	d := Decision{Now: ms(now), RetryAfter: time.Duration(t-now) * time.Millisecond, DeniedBy: m.r.deniedName(denied)}
	d.Remaining = m.r.remaining(ts, now)
	if t != now {
		return d, nil
	}
	d.Allowed = true
	for i := range d.Remaining {
		d.Remaining[i] = max(0, d.Remaining[i]-1)
	}
	if record {
		m.seq++
		m.insert(user, es, memEntry{at: now, member: "allow:" + strconv.FormatUint(m.seq, 10)}, now)
	}
	return d, nil
}

// Reserve books the earliest slot at which user may act and records it under
// member; a member already booked gets its slot back (Existing). With
// Options.MaxPending a new member may be refused (RefusedFull).
func (m *Memory) Reserve(ctx context.Context, user, member string) (Reservation, error) {
	return m.reserve(ctx, Request{User: user, Member: member})
}

// reserve is Reserve for q, refusing a new member whose slot is after
// q.NotAfter (RefusedLate). The cap is checked first, before any search.
func (m *Memory) reserve(ctx context.Context, q Request) (Reservation, error) {
	if err := checkMember(ctx, q.User, q.Member); err != nil {
		return Reservation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock().UnixMilli()
	es := m.trim(q.User, now)
	if i := slices.IndexFunc(es, func(e memEntry) bool { return e.member == q.Member }); i >= 0 {
		return reservation(es[i].at, now, true, ""), nil
	}
	if k := countUpToEntry(es, now); m.maxPending > 0 && len(es)-k >= m.maxPending {
		return reservation(es[k].at, now, false, RefusedFull), nil
	}
	t, _ := m.r.earliest(times(es), now, false)
	if !q.NotAfter.IsZero() && t > q.NotAfter.UnixMilli() {
		return reservation(t, now, false, RefusedLate), nil
	}
	m.insert(q.User, es, memEntry{at: t, member: q.Member}, now)
	return reservation(t, now, false, ""), nil
}

// Release removes member's booking; it reports whether there was one.
func (m *Memory) Release(ctx context.Context, user, member string) (bool, error) {
	if err := checkMember(ctx, user, member); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock().UnixMilli()
	es := m.trim(user, now)
	i := slices.IndexFunc(es, func(e memEntry) bool { return e.member == member })
	if i < 0 {
		return false, nil
	}
	m.store(user, slices.Delete(es, i, i+1))
	return true, nil
}

// Status describes user's entries, remaining counts and next allowed time.
func (m *Memory) Status(ctx context.Context, user string) (Status, error) {
	if err := check(ctx, user); err != nil {
		return Status{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock().UnixMilli()
	es := m.users[user]
	es = es[countUpToEntry(es, now-m.r.horizon):]
	ts := times(es)
	t, _ := m.r.earliest(ts, now, false)
	s := Status{Remaining: m.r.remaining(ts, now), NextAllowed: ms(t), Now: ms(now)}
	for _, e := range es {
		s.Entries = append(s.Entries, Entry{Member: e.member, At: ms(e.at)})
	}
	return s, nil
}

// Reset forgets everything about user.
func (m *Memory) Reset(ctx context.Context, user string) error {
	if err := check(ctx, user); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.users, user)
	return nil
}

// AllowBatch is Allow for each user in turn.
func (m *Memory) AllowBatch(ctx context.Context, users []string) ([]Decision, error) {
	if err := checkUsers(users); err != nil {
		return nil, err
	}
	out := make([]Decision, len(users))
	for i, u := range users {
		d, err := m.Allow(ctx, u)
		if err != nil {
			return out, err
		}
		out[i] = d
	}
	return out, nil
}

// ReserveBatch is Reserve for each request in turn, each with its own
// NotAfter.
func (m *Memory) ReserveBatch(ctx context.Context, reqs []Request) ([]Reservation, error) {
	if err := checkRequests(reqs); err != nil {
		return nil, err
	}
	out := make([]Reservation, len(reqs))
	for i, q := range reqs {
		r, err := m.reserve(ctx, q)
		if err != nil {
			return out, err
		}
		out[i] = r
	}
	return out, nil
}

// trim drops user's entries at or before now-horizon and returns the rest.
func (m *Memory) trim(user string, now int64) []memEntry {
	es := m.users[user]
	if k := countUpToEntry(es, now-m.r.horizon); k > 0 {
		es = slices.Delete(es, 0, k)
		m.store(user, es)
	}
	return es
}

// insert adds e to es (user's trimmed or untrimmed entries) and stores the
// result trimmed.
func (m *Memory) insert(user string, es []memEntry, e memEntry, now int64) {
	i, _ := slices.BinarySearchFunc(es, e, compareEntries)
	es = slices.Insert(es, i, e)
	if k := countUpToEntry(es, now-m.r.horizon); k > 0 {
		es = slices.Delete(es, 0, k)
	}
	m.store(user, es)
	m.writes++
	if m.writes%sweepEvery == 0 {
		m.sweep(now)
	}
}

func (m *Memory) store(user string, es []memEntry) {
	if len(es) == 0 {
		delete(m.users, user)
		return
	}
	m.users[user] = es
}

// sweep drops users whose newest entry has aged out.
func (m *Memory) sweep(now int64) {
	for u, es := range m.users {
		if es[len(es)-1].at <= now-m.r.horizon {
			delete(m.users, u)
		}
	}
}

func countUpToEntry(es []memEntry, x int64) int {
	i, _ := slices.BinarySearchFunc(es, x, func(e memEntry, x int64) int {
		if e.at <= x {
			return -1
		}
		return 1
	})
	return i
}

func times(es []memEntry) []int64 {
	ts := make([]int64, len(es))
	for i, e := range es {
		ts[i] = e.at
	}
	return ts
}

func reservation(at, now int64, existing bool, refused Refusal) Reservation {
	return Reservation{At: ms(at), Wait: time.Duration(max(0, at-now)) * time.Millisecond, Existing: existing, Refused: refused, Now: ms(now)}
}
