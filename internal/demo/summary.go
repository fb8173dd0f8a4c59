package demo

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hushpush/hush/internal/cmdkit"
	"github.com/hushpush/hush/throttle"
)

// tally counts how the pushes of the burst ended.
type tally struct {
	pushes, sentAtOnce, deferred, dropped, tokenInvalid, failed, critical int
	// deadTokenAnswers counts provider answers "token invalid", also for
	// pushes that reached another device.
	deadTokenAnswers int
}

func (w *watch) totals() tally {
	var t tally
	t.pushes = len(w.pushes)
	for _, s := range w.pushes {
		for _, a := range s.arrivals {
			if !a.sent() {
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
func (w *watch) summary() {
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
				note := ""
				if !s.critical && quietOf(w.policy, s.category).Off() && inQuiet(w.policy.Quiet, t) {
					note = ": inside the quiet hours, which it does not keep"
				}
				line += s.tag(note)
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

// jitter is how far off its booked slot a send may reach a fake: the
// worker's own clock reading and the request's trip.
const jitter = 100 * time.Millisecond

// ruleTolerance is the contract's allowance for clock and network jitter
// when rules are measured at the provider (docs/delivery.md).
const ruleTolerance = 250 * time.Millisecond

// checkRules prints what the providers saw against each rule, one line
// each: the global rules on the pushes that keep them, each category's own
// rules on its pushes, and the quiet hours.
func (w *watch) checkRules() {
	rows := w.checkSet("", w.policy.Limits, w.policy.MinGap, func(s *pushState) bool { return keepsGlobal(w.policy, s.category) })
	for _, name := range slices.Sorted(maps.Keys(w.policy.Categories)) {
		k := w.policy.Categories[name]
		rows = append(rows, w.checkSet(name, k.Limits, k.MinGap, func(s *pushState) bool { return s.category == name })...)
	}
	if !w.quiet.off() {
		rows = append(rows, [2]string{blameQuiet, w.checkQuiet()})
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w.out, "as the providers saw it (critical pushes are outside the rules):")
	tw := tabwriter.NewWriter(w.out, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	_ = tw.Flush()
	if len(w.policy.Limits) > 0 {
		fmt.Fprintf(w.out, "(windows are counted %s short: sends reach the fakes a few ms off their booked slots)\n", jitter)
	}
}

// checkSet checks one set of rules (the global ones, or category cat's)
// on the sends of the pushes keep says it holds: the closest two to one
// user against the gap, and the most in any window of each limit. It
// returns a row (rule, verdict) for each rule some sends bear on.
func (w *watch) checkSet(cat string, limits []throttle.Limit, gap time.Duration, keep func(*pushState) bool) [][2]string {
	prefix := ""
	if cat != "" {
		prefix = cat + " "
	}
	closest := time.Duration(-1)
	most := make([]int, len(limits))
	for _, u := range w.usersInOrder() {
		ts := w.sentTimes(u, nil, time.Now(), keep)
		slices.SortFunc(ts, time.Time.Compare)
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); closest < 0 || d < closest {
				closest = d
			}
		}
		for r, l := range limits {
			for i := range ts {
				n := 0
				for j := i; j < len(ts) && ts[j].Sub(ts[i]) < l.Window-jitter; j++ {
					n++
				}
				most[r] = max(most[r], n)
			}
		}
	}
	var rows [][2]string
	if closest >= 0 && gap > 0 {
		verdict := "kept"
		switch {
		case closest < gap-ruleTolerance:
			verdict = "BROKEN"
		case closest < gap:
			// Slots are booked exactly min-gap apart; the sends reach the
			// fakes a few ms either side of them.
			verdict = fmt.Sprintf("kept: slots %s apart, arrivals within %s of them", gap, ruleTolerance)
		}
		rows = append(rows, [2]string{prefix + throttle.Policy{MinGap: gap}.String(),
			fmt.Sprintf("%s (closest two sends to one user %.3fs apart)", verdict, closest.Seconds())})
	}
	for r, l := range limits {
		if most[r] == 0 {
			continue
		}
		verdict := "kept"
		if most[r] > l.N {
			verdict = "BROKEN"
		}
		window := strings.TrimPrefix(l.String(), strconv.Itoa(l.N)+"/")
		rows = append(rows, [2]string{prefix + l.String(), fmt.Sprintf("%s (most in any %s: %d)", verdict, window, most[r])})
	}
	return rows
}

// checkQuiet checks the quiet hours on the providers' arrivals: none of a
// push that keeps them may arrive inside them, but for ruleTolerance at
// either end (a send leaves a few ms off its slot, which may be where they
// end).
func (w *watch) checkQuiet() string {
	var broken, edge, exempt int
	for _, s := range w.pushes {
		if s.critical {
			continue
		}
		q := quietOf(w.policy, s.category)
		inside, near, free := false, false, false
		for _, a := range s.arrivals {
			switch {
			case q.Off():
				free = free || inQuiet(w.policy.Quiet, a.at)
			case inQuiet(q, a.at.Add(-ruleTolerance)) && inQuiet(q, a.at.Add(ruleTolerance)):
				inside = true
			case inQuiet(q, a.at):
				near = true
			}
		}
		switch {
		case inside:
			broken++
		case near:
			edge++
		case free:
			exempt++
		}
	}
	span := fmt.Sprintf("from %s to %s", w.since(w.quiet.from), w.since(w.quiet.to))
	if broken > 0 {
		return fmt.Sprintf("BROKEN: %d of the pushes that keep them arrived %s", broken, span)
	}
	verdict := "kept: no push that keeps them arrived " + span
	if edge > 0 {
		verdict += fmt.Sprintf(" (but %d within %s of an end, booked there)", edge, ruleTolerance)
	}
	if exempt > 0 {
		verdict += fmt.Sprintf("; %s of a category that keeps none did, as it may", cmdkit.Plural(exempt, "push"))
	}
	return verdict
}

func (w *watch) usersInOrder() []string {
	var users []string
	for _, s := range w.pushes {
		if !slices.Contains(users, s.user) {
			users = append(users, s.user)
		}
	}
	return users
}
