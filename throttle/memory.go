package throttle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
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
	c          compiled
	clock      func() time.Time
	maxPending int
	margin     int64

	mu     sync.Mutex
	users  map[string]*memUser
	prefs  map[string]Preferences // PutPreferences's, by user
	seq    uint64                 // makes Allow's members unique
	writes int
}

// memUser is one user's sets and collapse records, as Redis keeps them
// under the user's keys.
type memUser struct {
	// sets: "" the global set, else a category's; each sorted by (at,
	// member).
	sets map[string][]memEntry
	// collapse: "k:<category>:<collapse key>" -> the newest accepted
	// member booked with it; "x:<member>" -> the member that replaced it.
	collapse map[string]collapseRecord
}

// collapseRecord is one field of a user's collapse hash: the member it
// names, the accepted instant it orders by (for x: the replacing push's),
// and until, when the booking it names leaves its window and the record
// goes with it (ms).
type collapseRecord struct {
	member          string
	accepted, until int64
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
	c, err := compile(p)
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
	return &Memory{policy: copyPolicy(p), c: c, clock: clock, maxPending: pendingCap(o),
		margin: o.CollapseMargin.Milliseconds(), users: map[string]*memUser{}, prefs: map[string]Preferences{}}, nil
}

// Policy returns the policy the limiter enforces.
func (m *Memory) Policy() Policy { return copyPolicy(m.policy) }

// Allow decides whether user may act now under the global rules and
// records the action when allowed.
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
	r := &m.c.global
	es := m.entries(user, "")
	ts := times(es)
	t, denied := r.earliest(ts, now, true)
	d := Decision{Now: ms(now), RetryAfter: time.Duration(t-now) * time.Millisecond, DeniedBy: r.deniedName(denied)}
	d.Remaining = r.remaining(ts, now)
	if t != now {
		return d, nil
	}
	d.Allowed = true
	for i := range d.Remaining {
		d.Remaining[i] = max(0, d.Remaining[i]-1)
	}
	if record {
		m.seq++
		m.insert(user, set{cat: "", r: r}, memEntry{at: now, member: "allow:" + strconv.FormatUint(m.seq, 10)}, now)
		m.wrote(now)
	}
	return d, nil
}

// Reserve books the earliest slot at which user may act (global rules,
// quiet hours in UTC) and records it under member; a member already booked
// gets its slot back (Existing). With Options.MaxPending a new member may be
// refused (RefusedFull).
func (m *Memory) Reserve(ctx context.Context, user, member string) (Reservation, error) {
	return m.reserve(ctx, Request{User: user, Member: member})
}

// reserve books q: the steps of the package documentation's Reserve, in
// order.
func (m *Memory) reserve(ctx context.Context, q Request) (Reservation, error) {
	if err := checkMember(ctx, q.User, q.Member); err != nil {
		return Reservation{}, err
	}
	sets, quiet, err := m.c.plan(q.Category)
	if err != nil {
		return Reservation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock().UnixMilli()
	if m.c.optOutable(q) && m.prefs[q.User].OptsOut(q.Category) {
		// Opted out: no budget used, and a held booking is given back.
		for _, s := range sets {
			m.remove(q.User, s.cat, q.Member)
		}
		return reservation(now, now, false, RefusedOptedOut), nil
	}
	for _, s := range sets {
		m.trim(q.User, s, now)
	}
	home := sets[0].cat
	if i := m.find(q.User, home, q.Member); i >= 0 {
		return reservation(m.entries(q.User, home)[i].at, now, true, ""), nil
	}
	// The held booking this one may replace, taken out for the search.
	old, oldAt := "", int64(0)
	accepted := notAfterMs(q.Accepted)
	if q.CollapseKey != "" {
		cl := m.collapse(q.User, now)
		if x, gone := cl["x:"+q.Member]; gone {
			return replaced(now, x.member), nil
		}
		if k, ok := cl[collapseField(q.Category, q.CollapseKey)]; ok && k.member != q.Member {
			// The newest accepted push wins: one accepted before the push
			// the key names is stale (on a tie the later booking wins).
			if accepted < k.accepted {
				return replaced(now, k.member), nil
			}
			if i := m.find(q.User, home, k.member); i >= 0 && m.entries(q.User, home)[i].at > now+m.margin {
				old, oldAt = k.member, m.entries(q.User, home)[i].at
				for _, s := range sets {
					m.remove(q.User, s.cat, old)
				}
			}
		}
	}
	restore := func() {
		if old != "" {
			for _, s := range sets {
				m.insert(q.User, s, memEntry{at: oldAt, member: old}, now)
			}
		}
	}
	if m.maxPending > 0 {
		for _, s := range sets {
			es := m.entries(q.User, s.cat)
			if k := countUpToEntry(es, now); len(es)-k >= m.maxPending {
				restore()
				return reservation(es[k].at, now, false, RefusedFull), nil
			}
		}
	}
	start := max(now, notAfterMs(q.NotBefore))
	bs := m.bounds(q.User, sets)
	qs, notAfter := window(quiet, q.Location, start, start, notAfterMs(q.NotAfter))
	t := earliestAll(bs, qs, now, start)
	heldBy := heldName(sets, quiet, heldCode(bs, qs, now, start, t))
	if notAfter != 0 && t > notAfter {
		restore()
		res := reservation(t, now, false, RefusedLate)
		res.HeldBy = heldBy
		return res, nil
	}
	for _, s := range sets {
		m.insert(q.User, s, memEntry{at: t, member: q.Member}, now)
	}
	if q.CollapseKey != "" {
		cl, h := m.collapse(q.User, now), sets[0].r.horizon
		cl[collapseField(q.Category, q.CollapseKey)] = collapseRecord{member: q.Member, accepted: accepted, until: t + h}
		if old != "" {
			cl["x:"+old] = collapseRecord{member: q.Member, accepted: accepted, until: oldAt + h}
		}
	}
	m.wrote(now)
	res := reservation(t, now, false, "")
	res.Collapsed, res.HeldBy = old, heldBy
	return res, nil
}

// collapseField is the collapse record naming the member booked last with
// key in category cat.
func collapseField(cat, key string) string { return "k:" + cat + ":" + key }

// notAfterMs is t in Unix ms, 0 for the zero time (a NotAfter or a
// NotBefore).
func notAfterMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Release removes member's booking from every set of user; it reports
// whether there was one.
func (m *Memory) Release(ctx context.Context, user, member string) (bool, error) {
	if err := checkMember(ctx, user, member); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock().UnixMilli()
	found := false
	for _, s := range m.c.allSets() {
		m.trim(user, s, now)
		found = m.remove(user, s.cat, member) || found
	}
	return found, nil
}

// ReleaseBatch is Release for many bookings.
func (m *Memory) ReleaseBatch(ctx context.Context, hs []Held) ([]bool, error) {
	found := make([]bool, len(hs))
	for i, h := range hs {
		ok, err := m.Release(ctx, h.User, h.Member)
		if err != nil {
			return nil, err
		}
		found[i] = ok
	}
	return found, nil
}

// Status describes user's entries, remaining counts, next allowed times
// and quiet hours per category, with loc (nil: UTC) as the user's time
// zone.
func (m *Memory) Status(ctx context.Context, user string, loc *time.Location) (Status, error) {
	if err := check(ctx, user); err != nil {
		return Status{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock().UnixMilli()
	sets := map[string][]Entry{}
	for _, s := range m.c.allSets() {
		es := m.entries(user, s.cat)
		for _, e := range es[countUpToEntry(es, now-s.r.horizon):] {
			sets[s.cat] = append(sets[s.cat], Entry{Member: e.member, At: ms(e.at)})
		}
	}
	return m.c.status(sets, now, loc), nil
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
// NotAfter, NotBefore, Category, Location and CollapseKey. As with Redis, a
// request that fails (an unknown category) fails alone: its Reservation's
// Now is zero and err joins one error per failed request.
func (m *Memory) ReserveBatch(ctx context.Context, reqs []Request) ([]Reservation, error) {
	if err := checkRequests(reqs); err != nil {
		return nil, err
	}
	out := make([]Reservation, len(reqs))
	var failed []error
	for i, q := range reqs {
		r, err := m.reserve(ctx, q)
		if err != nil {
			failed = append(failed, fmt.Errorf("throttle: reserve %q: %w", q.User, err))
			continue
		}
		out[i] = r
	}
	return out, errors.Join(failed...)
}

// entries returns user's entries in set cat (nil when none).
func (m *Memory) entries(user, cat string) []memEntry {
	if u := m.users[user]; u != nil {
		return u.sets[cat]
	}
	return nil
}

func (m *Memory) bounds(user string, sets []set) []bound {
	bs := make([]bound, len(sets))
	for i, s := range sets {
		bs[i] = bound{r: s.r, ts: times(m.entries(user, s.cat))}
	}
	return bs
}

// find returns the index of member in user's set cat, or -1.
func (m *Memory) find(user, cat, member string) int {
	return slices.IndexFunc(m.entries(user, cat), func(e memEntry) bool { return e.member == member })
}

// collapse returns user's live collapse records at now, creating them:
// a record whose booking has left its window is deleted, as reserve.lua
// deletes it.
func (m *Memory) collapse(user string, now int64) map[string]collapseRecord {
	u := m.user(user)
	if u.collapse == nil {
		u.collapse = map[string]collapseRecord{}
	}
	maps.DeleteFunc(u.collapse, func(_ string, r collapseRecord) bool { return r.until <= now })
	return u.collapse
}

func (m *Memory) user(user string) *memUser {
	u := m.users[user]
	if u == nil {
		u = &memUser{sets: map[string][]memEntry{}}
		m.users[user] = u
	}
	return u
}

// trim drops the entries of user's set s at or before now - its horizon.
func (m *Memory) trim(user string, s set, now int64) {
	es := m.entries(user, s.cat)
	if k := countUpToEntry(es, now-s.r.horizon); k > 0 {
		m.store(user, s.cat, slices.Delete(es, 0, k))
	}
}

// remove deletes member from user's set cat; it reports whether it was
// there.
func (m *Memory) remove(user, cat, member string) bool {
	es := m.entries(user, cat)
	i := slices.IndexFunc(es, func(e memEntry) bool { return e.member == member })
	if i < 0 {
		return false
	}
	m.store(user, cat, slices.Delete(es, i, i+1))
	return true
}

// insert adds e to user's set s and drops what aged out of it.
func (m *Memory) insert(user string, s set, e memEntry, now int64) {
	es := m.entries(user, s.cat)
	i, _ := slices.BinarySearchFunc(es, e, compareEntries)
	es = slices.Insert(es, i, e)
	if k := countUpToEntry(es, now-s.r.horizon); k > 0 {
		es = slices.Delete(es, 0, k)
	}
	m.store(user, s.cat, es)
}

// wrote counts a write and sweeps now and then.
func (m *Memory) wrote(now int64) {
	m.writes++
	if m.writes%sweepEvery == 0 {
		m.sweep(now)
	}
}

func (m *Memory) store(user, cat string, es []memEntry) {
	u := m.user(user)
	if len(es) == 0 {
		delete(u.sets, cat)
		return
	}
	u.sets[cat] = es
}

// sweep drops users whose every entry has aged out (their collapse records
// go with them, as the Redis keys' TTLs take them).
func (m *Memory) sweep(now int64) {
	horizon := map[string]int64{}
	for _, s := range m.c.allSets() {
		horizon[s.cat] = s.r.horizon
	}
	for u, mu := range m.users {
		live := false
		for cat, es := range mu.sets {
			h, ok := horizon[cat]
			if !ok || es[len(es)-1].at > now-h {
				live = true
			}
		}
		if !live {
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

// replaced is the RefusedCollapsed answer for a member the member by
// took the place of.
func replaced(now int64, by string) Reservation {
	r := reservation(now, now, false, RefusedCollapsed)
	r.ReplacedBy = by
	return r
}
