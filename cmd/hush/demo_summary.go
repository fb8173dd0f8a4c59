package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// demoTotals counts how the pushes of the burst ended.
type demoTotals struct {
	pushes, sentAtOnce, deferred, dropped, tokenInvalid, failed, critical int
	// deadTokenAnswers counts provider answers "token invalid", also for
	// pushes that reached another device.
	deadTokenAnswers int
}

func (w *demoWatch) totals() demoTotals {
	var t demoTotals
	t.pushes = len(w.pushes)
	for _, s := range w.pushes {
		for _, a := range s.arrivals {
			if a.status != 200 {
				t.deadTokenAnswers++
			}
		}
		switch s.final {
		case "delivered":
			switch {
			case s.critical:
				t.critical++
			case s.deferred:
				t.deferred++
			default:
				t.sentAtOnce++
			}
		case "expired":
			t.dropped++
		case "token_invalid":
			t.tokenInvalid++
		default:
			t.failed++
		}
	}
	return t
}

// summary prints, per user, every push in the order it went out with the
// spacing from the previous one and what held it back, then the totals and
// what the providers saw against the rules.
func (w *demoWatch) summary() {
	fmt.Fprintf(w.out, "\nSummary (rules %s; critical pushes bypass the limiter)\n", w.policy)
	var users []string
	for _, s := range w.pushes {
		if !slices.Contains(users, s.user) {
			users = append(users, s.user)
		}
	}
	for _, u := range users {
		var mine []*pushState
		for _, s := range w.pushes {
			if s.user == u {
				mine = append(mine, s)
			}
		}
		// Sent pushes in send order, then the others.
		slices.SortStableFunc(mine, func(a, b *pushState) int {
			ta, tb := a.firstSent(), b.firstSent()
			switch {
			case ta.IsZero() && tb.IsZero():
				return 0
			case ta.IsZero():
				return 1
			case tb.IsZero():
				return -1
			}
			return ta.Compare(tb)
		})
		sent := 0
		for _, s := range mine {
			if !s.firstSent().IsZero() {
				sent++
			}
		}
		fmt.Fprintf(w.out, "%s (%s): %d of %d sent\n", u, mine[0].platforms(), sent, len(mine))
		var prev time.Time
		for _, s := range mine {
			t := s.firstSent()
			var line string
			switch {
			case !t.IsZero():
				line = "sent " + w.since(t)
				if !prev.IsZero() {
					line += fmt.Sprintf("  %6.3fs after the previous", t.Sub(prev).Seconds())
				} else {
					line += strings.Repeat(" ", 28)
				}
				prev = t
				switch {
				case s.critical:
					line += "  critical: not limited"
				case s.deferred:
					line += "  held back by " + s.blame
				default:
					line += "  at once"
				}
			case s.final == "expired":
				line = "dropped: expired before its slot"
			case s.final == "token_invalid":
				line = "not sent: every token invalid"
			default:
				line = s.final
			}
			fmt.Fprintf(w.out, "  #%-2d %s\n", s.n, line)
		}
	}
	t := w.totals()
	fmt.Fprintf(w.out, "\n%d pushes: %d sent at once, %d deferred then sent, %d critical (not limited), %d dropped as expired",
		t.pushes, t.sentAtOnce, t.deferred, t.critical, t.dropped)
	if t.tokenInvalid > 0 {
		fmt.Fprintf(w.out, ", %d not sent (token invalid)", t.tokenInvalid)
	}
	if t.failed > 0 {
		fmt.Fprintf(w.out, ", %d failed", t.failed)
	}
	fmt.Fprintln(w.out)
	if t.deadTokenAnswers > 0 {
		fmt.Fprintf(w.out, "%d provider answers said a token is invalid (hush:events gets a token_invalid event for each)\n", t.deadTokenAnswers)
	}
	w.checkRules()
}

// demoJitter is how far off its booked slot a send may reach a fake: the
// worker's own clock reading and the request's trip.
const demoJitter = 100 * time.Millisecond

// ruleTolerance is the contract's allowance for clock and network jitter
// when rules are measured at the provider (docs/delivery.md).
const ruleTolerance = 250 * time.Millisecond

// checkRules prints what the providers saw against the rules: the closest
// two limited sends to one user and the most in any window of each rule.
func (w *demoWatch) checkRules() {
	closest := time.Duration(-1)
	most := make([]int, len(w.policy.Limits))
	for _, u := range w.usersInOrder() {
		ts := w.sentTimes(u, nil, time.Now())
		slices.SortFunc(ts, time.Time.Compare)
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); closest < 0 || d < closest {
				closest = d
			}
		}
		for r, l := range w.policy.Limits {
			for i := range ts {
				n := 0
				for j := i; j < len(ts) && ts[j].Sub(ts[i]) < l.Window-demoJitter; j++ {
					n++
				}
				most[r] = max(most[r], n)
			}
		}
	}
	var parts []string
	if closest >= 0 && w.policy.MinGap > 0 {
		verdict := "kept"
		switch {
		case closest < w.policy.MinGap-ruleTolerance:
			verdict = "BROKEN"
		case closest < w.policy.MinGap:
			// Slots are booked exactly min-gap apart; the sends reach the
			// fakes a few ms either side of them.
			verdict = fmt.Sprintf("kept: slots %s apart, arrivals within %s of them", w.policy.MinGap, ruleTolerance)
		}
		parts = append(parts, fmt.Sprintf("%s %s (closest two sends to one user %.3fs apart)", throttlePolicyGap(w), verdict, closest.Seconds()))
	}
	note := ""
	if len(w.policy.Limits) > 0 {
		note = fmt.Sprintf("\n(windows are counted %s short: sends reach the fakes a few ms off their booked slots)", demoJitter)
	}
	for r, l := range w.policy.Limits {
		verdict := "kept"
		if most[r] > l.N {
			verdict = "BROKEN"
		}
		parts = append(parts, fmt.Sprintf("%s %s (most in any %s: %d)", l.String(), verdict, l.String()[strings.Index(l.String(), "/")+1:], most[r]))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w.out, "as the providers saw it: %s%s\n", strings.Join(parts, "; "), note)
	}
}

func throttlePolicyGap(w *demoWatch) string {
	p := w.policy
	p.Limits = nil
	return p.String()
}

func (w *demoWatch) usersInOrder() []string {
	var users []string
	for _, s := range w.pushes {
		if !slices.Contains(users, s.user) {
			users = append(users, s.user)
		}
	}
	return users
}
