package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/hushpush/hush/setup"
)

// simulateFlags are the flags of hush simulate.
type simulateFlags struct {
	limits, minGap string
	rules          multiFlag
	ttl            time.Duration
	asJSON         bool
	heldBy         bool
	html           string
	// generate writes a synthetic trace of this many events to stdout
	// instead of simulating, for trying rule sets and measuring.
	generate      int
	generateUsers int
}

// simulateFlagSet is hush simulate's flag set, parsing into f.
func simulateFlagSet(f *simulateFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.StringVar(&f.limits, "limits", "", "rolling-window caps of one rule set, `N/W` comma list (e.g. 10/1m,100/24h)")
	fs.StringVar(&f.minGap, "min-gap", "", "minimum `duration` between two pushes to a user, in the same rule set as --limits (e.g. 3s)")
	fs.Var(&f.rules, "rules", "one more rule set as `LIMITS@GAP` (10/1m,100/24h@3s; 3/10s; @2s); repeatable")
	fs.DurationVar(&f.ttl, "ttl", 0, "drop a push whose slot is this `duration` or more after its time, as the worker drops expired pushes (0: never)")
	fs.BoolVar(&f.asJSON, "json", false, "print the results as JSON")
	fs.BoolVar(&f.heldBy, "held-by", true, "count which rule held each push back (--held-by=false replays about twice as fast)")
	fs.StringVar(&f.html, "html", "", "also write the results with charts to `FILE`, one self-contained HTML page")
	fs.IntVar(&f.generate, "generate", 0, "write a synthetic bursty trace of `N` events to stdout and exit, instead of simulating")
	fs.IntVar(&f.generateUsers, "generate-users", 10000, "spread the --generate trace over `U` users")
	return fs
}

// simulateHelp is the help of hush simulate; its flags follow it.
const simulateHelp = `Usage:
  hush simulate [--limits N/W,...] [--min-gap D] [--rules LIMITS@GAP]... [--ttl D] [--held-by=false] [--json] [--html FILE] [FILE|-]
  hush simulate --generate N [--generate-users U] > trace.csv

Replays a trace of pushes through the in-memory limiter, offline and fast
(a million events take seconds), so you can see what a rule set would do to
your real traffic before you change HUSH_THROTTLE_LIMITS and
HUSH_THROTTLE_MIN_GAP.

The trace is CSV, one push per line, from FILE or standard input ("-"):

  time,user
  2026-11-21T10:00:00Z,u-42
  1763719200500,u-42

time is RFC 3339 or Unix epoch milliseconds; further columns are ignored; a
header line, blank lines and # comments are skipped. Lines need not be in
order: pushes are replayed sorted by time (equal times in input order).
Without a trace of your own, --generate writes a synthetic one: N bursty
pushes over a day, spread unevenly over --generate-users users.

Every push is booked like the worker books a delivery: it goes out at once
if every rule allows it, else in the earliest slot the rules allow
(deferred). With --ttl, a push whose slot is --ttl or more after its time is
dropped as expired and its slot given back.

Rule sets: --limits with --min-gap is one; every --rules adds one, written
LIMITS@GAP. With none given, the worker's defaults are used (10/1m,100/24h
with min-gap 3s). All rule sets replay the same trace, one result each.

Output, per rule set:
  events           pushes in the trace
  allowed now      sent at their own time
  deferred         sent later, in a booked slot (share of events)
  dropped          expired before their slot (--ttl only)
  p50 p90 p99 max  delay of the pushes sent (allowed now count as 0)
  held back by     the rule that held each deferred or dropped push back
                   most (the limiter's DeniedBy; --held-by=false skips it)
  users held       users with at least one push deferred or dropped

--html FILE also writes these figures to one HTML page (no external files,
no JavaScript) with, per rule set, the delays as a cumulative chart, the
share of held-back pushes per rule, and the outcomes over the trace's time.

Examples:
  hush simulate --limits 10/1m --min-gap 3s < trace.csv
  hush simulate --rules 10/1m,100/24h@3s --rules 5/1m,50/24h@10s --ttl 1h trace.csv
  hush simulate --rules @3s --rules 3/10s@2s --json trace.csv | jq '.[].delay_p99_ms'
  hush simulate --rules 10/1m,100/24h@3s --rules 5/1m@10s --ttl 1h --html report.html trace.csv
  hush simulate --held-by=false --rules 3/10s@2s big-trace.csv
  hush simulate --generate 1000000 --generate-users 10000 > trace.csv

A progress bar is shown on standard error when it is a terminal.
`

func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f simulateFlags
	fs := simulateFlagSet(&f)
	pos, err := parseFlags(fs, args, stdout, simulateHelp)
	if err != nil {
		return err
	}
	if f.generate > 0 {
		if f.generateUsers <= 0 {
			return usageErrorf("simulate: --generate-users must be positive")
		}
		start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
		return writeTrace(stdout, f.generate, f.generateUsers, start, 1)
	}
	sets, err := f.ruleSets(fs)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageErrorf("simulate: want at most one trace FILE, got %d arguments", len(pos))
	}
	if f.ttl < 0 {
		return usageErrorf("simulate: --ttl must not be negative")
	}

	in, size, closeIn, err := openTrace(pos)
	if err != nil {
		return err
	}
	defer closeIn()
	bar := newProgress(stderr)
	var onRead func(int64, int)
	if bar != nil {
		onRead = func(n int64, lines int) {
			if size > 0 {
				bar.show("reading", n, size)
			} else {
				bar.count("reading", lines)
			}
		}
	}
	readStart := time.Now()
	events, err := readTrace(in, onRead)
	bar.clear()
	if err != nil {
		return fmt.Errorf("simulate: %s: %w", traceName(pos), err)
	}
	readSecs := time.Since(readStart).Seconds()

	replayStart := time.Now()
	o := simOptions{TTL: f.ttl, HeldBy: f.heldBy, Detail: f.html != ""}
	results, err := replayAll(ctx, events, sets, o, bar)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	replaySecs := time.Since(replayStart).Seconds()
	rep := newSimReport(results, f.ttl)
	if f.html != "" {
		tr := traceInfo{Name: traceName(pos), HeldBy: f.heldBy}
		if len(events) > 0 {
			tr.First, tr.Last = events[0].at, events[len(events)-1].at
		}
		page := newHTMLPage(rep, tr)
		if err := writeHTMLFile(f.html, page); err != nil {
			return fmt.Errorf("simulate: --html: %w", err)
		}
		fmt.Fprintf(stderr, "simulate: wrote the report to %s\n", f.html)
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	writeTextReport(stdout, rep)
	if replaySecs > 0 && len(events) > 0 {
		fmt.Fprintf(stdout, "\nread %d events in %.2fs; replayed them under %d rule set(s) in %.2fs (%.0f events/s)\n",
			len(events), readSecs, len(results), replaySecs, float64(len(events)*len(results))/replaySecs)
	}
	return nil
}

// ruleSets is --limits/--min-gap (one set, when either is given) followed by
// every --rules, or the worker's defaults when none is given.
func (f *simulateFlags) ruleSets(fs *flag.FlagSet) ([]ruleSet, error) {
	var sets []ruleSet
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if given["limits"] || given["min-gap"] {
		rs, err := parseRuleSet(f.limits + "@" + f.minGap)
		if err != nil {
			return nil, usageErrorf("simulate: --limits %q --min-gap %q: %s", f.limits, f.minGap, unwrapMsg(err))
		}
		sets = append(sets, rs)
	}
	for _, r := range f.rules {
		rs, err := parseRuleSet(r)
		if err != nil {
			return nil, usageErrorf("simulate: --rules %q: %s (want LIMITS@GAP, e.g. 10/1m,100/24h@3s)", r, unwrapMsg(err))
		}
		sets = append(sets, rs)
	}
	if len(sets) == 0 {
		rs, err := parseRuleSet(setup.DefaultThrottleLimits + "@" + setup.DefaultThrottleMinGap.String())
		if err != nil {
			return nil, err
		}
		sets = append(sets, rs)
	}
	return sets, nil
}

// unwrapMsg is err's message without parseRuleSet's "rules ...: " prefix.
func unwrapMsg(err error) string {
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "rules ") {
		return after
	}
	return msg
}

// openTrace opens the trace named by the positional arguments (none or "-":
// standard input) and returns its size when known (0 otherwise).
func openTrace(pos []string) (io.Reader, int64, func(), error) {
	if len(pos) == 0 || pos[0] == "-" {
		return os.Stdin, 0, func() {}, nil
	}
	fh, err := os.Open(pos[0])
	if err != nil {
		return nil, 0, nil, fmt.Errorf("simulate: %w", err)
	}
	var size int64
	if st, err := fh.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return fh, size, func() { _ = fh.Close() }, nil
}

func traceName(pos []string) string {
	if len(pos) == 0 || pos[0] == "-" {
		return "standard input"
	}
	return pos[0]
}

// replayAll replays events under every rule set, as many at a time as there
// are CPUs, and returns the results in the order of sets. bar, when not nil,
// shows the progress over all of them on large traces.
func replayAll(ctx context.Context, events []traceEvent, sets []ruleSet, o simOptions, bar *progress) ([]simResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	done, total := int64(0), int64(len(events)*len(sets))
	if bar != nil && len(events) >= 100_000 {
		o.Step = func(n int) {
			mu.Lock()
			defer mu.Unlock()
			done += int64(n)
			bar.show("replaying", done, total)
		}
	}
	results := make([]simResult, len(sets))
	errs := make([]error, len(sets))
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i, rs := range sets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i], errs[i] = simulate(ctx, events, rs, o)
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	bar.clear()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}
