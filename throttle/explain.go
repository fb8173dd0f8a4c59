package throttle

import (
	"context"
	"time"
)

// Explanation says why a booking would get its slot: what the rules alone
// would give, what the quiet hours add, and which rule holds it back most.
type Explanation struct {
	// At is the slot Reserve would book for the request now (the cap and
	// NotAfter aside).
	At time.Time
	// WithoutQuiet is the slot the rules alone would give: At minus
	// WithoutQuiet is the time the quiet hours hold the booking.
	WithoutQuiet time.Time
	// HeldBy names, among the rules that rule out the search's start
	// (max(now, NotBefore)), the one that on its own would be satisfied
	// latest, as DeniedBy does ("10/1m", "min-gap 3s", a category's
	// "marketing 2/1d"); empty when no rule does.
	HeldBy string
	// Now is the limiter's clock.
	Now time.Time
}

// Explain answers what Reserve would book for q now, and why, booking
// nothing. It is for offline replays (hush simulate), so it is offered by
// the in-memory limiter only.
func (m *Memory) Explain(ctx context.Context, q Request) (Explanation, error) {
	if err := check(ctx, q.User); err != nil {
		return Explanation{}, err
	}
	sets, quiet, err := m.c.plan(q.Category)
	if err != nil {
		return Explanation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock().UnixMilli()
	start := max(now, notAfterMs(q.NotBefore))
	bs := m.bounds(q.User, sets)
	t, _ := search(bs, quiet, q.Location, now, start, start, notAfterMs(q.NotAfter))
	e := Explanation{Now: ms(now), At: ms(t), WithoutQuiet: ms(earliestAll(bs, nil, now, start))}
	worst := start
	for _, b := range bs {
		for i := range len(b.r.n) + 1 {
			if b.r.ok(b.ts, start, i) {
				continue
			}
			if ti := b.r.firstFeasible(b.ts, start, i); ti > worst || e.HeldBy == "" {
				worst, e.HeldBy = ti, b.r.names[i]
			}
		}
	}
	return e, nil
}
