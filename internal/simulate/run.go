package simulate

import (
	"context"
	"encoding/json"
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

// Options are what a replay is asked to do; hush simulate's flags fill them.
type Options struct {
	// Limits and MinGap are one rule set (throttle.ParsePolicy's forms),
	// used when LimitsGiven.
	Limits, MinGap string
	LimitsGiven    bool
	// Rules are more rule sets, each "LIMITS@GAP [quiet=...] [; NAME=RULES]...".
	// With none and no Limits, the worker's default rules are replayed.
	Rules []string
	// Categories, QuietHours and Timezone are shared by every rule set (a
	// Rules value may give its own categories and quiet hours); Timezone is
	// the zone of the lines that name none.
	Categories, QuietHours, Timezone string
	// TTL drops a push whose slot is TTL or more after its time (0: never).
	TTL time.Duration
	// HeldBy counts what held each push back.
	HeldBy bool
	// JSON prints the results as JSON instead of tables.
	JSON bool
	// HTML, when set, is the file the HTML report is written to.
	HTML string
	// Trace is the trace file; "" or "-" reads Stdin.
	Trace string
	Stdin io.Reader
}

// GenerateOptions describe a synthetic bursty trace.
type GenerateOptions struct {
	// Events and Users: how many lines, spread over how many users.
	Events, Users int
	// Categories and Timezones are comma lists to tag bursts and users with.
	Categories, Timezones string
	// Seed picks the trace; 0 is seed 1, hush simulate's.
	Seed uint64
}

// UsageError is a mistake in the options, as opposed to a failure of the
// replay or of its input; hush reports it with the usage exit status.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usageErrorf(format string, a ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, a...)}
}

// Generate writes a synthetic trace to w.
func Generate(w io.Writer, o GenerateOptions) error {
	g, err := o.traceGen()
	if err != nil {
		return err
	}
	return writeTrace(w, g)
}

// Run replays the trace under every rule set and writes the report to
// stdout (and o.HTML); progress and notes go to stderr.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	shared, zone, err := o.shared()
	if err != nil {
		return err
	}
	sets, err := o.ruleSets(shared)
	if err != nil {
		return err
	}
	if o.TTL < 0 {
		return usageErrorf("simulate: --ttl must not be negative")
	}

	in, size, closeIn, err := openTrace(o.Trace, o.Stdin)
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
		return fmt.Errorf("simulate: %s: %w", traceName(o.Trace), err)
	}
	events := tr.events
	readSecs := time.Since(readStart).Seconds()

	replayStart := time.Now()
	so := simOptions{TTL: o.TTL, Zone: zone, HeldBy: o.HeldBy, Detail: o.HTML != ""}
	results, err := replayAll(ctx, tr, sets, so, bar)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	replaySecs := time.Since(replayStart).Seconds()
	rep := newSimReport(results, o.TTL, setupLine(shared, zone, sets))
	if o.HTML != "" {
		info := traceInfo{Name: traceName(o.Trace), HeldBy: o.HeldBy}
		if len(events) > 0 {
			info.First, info.Last = events[0].at, events[len(events)-1].at
		}
		page := newHTMLPage(rep, info)
		if err := writeHTMLFile(o.HTML, page); err != nil {
			return fmt.Errorf("simulate: --html: %w", err)
		}
		fmt.Fprintf(stderr, "simulate: wrote the report to %s\n", o.HTML)
	}
	if o.JSON {
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
func (f GenerateOptions) traceGen() (traceGen, error) {
	g := traceGen{n: f.Events, users: f.Users, start: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), seed: max(f.Seed, 1)}
	if g.users <= 0 {
		return g, usageErrorf("simulate: --generate-users must be positive")
	}
	if f.Categories != "" {
		for c := range strings.SplitSeq(f.Categories, ",") {
			if c = strings.TrimSpace(c); c != "" && !throttle.ValidCategory(c) {
				return g, usageErrorf("simulate: --generate-categories: %q: %s", c, errNotCategory)
			}
			g.categories = append(g.categories, strings.TrimSpace(c))
		}
	}
	if f.Timezones != "" {
		for z := range strings.SplitSeq(f.Timezones, ",") {
			z = strings.TrimSpace(z)
			if z == "" {
				return g, usageErrorf("simulate: --generate-timezones %q: an empty zone (want IANA names such as Europe/Berlin)", f.Timezones)
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
func (f Options) shared() (sharedRules, *time.Location, error) {
	var sh sharedRules
	var err error
	if sh.quiet, err = throttle.ParseQuiet(f.QuietHours); err != nil {
		return sh, nil, usageErrorf("simulate: --quiet-hours: %s", parseMsg(err))
	}
	if sh.categories, err = throttle.ParseCategories(f.Categories); err != nil {
		return sh, nil, usageErrorf("simulate: --categories: %s", parseMsg(err))
	}
	if f.Timezone == "" {
		return sh, nil, usageErrorf("simulate: --timezone is empty (want an IANA name such as Europe/Berlin, or UTC)")
	}
	zone, err := loadZone(f.Timezone)
	if err != nil {
		return sh, nil, usageErrorf("simulate: --timezone: %s", err)
	}
	return sh, zone, nil
}

// ruleSets is --limits/--min-gap (one set, when either is given) followed by
// every --rules, or the worker's defaults when none is given; each with
// shared's quiet hours and categories.
func (f Options) ruleSets(shared sharedRules) ([]ruleSet, error) {
	var sets []ruleSet
	if f.LimitsGiven {
		p, err := throttle.ParsePolicy(f.Limits, f.MinGap)
		if err == nil {
			var rs ruleSet
			if rs, err = shared.ruleSet(p, ownRules{}); err == nil {
				sets = append(sets, rs)
			}
		}
		if err != nil {
			return nil, usageErrorf("simulate: --limits %q --min-gap %q: %s", f.Limits, f.MinGap, parseMsg(err))
		}
	}
	for _, r := range f.Rules {
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

// openTrace opens the trace file ("" or "-": stdin) and returns its size
// when known (0 otherwise).
func openTrace(file string, stdin io.Reader) (io.Reader, int64, func(), error) {
	if file == "" || file == "-" {
		return stdin, 0, func() {}, nil
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("simulate: %w", err)
	}
	var size int64
	if st, err := fh.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return fh, size, func() { _ = fh.Close() }, nil
}

func traceName(file string) string {
	if file == "" || file == "-" {
		return "standard input"
	}
	return file
}

// replayAll replays tr's events under every rule set, as many at a time as
// there are CPUs, and returns the results in the order of sets. bar, when
// not nil, shows the progress over all of them on large traces.
func replayAll(ctx context.Context, tr trace, sets []ruleSet, o simOptions, bar *progress) ([]Result, error) {
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
	results := make([]Result, len(sets))
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
