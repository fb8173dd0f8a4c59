package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"time"

	"github.com/hushpush/hush/internal/simulate"
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

  time,user,category,timezone,opted_out
  2026-11-21T10:00:00Z,u-42
  1795255200500,u-42,marketing
  2026-11-21T23:30:00+01:00,u-7,social,Europe/Berlin
  1795255260000,u-7,,America/New_York
  1795255320000,u-42,marketing,,marketing;promo

time is RFC 3339 or Unix epoch milliseconds. category, optional, names one
of the rule set's categories (--categories), whose rules the push keeps
besides the global ones; empty or missing: none, the global rules alone. A
category the rule set does not define is an error naming the first line
with it. timezone, optional, is the IANA zone the user's quiet hours are
read in; empty or missing: --timezone (UTC by default). opted_out,
optional, is the categories the user had opted out of at that push,
separated by ";" or spaces: a push of one of them is dropped unsent and
books nothing ("opted out" in the report). Further columns are ignored; a header line, blank lines and # comments are skipped. Lines need
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

// runSimulate parses hush simulate's command line and hands the replay
// (or the generation of a trace) to package simulate.
func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f simulateFlags
	fs := simulateFlagSet(&f)
	pos, err := parseFlags(fs, args, stdout, simulateHelp)
	if err != nil {
		return err
	}
	if f.generate > 0 {
		return usage(simulate.Generate(stdout, simulate.GenerateOptions{
			Events: f.generate, Users: f.generateUsers, Categories: f.generateCategories, Timezones: f.generateTimezones}))
	}
	if len(pos) > 1 {
		return usageErrorf("simulate: want at most one trace FILE, got %d arguments", len(pos))
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	o := simulate.Options{
		Limits: f.limits, MinGap: f.minGap, LimitsGiven: given["limits"] || given["min-gap"],
		Rules:      f.rules,
		Categories: f.categories, QuietHours: f.quietHours, Timezone: f.timezone,
		TTL: f.ttl, HeldBy: f.heldBy, JSON: f.asJSON, HTML: f.html,
		Stdin: os.Stdin,
	}
	if len(pos) == 1 {
		o.Trace = pos[0]
	}
	return usage(simulate.Run(ctx, o, stdout, stderr))
}

// usage turns a package's usage error into hush's, which exits with
// status 2.
func usage(err error) error {
	if ue, ok := errors.AsType[*simulate.UsageError](err); ok {
		return usageErrorf("%s", ue.Error())
	}
	return err
}
