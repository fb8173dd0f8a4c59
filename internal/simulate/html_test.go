package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// twoUsers is fivePushes' u-1 plus a u-2 who pushes twice at once, so the
// rule sets below defer, drop and allow.
const twoUsers = fivePushes + `2026-11-21T10:00:00Z,u-2
2026-11-21T10:00:00Z,u-2
2026-11-21T10:00:30Z,u-2
`

// TestSimulateDetail: with Detail the replay keeps every delay and counts
// every push in exactly one bin, by its own time.
func TestSimulateDetail(t *testing.T) {
	tr, err := readTrace(strings.NewReader(twoUsers), nil)
	if err != nil {
		t.Fatal(err)
	}
	events := tr.events
	for _, tt := range []struct {
		rules     string
		ttl       time.Duration
		wantRules []string
	}{
		{"3/10s@2s", 5 * time.Second, []string{"3/10s", "min-gap 2s"}},
		{"2/1m,4/1h", 0, []string{"2/1m", "4/1h"}},
		{"@1s", 0, []string{"min-gap 1s"}},
	} {
		t.Run(tt.rules, func(t *testing.T) {
			r, err := simulate(context.Background(), tr, mustRuleSet(t, tt.rules), simOptions{TTL: tt.ttl, HeldBy: true, Detail: true})
			if err != nil {
				t.Fatal(err)
			}
			d := r.Detail
			if diff := cmp.Diff(tt.wantRules, d.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if len(d.Delays) != r.Allowed+r.Deferred || !slices.IsSorted(d.Delays) || d.Delays[len(d.Delays)-1] != r.DelayMax {
				t.Errorf("delays %v for %d allowed + %d deferred, max %d", d.Delays, r.Allowed, r.Deferred, r.DelayMax)
			}
			// The trace spans 10:00:00 to 10:00:30: 1 s bins.
			tl := d.Timeline
			if tl.Width != 1000 || tl.Start != events[0].at || len(tl.Bins) != 31 {
				t.Errorf("timeline start %d width %d bins %d, want %d, 1000, 31", tl.Start, tl.Width, len(tl.Bins), events[0].at)
			}
			var sum outcomes
			for _, b := range tl.Bins {
				sum.Allowed += b.Allowed
				sum.Deferred += b.Deferred
				sum.Dropped += b.Dropped
				sum.OptedOut += b.OptedOut
			}
			if want := (outcomes{r.Allowed, r.Deferred, r.Dropped, r.OptedOut}); sum != want {
				t.Errorf("bins add up to %+v, want %+v", sum, want)
			}
			if n := tl.Bins[0].Allowed + tl.Bins[0].Deferred + tl.Bins[0].Dropped; n != 3 {
				t.Errorf("first bin counts %d pushes, want 3 (u-1 and u-2 twice at 10:00:00)", n)
			}
		})
	}
}

func TestSimulateTimelineBins(t *testing.T) {
	const day = 24 * 3600e3
	t0 := time.Date(2026, 11, 21, 10, 7, 3, 0, time.UTC).UnixMilli()
	tests := []struct {
		name        string
		first, last int64
		wantStart   int64
		wantWidth   int64
		wantBins    int
	}{
		{"one push", t0, t0, t0, 1000, 1},
		{"a minute", t0, t0 + 60e3, t0, 1000, 61},
		{"an hour", t0, t0 + 3600e3, time.Date(2026, 11, 21, 10, 7, 0, 0, time.UTC).UnixMilli(), 60e3, 61},
		{"a day", t0, t0 + day, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC).UnixMilli(), 900e3, 97},
		{"a year", 0, 365 * day, 0, 7 * day, 53},
		{"three years", 0, 3 * 365 * day, 0, 2 * 7 * day, 79},
		{"before 1970", -1500, 500, -2000, 1000, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTimeline(tt.first, tt.last)
			if tl.Start != tt.wantStart || tl.Width != tt.wantWidth || len(tl.Bins) != tt.wantBins {
				t.Errorf("start %d width %d bins %d, want %d %d %d", tl.Start, tl.Width, len(tl.Bins), tt.wantStart, tt.wantWidth, tt.wantBins)
			}
			if len(tl.Bins) > timelineMaxBins+1 {
				t.Errorf("%d bins, more than %d", len(tl.Bins), timelineMaxBins+1)
			}
			tl.bin(tt.first).Allowed++ // in range, no panic
			tl.bin(tt.last).Allowed++
		})
	}
}

func TestHTMLDelayRange(t *testing.T) {
	set := func(delays ...int64) setReport {
		return setReport{Result: Result{DelayMax: delays[len(delays)-1], Detail: &simDetail{Delays: delays}}}
	}
	tests := []struct {
		name           string
		sets           []setReport
		wantLo, wantHi int64
	}{
		{"nothing waited", []setReport{set(0, 0)}, 1e3, 60e3},
		{"seconds", []setReport{set(0, 2000, 8000)}, 1e3, 10e3},
		{"a wait on a tick", []setReport{set(0, 1000)}, 1e3, 10e3},
		{"ms to hours over two sets", []setReport{set(0, 15), set(0, 2*3600e3)}, 10, 6 * 3600e3},
		{"past a year", []setReport{set(400 * 24 * 3600e3)}, 365 * 24 * 3600e3, 400 * 24 * 3600e3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := newDelayRange(tt.sets)
			if lo != tt.wantLo || hi != tt.wantHi {
				t.Errorf("range %d..%d ms, want %d..%d", lo, hi, tt.wantLo, tt.wantHi)
			}
		})
	}
}

// TestHTMLCDFPath: the curve starts at the share sent at once, ends at the
// share sent, and climbs only.
func TestHTMLCDFPath(t *testing.T) {
	a := delayAxis{Lo: 1e3, Hi: 10e3, box: plotBox{L: 60, T: 0, R: 560, B: 100}, band: zeroBand}
	// 5 events: 1 at once, 2 after 1 s, 1 after 8 s, 1 dropped.
	d := cdfPath([]int64{0, 1000, 1000, 8000}, 5, a)
	if !strings.HasPrefix(d, "M60.0 80.0H104.0V40.0H") || !strings.HasSuffix(d, "V20.0H560.0") {
		t.Errorf("path %q: want it to start at 20%% (y 80), step to 60%% (y 40) at 1s (x 104) and end at 80%% (y 20)", d)
	}
	ys := regexp.MustCompile(`V([\d.]+)`).FindAllStringSubmatch(d, -1)
	for i := 1; i < len(ys); i++ {
		if prev, cur := mustFloat(t, ys[i-1][1]), mustFloat(t, ys[i][1]); cur > prev {
			t.Errorf("path %q goes down at step %d", d, i)
		}
	}
	// A million distinct delays make a bounded path.
	many := make([]int64, 1_000_000)
	for i := range many {
		many[i] = int64(i) * 10
	}
	if n := strings.Count(cdfPath(many, len(many), a), "H"); n > 1200 {
		t.Errorf("%d horizontal steps for a 500-unit wide plot", n)
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestHTMLNiceScale(t *testing.T) {
	tests := []struct{ n, step, top int }{
		{0, 1, 1}, {3, 1, 3}, {7, 2, 8}, {10, 5, 10}, {95, 50, 100}, {2503, 1000, 3000}, {120_000, 50_000, 150_000},
	}
	for _, tt := range tests {
		if step, top := niceScale(tt.n); step != tt.step || top != tt.top {
			t.Errorf("niceScale(%d) = %d, %d; want %d, %d", tt.n, step, top, tt.step, tt.top)
		}
	}
}

func TestHTMLTimeTicks(t *testing.T) {
	at := func(h, m int) int64 { return time.Date(2026, 11, 21, h, m, 0, 0, time.UTC).UnixMilli() }
	var got []string
	for _, tk := range timeTicks(at(0, 0), at(24, 0)) {
		got = append(got, tk.label)
	}
	want := []string{"Nov 21 00:00", "03:00", "06:00", "09:00", "12:00", "15:00", "18:00", "21:00", "Nov 22 00:00"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ticks over a day (-want +got):\n%s", diff)
	}
}

// htmlFigures are the figures an HTML report marks with data-set and
// data-field, as "set/field" -> every text shown for it.
func htmlFigures(t *testing.T, page string) map[string][]string {
	t.Helper()
	re := regexp.MustCompile(`data-set="(\d+)" data-field="([^"]+)">([^<]*)<`)
	got := map[string][]string{}
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		key := m[1] + "/" + html.UnescapeString(m[2])
		got[key] = append(got[key], html.UnescapeString(m[3]))
	}
	if len(got) == 0 {
		t.Fatalf("no data-field figures in the page:\n%s", page)
	}
	return got
}

// textFigures are the parts of a text report.
type textFigures struct {
	setup string
	// rows are the main table's (rules -> the figures after them), in
	// order.
	rows  map[string][]string
	order []string
	note  string
	held  []string
	// quiet are the quiet-hours table's rows; cats each rule set's table
	// by category (rules -> category -> figures).
	quiet map[string][]string
	cats  map[string]map[string][]string
}

// textReport splits the text report into its parts. A table's rows are
// the lines after its header up to a blank line or the note; a row's name
// may have spaces, so its figures are its last fields, one per column.
func textReport(t *testing.T, stdout string) textFigures {
	t.Helper()
	r := textFigures{rows: map[string][]string{}, quiet: map[string][]string{}, cats: map[string]map[string][]string{}}
	var table map[string][]string // the table being read (nil: none)
	n := 0                        // its columns
	main := false
	for line := range strings.Lines(stdout) {
		line = strings.TrimRight(line, "\n")
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "every rule set: "):
			r.setup = line
		case len(f) > 0 && (f[0] == "rules" || f[0] == "category") && table != nil && len(table) == 0:
			// the header of the table just announced
		case line == "" || strings.HasPrefix(line, "read "):
			table = nil
		case strings.HasPrefix(line, "("):
			r.note, table, main = line, nil, false
		case strings.Contains(line, ": held back by "):
			r.held = append(r.held, line)
		case line == quietTitle:
			table, n = r.quiet, len(quietColumns)
		case strings.HasPrefix(line, "by category under "):
			rules := strings.TrimSuffix(strings.TrimPrefix(line, "by category under "), ":")
			r.cats[rules] = map[string][]string{}
			table, n = r.cats[rules], len(categoryColumns)
		case r.note == "" && !main && len(f) > 0 && f[0] == "rules":
			table, n, main = r.rows, len(reportColumns), true
		case table != nil && len(f) > n:
			name := strings.Join(f[:len(f)-n], " ")
			table[name] = f[len(f)-n:]
			if main {
				r.order = append(r.order, name)
			}
		default:
			t.Fatalf("cannot read the text report's line %q:\n%s", line, stdout)
		}
	}
	if len(r.rows) == 0 || r.note == "" {
		t.Fatalf("cannot read the text report:\n%s", stdout)
	}
	return r
}

// TestSimulateHTMLFiguresMatchText: every figure the HTML page shows (the
// summary table, the quiet-hours table, each rule set's figures, the
// percentile marks, the held-back bars and lines, the tables by category)
// is the text report's, for the same trace and flags; --html leaves
// standard output as it was; the marks sit at the delays --json reports.
func TestSimulateHTMLFiguresMatchText(t *testing.T) {
	tests := []struct {
		name  string
		trace string
		opts  Options
		// wantKeys are figures the page must have (so the comparison
		// covered them).
		wantKeys []string
	}{
		{"three rule sets", twoUsers, Options{Limits: "3/10s", MinGap: "2s", LimitsGiven: true, Rules: []string{"@1s", "2/1m,4/1h"}, TTL: 5 * time.Second},
			// The three rule sets are all held back by something, and
			// 2/1m,4/1h shows its never-binding 4/1h.
			[]string{"0/held_line", "1/held_line", "2/held_line", "0/held:3/10s", "2/held:4/1h"}},
		{"quiet hours and categories", quietTrace, Options{Rules: []string{"1/12h", "1/12h quiet=off", "1/12h; social=1/1h"},
			QuietHours: "22:00-08:00", Categories: "social=none", TTL: 10 * time.Hour},
			[]string{"0/held:quiet hours", "0/quiet_moved", "0/quiet_delay_pct", "1/quiet_moved", "2/quiet_dropped",
				"0/cat:social:p99", "1/cat:(none):events", "2/cat:social:quiet_moved"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Trace = writeFile(t, "trace.csv", tt.trace)
			text, _ := replay(t, o)
			report := filepath.Join(t.TempDir(), "report.html")
			withO := o
			withO.HTML = report
			withHTML, stderr := replay(t, withO)
			if !strings.Contains(stderr, report) {
				t.Errorf("stderr does not name the report file:\n%s", stderr)
			}
			withoutTiming := func(s string) string { return s[:strings.LastIndex(s, "\nread ")] }
			if diff := cmp.Diff(withoutTiming(text), withoutTiming(withHTML)); diff != "" {
				t.Errorf("--html changed standard output (-without +with):\n%s", diff)
			}
			b, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			page := string(b)
			got := htmlFigures(t, page)
			checkHTMLFigures(t, textReport(t, text), page, got, tt.wantKeys)
			checkHTMLMarks(t, page, o)
		})
	}
}

// checkHTMLFigures compares the figures of page (got) with the text
// report's, and checks the page has wantKeys.
func checkHTMLFigures(t *testing.T, rep textFigures, page string, got map[string][]string, wantKeys []string) {
	t.Helper()
	want := map[string][]string{}
	cell := func(cols []reportColumn, cells []string, key string) string {
		return cells[slices.IndexFunc(cols, func(c reportColumn) bool { return c.Key == key })]
	}
	for i, name := range rep.order {
		set := strconv.Itoa(i)
		row := rep.rows[name]
		want[set+"/rules"] = []string{name}
		for k, c := range reportColumns {
			// In the summary table and in the rule set's figures.
			want[set+"/"+c.Key] = []string{row[k], row[k]}
		}
		// The delay chart marks the percentiles, and the dropped share
		// when something was dropped.
		for _, p := range []string{"p50", "p90", "p99"} {
			want[set+"/"+p] = append(want[set+"/"+p], cell(reportColumns, row, p))
		}
		if cell(reportColumns, row, "dropped") != "0" {
			want[set+"/dropped_pct"] = append(want[set+"/dropped_pct"], cell(reportColumns, row, "dropped_pct"))
		}
		// The quiet-hours table, in the summary and in the figures.
		if q, ok := rep.quiet[name]; ok {
			for k, c := range quietColumns {
				want[set+"/"+c.Key] = []string{q[k], q[k]}
			}
		}
		// The table by category.
		for cat, cells := range rep.cats[name] {
			for k, c := range categoryColumns {
				want[set+"/cat:"+cat+":"+c.Key] = []string{cells[k]}
			}
		}
		// The held-back line, and one bar per rule in it.
		for _, line := range rep.held {
			rest, ok := strings.CutPrefix(line, name+": held back by ")
			if !ok {
				continue
			}
			want[set+"/held_line"] = []string{line}
			for part := range strings.SplitSeq(rest, ", ") {
				cut := strings.LastIndex(part, " ")
				want[set+"/held:"+part[:cut]] = []string{part[cut+1:]}
			}
		}
	}
	// Rules that held nothing back show a 0% bar.
	for key := range got {
		if strings.Contains(key, "/held:") && want[key] == nil {
			want[key] = []string{"0%"}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HTML figures (-text report +HTML):\n%s", diff)
	}
	if !strings.Contains(page, `data-field="note">`+html.EscapeString(rep.note)+"<") {
		t.Errorf("the page does not show the note %q", rep.note)
	}
	if rep.setup != "" && !strings.Contains(page, `data-field="setup">`+html.EscapeString(rep.setup)+"<") {
		t.Errorf("the page does not show the setup line %q", rep.setup)
	}
	for _, key := range wantKeys {
		if got[key] == nil {
			t.Errorf("the page has no %s", key)
		}
	}
}

// checkHTMLMarks: the percentile marks of page sit at the delays --json
// reports for the same command line.
func checkHTMLMarks(t *testing.T, page string, o Options) {
	t.Helper()
	o.JSON = true
	stdout, _ := replay(t, o)
	var results []Result
	if err := json.Unmarshal([]byte(stdout), &results); err != nil {
		t.Fatal(err)
	}
	marks := regexp.MustCompile(`<g class="mark" data-field="(p\d+)" data-ms="(\d+)">`).FindAllStringSubmatch(page, -1)
	var gotMarks, wantMarks []string
	for _, m := range marks {
		gotMarks = append(gotMarks, m[1]+"="+m[2])
	}
	for _, r := range results {
		for _, p := range []struct {
			name string
			ms   int64
		}{{"p50", r.DelayP50}, {"p90", r.DelayP90}, {"p99", r.DelayP99}} {
			wantMarks = append(wantMarks, p.name+"="+strconv.FormatInt(p.ms, 10))
		}
	}
	if diff := cmp.Diff(wantMarks, gotMarks); diff != "" {
		t.Errorf("percentile marks (-json +HTML):\n%s", diff)
	}
}

// replay runs Run with o (the defaults hush simulate's flags give filled
// in) and fails the test when it fails.
func replay(t *testing.T, o Options) (stdout, stderr string) {
	t.Helper()
	if o.Timezone == "" {
		o.Timezone = "UTC"
	}
	o.HeldBy = true
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), o, &out, &errOut); err != nil {
		t.Fatalf("Run(%+v): %v; stderr:\n%s", o, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// writeFile writes content to a file name in a temporary directory and
// returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
