package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// reportColumn is one column of the results table, after the rules.
type reportColumn struct {
	Key   string // names the figure in the HTML (data-field)
	Head  string // the text table's header
	Label string // the HTML's header, which has room to be plainer
	Help  string // what the figure means, shown as the HTML header's tooltip
}

// reportColumns are the figures printed per rule set, in order.
var reportColumns = []reportColumn{
	{"events", "events", "events", "pushes in the trace"},
	{"allowed", "allowed now", "allowed now", "sent at their own time"},
	{"deferred", "deferred", "deferred", "sent later, in a booked slot"},
	{"deferred_pct", "%", "deferred %", "deferred, as a share of all pushes"},
	{"dropped", "dropped", "dropped", "expired before their slot (--ttl only)"},
	{"dropped_pct", "%", "dropped %", "dropped, as a share of all pushes"},
	{"p50", "p50", "p50 delay", "half of the pushes sent waited at most this long"},
	{"p90", "p90", "p90 delay", "90% of the pushes sent waited at most this long"},
	{"p99", "p99", "p99 delay", "99% of the pushes sent waited at most this long"},
	{"max", "max", "max delay", "the longest wait of a push sent"},
	{"users_held", "users held", "users held", "users with at least one push deferred or dropped, of all users"},
}

// simReport is a replay's results formatted once: the text table and the
// HTML page print these same strings.
type simReport struct {
	Sets []setReport
	// Note says what dropped means under the ttl.
	Note string
}

// setReport is one rule set's row and held-back line.
type setReport struct {
	Result simResult
	// Cells are the row's figures, one per reportColumns.
	Cells []string
	// HeldBy are the rules that held pushes back, most first (ties by
	// name); empty when nothing was held back or it was not counted.
	HeldBy []heldShare
	// HeldLine is "RULES: held back by RULE N%, ..." ("" without HeldBy).
	HeldLine string
}

// heldShare is how many of a rule set's held-back pushes one rule held
// back.
type heldShare struct {
	Rule  string
	Count int
	// Share is Count over all pushes held back (deferred or dropped), 0..1;
	// Pct is it as printed ("50%").
	Share float64
	Pct   string
}

// newSimReport formats results; ttl is the replay's --ttl.
func newSimReport(results []simResult, ttl time.Duration) simReport {
	rep := simReport{Note: "(no --ttl: nothing is dropped, every push waits for its slot)"}
	if ttl > 0 {
		rep.Note = fmt.Sprintf("(dropped: slot %s or more after the push's time)", ttl)
	}
	for _, r := range results {
		s := setReport{Result: r, Cells: []string{
			fmt.Sprint(r.Events), fmt.Sprint(r.Allowed),
			fmt.Sprint(r.Deferred), fmt.Sprintf("%.1f%%", r.DeferredPct),
			fmt.Sprint(r.Dropped), fmt.Sprintf("%.1f%%", r.DroppedPct),
			fmtDelay(r.DelayP50), fmtDelay(r.DelayP90), fmtDelay(r.DelayP99), fmtDelay(r.DelayMax),
			fmt.Sprintf("%d/%d", r.UsersDeferred, r.Users),
		}}
		if held := r.Deferred + r.Dropped; len(r.HeldBy) > 0 && held > 0 {
			rules := slices.SortedFunc(maps.Keys(r.HeldBy), func(a, b string) int {
				return cmp.Or(cmp.Compare(r.HeldBy[b], r.HeldBy[a]), cmp.Compare(a, b))
			})
			parts := make([]string, 0, len(rules))
			for _, rule := range rules {
				share := float64(r.HeldBy[rule]) / float64(held)
				h := heldShare{Rule: rule, Count: r.HeldBy[rule], Share: share, Pct: fmt.Sprintf("%.0f%%", 100*share)}
				s.HeldBy = append(s.HeldBy, h)
				parts = append(parts, h.Rule+" "+h.Pct)
			}
			s.HeldLine = fmt.Sprintf("%s: held back by %s", r.Rules, strings.Join(parts, ", "))
		}
		rep.Sets = append(rep.Sets, s)
	}
	return rep
}

// writeTextReport writes one row per rule set, aligned, and below the
// table which rule held pushes back.
func writeTextReport(w io.Writer, rep simReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "rules\t")
	for _, c := range reportColumns {
		fmt.Fprint(tw, c.Head, "\t")
	}
	fmt.Fprintln(tw)
	for _, s := range rep.Sets {
		fmt.Fprint(tw, s.Result.Rules, "\t", strings.Join(s.Cells, "\t"), "\t\n")
	}
	_ = tw.Flush()
	fmt.Fprintln(w, rep.Note)
	for _, s := range rep.Sets {
		if s.HeldLine != "" {
			fmt.Fprintln(w, s.HeldLine)
		}
	}
}

// fmtDelay writes milliseconds the way an operator reads them: 0, 850ms,
// 2.5s, 3m10s, 26h0m; truncated, so a maximum under a ttl of 1h never
// reads 1h.
func fmtDelay(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case ms == 0:
		return "0"
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Truncate(100*time.Millisecond).Seconds())
	case d < time.Hour:
		return d.Truncate(time.Second).String()
	default:
		return strings.TrimSuffix(d.Truncate(time.Minute).String(), "0s")
	}
}
