package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hushpush/hush/setup"
	"github.com/hushpush/hush/throttle"
)

// simulateFlags are the flags of hush simulate.
type simulateFlags struct {
	limits, minGap string
	rules          multiFlag
	// categories, quietHours and timezone are shared by every rule set
	// (a --rules value may give its own categories and quiet hours).
	categories, quietHours, timezone string
	ttl                              time.Duration
	asJSON                           bool
	heldBy                           bool
	html                             string
	// generate writes a synthetic trace of this many events to stdout
	// instead of simulating, for trying rule sets and measuring.
	generate           int
	generateUsers      int
	generateCategories string
	generateTimezones  string
}

// simulateFlagSet is hush simulate's flag set, parsing into f.
func simulateFlagSet(f *simulateFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.StringVar(&f.limits, "limits", "", "rolling-window caps of one rule set, `N/W` comma list (e.g. 10/1m,100/24h)")
	fs.StringVar(&f.minGap, "min-gap", "", "minimum `duration` between two pushes to a user, in the same rule set as --limits (e.g. 3s)")
	fs.Var(&f.rules, "rules", "one more rule set as `LIMITS@GAP` (10/1m,100/24h@3s; 3/10s; @2s), optionally followed by its own quiet=HH:MM-HH:MM or quiet=off and, after a semicolon, categories ('10/1m@3s quiet=off; marketing=1/1d'); repeatable")
	fs.StringVar(&f.categories, "categories", "", "categories of every rule set, `NAME=RULES;...` as HUSH_THROTTLE_CATEGORIES writes them (e.g. 'marketing=2/1d,1/4h@1h quiet=21:00-09:00; social=10/1h@30s')")
	fs.StringVar(&f.quietHours, "quiet-hours", "", "quiet hours of every rule set, `HH:MM-HH:MM` in each line's time zone (e.g. 22:00-08:00; off or empty: none)")
	fs.StringVar(&f.timezone, "timezone", "UTC", "IANA time `zone` of the lines that name none (e.g. Europe/Berlin)")
	fs.DurationVar(&f.ttl, "ttl", 0, "drop a push whose slot is this `duration` or more after its time, as the worker drops expired pushes (0: never)")
	fs.BoolVar(&f.asJSON, "json", false, "print the results as JSON")
	fs.BoolVar(&f.heldBy, "held-by", true, "count what held each push back (--held-by=false replays about 1.5 times as fast, unless a rule set has quiet hours, whose share is always counted)")
	fs.StringVar(&f.html, "html", "", "also write the results with charts to `FILE`, one self-contained HTML page")
	fs.IntVar(&f.generate, "generate", 0, "write a synthetic bursty trace of `N` events to stdout and exit, instead of simulating")
	fs.IntVar(&f.generateUsers, "generate-users", 10000, "spread the --generate trace over `U` users")
	fs.StringVar(&f.generateCategories, "generate-categories", "", "tag each burst of the --generate trace with one of these `categories`, comma list, picked at random (an empty name, as in marketing,social, with its trailing comma, leaves bursts untagged)")
	fs.StringVar(&f.generateTimezones, "generate-timezones", "", "give each user of the --generate trace one of these IANA time `zones`, comma list (e.g. Europe/Berlin,America/New_York)")
	return fs
}

// simulateHelp is the help of hush simulate; its flags follow it.
const simulateHelp = `Usage:
  hush simulate [--limits N/W,...] [--min-gap D] [--rules RULES]... [--categories CATS] [--quiet-hours HH:MM-HH:MM] [--timezone ZONE] [--ttl D] [--held-by=false] [--json] [--html FILE] [FILE|-]
  hush simulate --generate N [--generate-users U] [--generate-categories C,...] [--generate-timezones Z,...] > trace.csv

Replays a trace of pushes through the in-memory limiter, offline and fast
(a million events take seconds), so you can see what a rule set would do to
your real traffic before you change HUSH_THROTTLE_LIMITS,
HUSH_THROTTLE_MIN_GAP, HUSH_THROTTLE_CATEGORIES and HUSH_QUIET_HOURS.

The trace is CSV, one push per line, from FILE or standard input ("-"):

  time,user,category,timezone
  2026-11-21T10:00:00Z,u-42
  1795255200500,u-42,marketing
  2026-11-21T23:30:00+01:00,u-7,social,Europe/Berlin
  1795255260000,u-7,,America/New_York

time is RFC 3339 or Unix epoch milliseconds. category, optional, names one
of the rule set's categories (--categories), whose rules the push keeps
besides the global ones; empty or missing: none, the global rules alone. A
category the rule set does not define is an error naming the first line
with it. timezone, optional, is the IANA zone the user's quiet hours are
read in; empty or missing: --timezone (UTC by default). Further columns are
ignored; a header line, blank lines and # comments are skipped. Lines need
not be in order: pushes are replayed sorted by time (equal times in input
order). Without a trace of your own, --generate writes a synthetic one: N
bursty pushes over a day, spread unevenly over --generate-users users;
--generate-categories tags each burst with one of the categories, picked at
random, and --generate-timezones gives each user one of the zones.

Every push is booked like the worker books a delivery: it goes out at once
if every rule allows it, else in the earliest slot the rules allow outside
its quiet hours (deferred). With --ttl, a push whose slot is --ttl or more
after its time is dropped as expired: the limiter refuses the slot.

Rule sets: --limits with --min-gap is one; every --rules adds one, written
LIMITS@GAP. With none given, the worker's defaults are used (10/1m,100/24h
with min-gap 3s). --categories (NAME=RULES items separated by semicolons,
as HUSH_THROTTLE_CATEGORIES) and --quiet-hours apply to every rule set. A
--rules value may give its own after LIMITS@GAP: quiet=HH:MM-HH:MM or
quiet=off replaces --quiet-hours, and categories after a semicolon are
added, replacing --categories' own of the same name:

  --rules '10/1m,100/24h@3s quiet=off'
  --rules '10/1m,100/24h@3s; marketing=1/1d,1/4h@1h'

All rule sets replay the same trace, one result each.

Output, per rule set:
  events           pushes in the trace
  allowed now      sent at their own time
  deferred         sent later, in a booked slot (share of events)
  dropped          expired before their slot (--ttl only)
  p50 p90 p99 max  delay of the pushes sent (allowed now count as 0)
  users held       users with at least one push deferred or dropped
  held back by     what held each deferred or dropped push back most: the
                   rule the limiter names (its explanation: the rule that
                   alone would wait longest), or "quiet hours" when they
                   added more to the wait than the rules did (the rules win
                   a tie); --held-by=false skips it

With quiet hours, a second table shows what they added to the slot the
rules alone would give (the limiter explains every push):
  moved            pushes sent later because of the quiet hours (share of
                   events)
  p50 max extra    the time the quiet hours added to those pushes' wait
  of delay         that time's share of the delay of all the pushes sent
  dropped          pushes dropped that the rules alone would have sent
                   before their --ttl
When lines name categories, a table per rule set shows events, allowed now,
deferred, dropped, p50, p99 and moved per category ("(none)": lines without
one).

--html FILE also writes these figures to one HTML page (no external files,
no JavaScript) with, per rule set, the delays as a cumulative chart, the
share of held-back pushes per rule (quiet hours included), the outcomes
over the trace's time, and the tables by category.

Examples:
  hush simulate --limits 10/1m --min-gap 3s < trace.csv
  hush simulate --rules 10/1m,100/24h@3s --rules 5/1m,50/24h@10s --ttl 1h trace.csv
  hush simulate --rules @3s --rules 3/10s@2s --json trace.csv | jq '.[].delay_p99_ms'
  hush simulate --rules 10/1m,100/24h@3s --rules 5/1m@10s --ttl 1h --html report.html trace.csv
  hush simulate --held-by=false --rules 3/10s@2s big-trace.csv
  hush simulate --categories 'marketing=2/1d,1/4h@1h; social=10/1h@30s' --quiet-hours 22:00-08:00 --timezone Europe/Berlin --ttl 1h trace.csv
  hush simulate --quiet-hours 22:00-08:00 --rules 10/1m,100/24h@3s --rules '10/1m,100/24h@3s quiet=off' --json trace.csv | jq '.[].quiet'
  hush simulate --generate 1000000 --generate-users 10000 > trace.csv
  hush simulate --generate 100000 --generate-categories marketing,social, --generate-timezones Europe/Berlin,America/New_York > trace.csv

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
		g, err := f.traceGen()
		if err != nil {
			return err
		}
		return writeTrace(stdout, g)
	}
	shared, zone, err := f.shared()
	if err != nil {
		return err
	}
	sets, err := f.ruleSets(fs, shared)
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
	tr, err := readTrace(in, onRead)
	bar.clear()
	if err == nil {
		err = checkCategories(tr, sets)
	}
	if err != nil {
		return fmt.Errorf("simulate: %s: %w", traceName(pos), err)
	}
	events := tr.events
	readSecs := time.Since(readStart).Seconds()

	replayStart := time.Now()
	o := simOptions{TTL: f.ttl, Zone: zone, HeldBy: f.heldBy, Detail: f.html != ""}
	results, err := replayAll(ctx, tr, sets, o, bar)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	replaySecs := time.Since(replayStart).Seconds()
	rep := newSimReport(results, f.ttl, setupLine(shared, zone, sets))
	if f.html != "" {
		info := traceInfo{Name: traceName(pos), HeldBy: f.heldBy}
		if len(events) > 0 {
			info.First, info.Last = events[0].at, events[len(events)-1].at
		}
		page := newHTMLPage(rep, info)
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

// traceGen is what --generate and its companions ask for.
func (f *simulateFlags) traceGen() (traceGen, error) {
	g := traceGen{n: f.generate, users: f.generateUsers, start: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), seed: 1}
	if g.users <= 0 {
		return g, usageErrorf("simulate: --generate-users must be positive")
	}
	if f.generateCategories != "" {
		for c := range strings.SplitSeq(f.generateCategories, ",") {
			if c = strings.TrimSpace(c); c != "" && !throttle.ValidCategory(c) {
				return g, usageErrorf("simulate: --generate-categories: %q: %s", c, errNotCategory)
			}
			g.categories = append(g.categories, strings.TrimSpace(c))
		}
	}
	if f.generateTimezones != "" {
		for z := range strings.SplitSeq(f.generateTimezones, ",") {
			z = strings.TrimSpace(z)
			if z == "" {
				return g, usageErrorf("simulate: --generate-timezones %q: an empty zone (want IANA names such as Europe/Berlin)", f.generateTimezones)
			}
			if _, err := loadZone(z); err != nil {
				return g, usageErrorf("simulate: --generate-timezones: %s", err)
			}
			g.zones = append(g.zones, z)
		}
	}
	return g, nil
}

// shared reads --quiet-hours, --categories and --timezone.
func (f *simulateFlags) shared() (sharedRules, *time.Location, error) {
	var sh sharedRules
	var err error
	if sh.quiet, err = throttle.ParseQuiet(f.quietHours); err != nil {
		return sh, nil, usageErrorf("simulate: --quiet-hours: %s", parseMsg(err))
	}
	if sh.categories, err = throttle.ParseCategories(f.categories); err != nil {
		return sh, nil, usageErrorf("simulate: --categories: %s", parseMsg(err))
	}
	if f.timezone == "" {
		return sh, nil, usageErrorf("simulate: --timezone is empty (want an IANA name such as Europe/Berlin, or UTC)")
	}
	zone, err := loadZone(f.timezone)
	if err != nil {
		return sh, nil, usageErrorf("simulate: --timezone: %s", err)
	}
	return sh, zone, nil
}

// ruleSets is --limits/--min-gap (one set, when either is given) followed by
// every --rules, or the worker's defaults when none is given; each with
// shared's quiet hours and categories.
func (f *simulateFlags) ruleSets(fs *flag.FlagSet, shared sharedRules) ([]ruleSet, error) {
	var sets []ruleSet
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if given["limits"] || given["min-gap"] {
		p, err := throttle.ParsePolicy(f.limits, f.minGap)
		if err == nil {
			var rs ruleSet
			if rs, err = shared.ruleSet(p, ownRules{}); err == nil {
				sets = append(sets, rs)
			}
		}
		if err != nil {
			return nil, usageErrorf("simulate: --limits %q --min-gap %q: %s", f.limits, f.minGap, parseMsg(err))
		}
	}
	for _, r := range f.rules {
		rs, err := parseRuleSet(r, shared)
		if err != nil {
			return nil, usageErrorf("simulate: --rules %q: %s (want LIMITS@GAP [quiet=HH:MM-HH:MM] [; NAME=RULES]..., e.g. 10/1m,100/24h@3s)", r, unwrapMsg(err))
		}
		sets = append(sets, rs)
	}
	if len(sets) == 0 {
		p, err := throttle.ParsePolicy(setup.DefaultThrottleLimits, setup.DefaultThrottleMinGap.String())
		if err != nil {
			return nil, err
		}
		rs, err := shared.ruleSet(p, ownRules{})
		if err != nil {
			return nil, usageErrorf("simulate: %s", parseMsg(err))
		}
		sets = append(sets, rs)
	}
	return sets, nil
}

// checkCategories fails on the first line (in the file's order) naming a
// category some rule set does not define.
func checkCategories(tr trace, sets []ruleSet) error {
	for i, c := range tr.categories[1:] {
		for _, rs := range sets {
			if _, ok := rs.policy.Categories[c]; ok {
				continue
			}
			have := "it has none; define them with --categories"
			if len(rs.policy.Categories) > 0 {
				have = "it has " + strings.Join(slices.Sorted(maps.Keys(rs.policy.Categories)), ", ") + "; add it to --categories"
			}
			return &traceLineError{Line: tr.catLines[1+i], Field: "category", Text: c,
				Err: fmt.Errorf("rule set %s does not define it (%s)", rs.name, have)}
		}
	}
	return nil
}

// setupLine says what every rule set shares, and, when some rule set has
// quiet hours, the zone of the lines that name none ("" when nothing is
// shared and no quiet hours apply).
func setupLine(shared sharedRules, zone *time.Location, sets []ruleSet) string {
	parts := []string{}
	if s := shared.String(); s != "" {
		parts = append(parts, s)
	}
	if slices.ContainsFunc(sets, func(rs ruleSet) bool { return hasQuiet(rs.policy) }) {
		parts = append(parts, "lines without a timezone in "+zone.String())
	}
	if len(parts) == 0 {
		return ""
	}
	return "every rule set: " + strings.Join(parts, "; ")
}

// parseMsg is err's message without the throttle package's "throttle: "
// prefixes, to go inside a usage message.
func parseMsg(err error) string {
	return strings.ReplaceAll(err.Error(), "throttle: ", "")
}

// unwrapMsg is err's message without parseRuleSet's "rules ...: " prefix
// and the throttle package's "throttle: " prefixes.
func unwrapMsg(err error) string {
	msg := parseMsg(err)
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

// replayAll replays tr's events under every rule set, as many at a time as
// there are CPUs, and returns the results in the order of sets. bar, when
// not nil, shows the progress over all of them on large traces.
func replayAll(ctx context.Context, tr trace, sets []ruleSet, o simOptions, bar *progress) ([]simResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	done, total := int64(0), int64(len(tr.events)*len(sets))
	if bar != nil && len(tr.events) >= 100_000 {
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
			results[i], errs[i] = simulate(ctx, tr, rs, o)
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
