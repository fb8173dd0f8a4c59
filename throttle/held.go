package throttle

// What holds a booking's slot (Reservation.HeldBy). A slot At found by a
// search from start = max(now, NotBefore) is held by:
//   - nothing ("") when At is now;
//   - the request's NotBefore (HeldBySendAt) when At is start, after now;
//   - else the first of the request's rules, in order (each of its sets in
//     turn, the home set first: the set's limits in order, then its gap),
//     that rules out the instant just before At (At - 1 ms), whose ruled
//     out run At ends; else its quiet hours, which then hold that instant.
//
// Both limiters compute it as a code: reserve.lua (tracking the rule that
// moved the slot last where every rule's instants form a ray, looking at
// At - 1 after a sweep) and Memory (heldCode), so the names come from one
// place (heldName).
const (
	heldNone    = 0
	heldQuiet   = -1
	heldSendAt  = -2
	heldPerSet  = 1000 // a rule's code is set*heldPerSet + rule, both from 1
	maxHeldRule = heldPerSet - 1
)

// HeldBySendAt is Reservation.HeldBy for a slot held by its request's
// NotBefore (a scheduled send).
const HeldBySendAt = "send_at"

// heldCode is the code of what holds slot t, searched from start (>= now)
// over bs with the quiet intervals qs: see the constants above.
func heldCode(bs []bound, qs []interval, now, start, t int64) int64 {
	switch {
	case t <= now:
		return heldNone
	case t == start:
		return heldSendAt
	}
	x := t - 1
	for b, bd := range bs {
		for i := range len(bd.r.n) + 1 {
			if !bd.r.ok(bd.ts, x, i) {
				return int64(b+1)*heldPerSet + int64(i+1)
			}
		}
	}
	for _, q := range qs {
		if q.s <= x && x < q.e {
			return heldQuiet
		}
	}
	return heldNone
}

// heldName is Reservation.HeldBy for code, given the request's sets and
// quiet hours: a rule's name as DeniedBy gives it ("10/1m", "min-gap 3s", a
// category's "marketing 2/1d"), "quiet 22:00-08:00", HeldBySendAt, or "".
// A code naming no rule of sets is "".
func heldName(sets []set, quiet Quiet, code int64) string {
	switch code {
	case heldNone:
		return ""
	case heldQuiet:
		return "quiet " + quiet.String()
	case heldSendAt:
		return HeldBySendAt
	}
	b, i := int(code/heldPerSet)-1, int(code%heldPerSet)-1
	if b < 0 || b >= len(sets) || i < 0 || i >= len(sets[b].r.names) {
		return ""
	}
	return sets[b].r.names[i]
}
