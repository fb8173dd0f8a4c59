package simulate

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
	{"opted_out", "opted out", "opted out", "dropped unsent: the user had opted out of the push's category (the trace's opted_out column)"},
	{"p50", "p50", "p50 delay", "half of the pushes sent waited at most this long"},
	{"p90", "p90", "p90 delay", "90% of the pushes sent waited at most this long"},
	{"p99", "p99", "p99 delay", "99% of the pushes sent waited at most this long"},
	{"max", "max", "max delay", "the longest wait of a push sent"},
	{"users_held", "users held", "users held", "users with at least one push deferred or dropped, of all users"},
}

// quietColumns are the figures of the quiet-hours table, one row per rule
// set, shown when some rule set has quiet hours (Result.Quiet).
var quietColumns = []reportColumn{
	{"quiet_moved", "moved", "moved by quiet hours", "pushes sent later than the rules alone would send them, because of the quiet hours"},
	{"quiet_moved_pct", "%", "moved %", "moved by quiet hours, as a share of all pushes"},
	{"quiet_p50", "p50 extra", "p50 extra delay", "half of the moved pushes waited at most this much longer because of the quiet hours"},
	{"quiet_max", "max extra", "max extra delay", "the most the quiet hours added to a push's wait"},
	{"quiet_delay_pct", "of delay", "share of delay", "the time the quiet hours added, as a share of the delay of all pushes sent"},
	{"quiet_dropped", "dropped", "dropped by quiet hours", "dropped, though the rules alone would have sent them before their ttl"},
}

// categoryColumns are the figures of the table by category, one row per
// category of the trace, shown when the trace's lines name categories.
var categoryColumns = []reportColumn{
	{"events", "events", "events", "pushes of the category in the trace"},
	{"allowed", "allowed now", "allowed now", "sent at their own time"},
	{"deferred", "deferred", "deferred", "sent later, in a booked slot"},
	{"deferred_pct", "%", "deferred %", "deferred, as a share of the category's pushes"},
	{"dropped", "dropped", "dropped", "expired before their slot (--ttl only)"},
	{"dropped_pct", "%", "dropped %", "dropped, as a share of the category's pushes"},
	{"opted_out", "opted out", "opted out", "dropped unsent: the user had opted out of the category"},
	{"p50", "p50", "p50 delay", "half of the category's pushes sent waited at most this long"},
	{"p99", "p99", "p99 delay", "99% of the category's pushes sent waited at most this long"},
	{"quiet_moved", "moved", "moved by quiet hours", "pushes sent later than the rules alone would send them, because of the quiet hours"},
}

// noCategory labels the lines without a category in the table by
// category.
const noCategory = "(none)"

// simReport is a replay's results formatted once: the text table and the
// HTML page print these same strings.
type simReport struct {
	// Setup says what every rule set shares ("" when nothing).
	Setup string
	Sets  []setReport
	// Note says what dropped means under the ttl.
	Note string
	// Quiet: some rule set has quiet hours, so the quiet-hours table is
	// shown.
	Quiet bool
}

// setReport is one rule set's rows and held-back line.
type setReport struct {
	Result Result
	// Cells are the row's figures, one per reportColumns; QuietCells its
	// row of the quiet-hours table, one per quietColumns ("-" each when
	// the rule set has no quiet hours; nil when no rule set has any).
	Cells      []string
	QuietCells []string
	// Categories are its rows of the table by category (nil when the
	// trace has no categories).
	Categories []categoryRow
	// HeldBy are the rules that held pushes back, most first (ties by
	// name); empty when nothing was held back or it was not counted.
	HeldBy []heldShare
	// HeldLine is "RULES: held back by RULE N%, ..." ("" without HeldBy).
	HeldLine string
}

// categoryRow is one category's row of a rule set's table by category.
type categoryRow struct {
	Name  string // the category, or noCategory
	Cells []string
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

// Width is Share as a percentage with one decimal, for the width of its
// segment in the HTML summary's held-back bar.
func (h heldShare) Width() string { return fmt.Sprintf("%.1f", 100*h.Share) }

// newSimReport formats results; ttl is the replay's --ttl, setup what
// every rule set shares (setupLine).
func newSimReport(results []Result, ttl time.Duration, setup string) simReport {
	rep := simReport{Setup: setup, Note: "(no --ttl: nothing is dropped, every push waits for its slot)"}
	if ttl > 0 {
		rep.Note = fmt.Sprintf("(dropped: slot %s or more after the push's time)", ttl)
	}
	for _, r := range results {
		if r.Quiet != nil {
			rep.Quiet = true
		}
		if ttl == 0 && r.Dropped > 0 {
			rep.Note = "(no --ttl: every push waits for its slot, but the limiter refuses a slot more than 62 days ahead under quiet hours: those count as dropped)"
		}
	}
	for _, r := range results {
		s := setReport{Result: r, Cells: []string{
			fmt.Sprint(r.Events), fmt.Sprint(r.Allowed),
			fmt.Sprint(r.Deferred), fmtPct(r.DeferredPct),
			fmt.Sprint(r.Dropped), fmtPct(r.DroppedPct), fmt.Sprint(r.OptedOut),
			fmtDelay(r.DelayP50), fmtDelay(r.DelayP90), fmtDelay(r.DelayP99), fmtDelay(r.DelayMax),
			fmt.Sprintf("%d/%d", r.UsersDeferred, r.Users),
		}}
		switch q := r.Quiet; {
		case q != nil:
			s.QuietCells = []string{fmt.Sprint(q.Deferred), fmtPct(q.DeferredPct), fmtDelay(q.DelayP50), fmtDelay(q.DelayMax),
				fmtPct(q.DelayPct), fmt.Sprint(q.Dropped)}
		case rep.Quiet:
			s.QuietCells = slices.Repeat([]string{"-"}, len(quietColumns))
		}
		for _, c := range r.Categories {
			moved := "-"
			if r.Quiet != nil {
				moved = fmt.Sprint(c.QuietDeferred)
			}
			s.Categories = append(s.Categories, categoryRow{Name: cmp.Or(c.Category, noCategory), Cells: []string{
				fmt.Sprint(c.Events), fmt.Sprint(c.Allowed),
				fmt.Sprint(c.Deferred), fmtPct(c.DeferredPct),
				fmt.Sprint(c.Dropped), fmtPct(c.DroppedPct), fmt.Sprint(c.OptedOut),
				fmtDelay(c.DelayP50), fmtDelay(c.DelayP99), moved,
			}})
		}
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

// quietTitle heads the quiet-hours table.
const quietTitle = "quiet hours: pushes they moved past the slot the rules alone would give, and the time they added"

// categoryTitle heads a rule set's table by category.
func categoryTitle(rules string) string { return "by category under " + rules + ":" }

// writeTextReport writes what every rule set shares, one row per rule
// set, aligned, which rule held pushes back, and, when there are any, the
// quiet hours' table and each rule set's table by category.
func writeTextReport(w io.Writer, rep simReport) {
	if rep.Setup != "" {
		fmt.Fprintln(w, rep.Setup)
	}
	rows := make([][]string, len(rep.Sets))
	for i, s := range rep.Sets {
		rows[i] = append([]string{s.Result.Rules}, s.Cells...)
	}
	writeTable(w, "rules", reportColumns, rows)
	fmt.Fprintln(w, rep.Note)
	for _, s := range rep.Sets {
		if s.HeldLine != "" {
			fmt.Fprintln(w, s.HeldLine)
		}
	}
	if rep.Quiet {
		for i, s := range rep.Sets {
			rows[i] = append([]string{s.Result.Rules}, s.QuietCells...)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, quietTitle)
		writeTable(w, "rules", quietColumns, rows)
	}
	for _, s := range rep.Sets {
		if len(s.Categories) == 0 {
			continue
		}
		var rows [][]string
		for _, c := range s.Categories {
			rows = append(rows, append([]string{c.Name}, c.Cells...))
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, categoryTitle(s.Result.Rules))
		writeTable(w, "category", categoryColumns, rows)
	}
}

// writeTable writes rows (a name, then one figure per column) under a
// header of first and cols' heads, right-aligned.
func writeTable(w io.Writer, first string, cols []reportColumn, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, first, "\t")
	for _, c := range cols {
		fmt.Fprint(tw, c.Head, "\t")
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		fmt.Fprint(tw, strings.Join(r, "\t"), "\t\n")
	}
	_ = tw.Flush()
}

// fmtPct writes a percentage as the report does: 64.8%.
func fmtPct(p float64) string { return fmt.Sprintf("%.1f%%", p) }

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
