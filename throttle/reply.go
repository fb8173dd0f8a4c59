package throttle

import (
	"fmt"
	"time"
)

// ints checks that v is an array of at least n integers and returns them.
func ints(v any, n int, what string) ([]any, []int64, error) {
	a, ok := v.([]any)
	if !ok || len(a) < n {
		return nil, nil, fmt.Errorf("%w: %s: want an array of %d integers, got %#v", ErrUnexpectedReply, what, n, v)
	}
	out := make([]int64, n)
	for i := range n {
		x, ok := a[i].(int64)
		if !ok {
			return nil, nil, fmt.Errorf("%w: %s: element %d: want an integer, got %#v", ErrUnexpectedReply, what, i, a[i])
		}
		out[i] = x
	}
	return a, out, nil
}

// parseDecision reads allow.lua's reply.
func (l *Redis) parseDecision(v any) (Decision, error) {
	nl := len(l.r.n)
	a, x, err := ints(v, 4+nl, "allow")
	if err != nil {
		return Decision{}, err
	}
	if len(a) != 4+nl {
		return Decision{}, fmt.Errorf("%w: allow: want %d elements, got %d", ErrUnexpectedReply, 4+nl, len(a))
	}
	allowed, retry, denied, now := x[0], x[1], x[2], x[3]
	switch {
	case allowed != 0 && allowed != 1:
		return Decision{}, fmt.Errorf("%w: allow: allowed = %d", ErrUnexpectedReply, allowed)
	case retry < 0 || (allowed == 1) != (retry == 0):
		return Decision{}, fmt.Errorf("%w: allow: allowed = %d with retry-after %d ms", ErrUnexpectedReply, allowed, retry)
	case denied < 0 || denied > int64(nl)+1 || (allowed == 1) != (denied == 0):
		return Decision{}, fmt.Errorf("%w: allow: allowed = %d with denied rule %d", ErrUnexpectedReply, allowed, denied)
	}
	d := Decision{
		Allowed:    allowed == 1,
		RetryAfter: time.Duration(retry) * time.Millisecond,
		DeniedBy:   l.r.deniedName(int(denied) - 1),
		Now:        ms(now),
		Remaining:  make([]int, nl),
	}
	for i := range nl {
		rem := x[4+i]
		if rem < 0 || rem > l.r.n[i] {
			return Decision{}, fmt.Errorf("%w: allow: remaining[%d] = %d", ErrUnexpectedReply, i, rem)
		}
		d.Remaining[i] = int(rem)
	}
	return d, nil
}

// parseReservation reads one of reserve.lua's replies, given the call's
// now: a new booking's slot alone, or an array, whose sixth element, when
// there is one, is the code of what holds the slot (held.go), which it
// returns beside the Reservation.
func parseReservation(v any, now int64) (Reservation, int64, error) {
	if at, ok := v.(int64); ok {
		if at < now {
			return Reservation{}, 0, fmt.Errorf("%w: reserve: a new booking at %d, before now %d", ErrUnexpectedReply, at, now)
		}
		return reservation(at, now, false, ""), heldNone, nil
	}
	a, x, err := ints(v, 3, "reserve")
	if err != nil {
		return Reservation{}, 0, err
	}
	if (len(a) != 5 && len(a) != 6) || (x[1] != 0 && x[1] != 1) {
		return Reservation{}, 0, fmt.Errorf("%w: reserve: %#v", ErrUnexpectedReply, v)
	}
	refused, ok := a[3].(string)
	collapsed, ok2 := a[4].(string)
	held := int64(heldNone)
	if len(a) == 6 {
		h, isInt := a[5].(int64)
		if !isInt || x[1] == 1 {
			return Reservation{}, 0, fmt.Errorf("%w: reserve: held by %#v", ErrUnexpectedReply, a[5])
		}
		held = h
	}
	switch r := Refusal(refused); {
	case !ok || !ok2 || (r != "" && r != RefusedFull && r != RefusedLate && r != RefusedCollapsed && r != RefusedOptedOut):
		return Reservation{}, 0, fmt.Errorf("%w: reserve: refusal %#v, collapsed %#v", ErrUnexpectedReply, a[3], a[4])
	case r != "" && x[1] == 1:
		return Reservation{}, 0, fmt.Errorf("%w: reserve: an existing booking refused (%s)", ErrUnexpectedReply, r)
	case collapsed != "" && (r != "" && r != RefusedCollapsed || x[1] == 1):
		return Reservation{}, 0, fmt.Errorf("%w: reserve: collapsed %q on a refused or existing booking", ErrUnexpectedReply, collapsed)
	}
	res := reservation(x[0], x[2], x[1] == 1, Refusal(refused))
	if res.Refused == RefusedCollapsed {
		res.ReplacedBy = collapsed
	} else {
		res.Collapsed = collapsed
	}
	return res, held, nil
}

// parseStatus reads status.lua's reply: now, then each of the user's sets'
// entries.
func (l *Redis) parseStatus(v any, loc *time.Location) (Status, error) {
	a, x, err := ints(v, 1, "status")
	if err != nil {
		return Status{}, err
	}
	sets := map[string][]Entry{}
	i := 1
	for _, s := range l.c.allSets() {
		if i >= len(a) {
			return Status{}, fmt.Errorf("%w: status: reply ends before set %q", ErrUnexpectedReply, s.cat)
		}
		n, ok := a[i].(int64)
		if !ok || n < 0 || i+1+2*int(n) > len(a) {
			return Status{}, fmt.Errorf("%w: status: set %q: count %#v", ErrUnexpectedReply, s.cat, a[i])
		}
		i++
		for range n {
			m, ok1 := a[i].(string)
			at, ok2 := a[i+1].(int64)
			if !ok1 || !ok2 {
				return Status{}, fmt.Errorf("%w: status: entry %#v %#v", ErrUnexpectedReply, a[i], a[i+1])
			}
			sets[s.cat] = append(sets[s.cat], Entry{Member: m, At: ms(at)})
			i += 2
		}
	}
	if i != len(a) {
		return Status{}, fmt.Errorf("%w: status: %d elements left over", ErrUnexpectedReply, len(a)-i)
	}
	return l.c.status(sets, x[0], loc), nil
}
