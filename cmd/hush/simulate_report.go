package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// renderSimulation writes one row per rule set, aligned, and below the table
// which rule held pushes back.
func renderSimulation(w io.Writer, results []simResult, ttl time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rules\tevents\tallowed now\tdeferred\t%\tdropped\t%\tp50\tp90\tp99\tmax\tusers held\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f%%\t%d\t%.1f%%\t%s\t%s\t%s\t%s\t%d/%d\t\n",
			r.Rules, r.Events, r.Allowed, r.Deferred, r.DeferredPct, r.Dropped, r.DroppedPct,
			fmtDelay(r.DelayP50), fmtDelay(r.DelayP90), fmtDelay(r.DelayP99), fmtDelay(r.DelayMax),
			r.UsersDeferred, r.Users)
	}
	_ = tw.Flush()
	if ttl > 0 {
		fmt.Fprintf(w, "(dropped: slot %s or more after the push's time)\n", ttl)
	} else {
		fmt.Fprintln(w, "(no --ttl: nothing is dropped, every push waits for its slot)")
	}
	for _, r := range results {
		if len(r.HeldBy) == 0 {
			continue
		}
		held := r.Deferred + r.Dropped
		rules := slices.SortedFunc(maps.Keys(r.HeldBy), func(a, b string) int { return r.HeldBy[b] - r.HeldBy[a] })
		parts := make([]string, 0, len(rules))
		for _, rule := range rules {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", rule, 100*float64(r.HeldBy[rule])/float64(held)))
		}
		fmt.Fprintf(w, "%s: held back by %s\n", r.Rules, strings.Join(parts, ", "))
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
