package main

// The command-line tests of hush simulate: flags, help, exit statuses and
// the reports as the command writes them. The replay itself is tested in
// internal/simulate.

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/internal/simulate"
)

// twoUsers is fivePushes' u-1 plus a u-2 who pushes twice at once, so the
// rule sets below defer, drop and allow.
const twoUsers = fivePushes + `2026-11-21T10:00:00Z,u-2
2026-11-21T10:00:00Z,u-2
2026-11-21T10:00:30Z,u-2
`

// TestSimulateHTMLSelfContained: the page loads nothing (no scripts, no
// links, no external URLs), draws one delay chart per rule set plus the
// comparison, and escapes what it did not write itself (the trace's name).
func TestSimulateHTMLSelfContained(t *testing.T) {
	trace := writeFile(t, `<b onmouseover="x">.csv`, twoUsers)
	report := filepath.Join(t.TempDir(), "report.html")
	_, stderr, code := runCmd(t, "simulate", "--rules", "3/10s@2s", "--rules", "@1s", "--html", report, trace)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	page := strings.ToLower(string(b))
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "@import", "url(", "src=", "href=", "http://", "https://", "<b onmouseover"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("the page has %q: ...%s...", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	if !strings.Contains(page, "&lt;b onmouseover=") {
		t.Errorf("the trace's name is not shown escaped")
	}
	for _, w := range []struct {
		what string
		n    int
	}{{`<svg class="chart"`, 1 + 2*3}, {`<path class="cdf s0"`, 2}, {`<path class="cdf s1"`, 2}, {`<rect class="allowed"`, 1}, {`<rect class="deferred"`, 1}} {
		if got := strings.Count(page, w.what); got < w.n {
			t.Errorf("%d %s, want at least %d", got, w.what, w.n)
		}
	}
}

// TestSimulateHTMLErrors: a report that cannot be written fails the
// command and names the file; nothing is half written.
func TestSimulateHTMLErrors(t *testing.T) {
	trace := writeFile(t, "trace.csv", twoUsers)
	missing := filepath.Join(t.TempDir(), "no-such-dir", "report.html")
	_, stderr, code := runCmd(t, "simulate", "--html", missing, trace)
	if code != 1 || !strings.Contains(stderr, "--html") || !strings.Contains(stderr, missing) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 naming --html and %s", code, stderr, missing)
	}
}

// fivePushes is one user pushed five times one second apart, in both time
// formats (10:00:02Z is 1795255202000 ms), with a header and a comment.
const fivePushes = `time,user
# one user, one push a second
2026-11-21T10:00:00Z,u-1
2026-11-21T10:00:01Z,u-1

1795255202000,u-1
2026-11-21T10:00:03.000Z,"u-1"
2026-11-21T11:00:04+01:00, u-1
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSimulateCommandComparesRuleSets(t *testing.T) {
	trace := writeFile(t, "trace.csv", fivePushes)
	stdout, stderr, code := runCmd(t, "simulate", "--limits", "3/10s", "--min-gap", "2s", "--rules", "@1s", "--ttl", "5s", trace)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	rows := map[string][]string{}
	for line := range strings.Lines(stdout) {
		f := strings.Fields(line)
		if len(f) > 10 && f[1] == "events" {
			continue
		}
		if strings.Contains(line, "%") && len(f) >= 13 {
			// The rule name has spaces: take the columns from the right.
			rows[strings.Join(f[:len(f)-12], " ")] = f[len(f)-12:]
		}
	}
	want := map[string][]string{
		"3/10s min-gap 2s": {"5", "1", "2", "40.0%", "2", "40.0%", "0", "1.0s", "2.0s", "2.0s", "2.0s", "1/1"},
		"min-gap 1s":       {"5", "5", "0", "0.0%", "0", "0.0%", "0", "0", "0", "0", "0", "0/1"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("table rows (-want +got):\n%s\nstdout:\n%s", diff, stdout)
	}
	if !strings.Contains(stdout, "3/10s min-gap 2s: held back by") {
		t.Errorf("no held-back line; stdout:\n%s", stdout)
	}

	stdout, stderr, code = runCmd(t, "simulate", "--rules", "3/10s@2s", "--rules", "@1s", "--json", trace)
	if code != 0 {
		t.Fatalf("--json: exit %d; stderr:\n%s", code, stderr)
	}
	var got []simulate.Result
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if len(got) != 2 || got[0].Rules != "3/10s min-gap 2s" || got[0].DelayMax != 8000 || got[1].Allowed != 5 {
		t.Errorf("--json results: %+v", got)
	}
}

func TestSimulateCommandErrors(t *testing.T) {
	good := writeFile(t, "good.csv", "1,a\n")
	bad := writeFile(t, "bad.csv", "time,user\n1,a\nnoon,b\n")
	cats := writeFile(t, "cats.csv", "time,user,category\n1,a,marketing\n2,b,promo\n3,c,social\n4,d,promo\n")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"bad rules", []string{"simulate", "--rules", "10/x", good}, 2, []string{`--rules "10/x"`, "LIMITS@GAP"}},
		{"bad limits", []string{"simulate", "--limits", "ten/1m", good}, 2, []string{`--limits "ten/1m"`}},
		{"negative ttl", []string{"simulate", "--ttl", "-1s", good}, 2, []string{"--ttl"}},
		{"two files", []string{"simulate", good, good}, 2, []string{"at most one trace FILE"}},
		{"missing file", []string{"simulate", filepath.Join(t.TempDir(), "nope.csv")}, 1, []string{"nope.csv"}},
		{"bad line", []string{"simulate", bad}, 1, []string{"bad.csv", "line 3", `time "noon"`, "RFC 3339"}},
		{"category no rule set defines", []string{"simulate", "--categories", "marketing=1/1h; social=none", cats}, 1,
			[]string{"cats.csv", "line 3", `category "promo"`, "does not define it", "marketing, social", "--categories"}},
		{"category without --categories", []string{"simulate", cats}, 1, []string{"line 2", `category "marketing"`, "it has none"}},
		{"category one rule set lacks", []string{"simulate", "--rules", "10/1m; marketing=1/1h; promo=none", "--rules", "10/1m; marketing=none", cats}, 1,
			[]string{"line 3", `category "promo"`, "rule set 10/1m; marketing=none does not define it"}},
		{"bad categories", []string{"simulate", "--categories", "marketing=1/x", good}, 2, []string{"--categories", `"marketing=1/x"`, `"1/x"`}},
		{"bad quiet hours", []string{"simulate", "--quiet-hours", "22-08", good}, 2, []string{"--quiet-hours", `"22-08"`, "HH:MM"}},
		{"bad timezone", []string{"simulate", "--timezone", "Mars/Olympus", good}, 2, []string{"--timezone", `"Mars/Olympus"`, "IANA"}},
		{"empty timezone", []string{"simulate", "--timezone", "", good}, 2, []string{"--timezone is empty"}},
		{"the machine's own zone", []string{"simulate", "--timezone", "Local", good}, 2, []string{"--timezone", `"Local"`}},
		{"bad quiet in --rules", []string{"simulate", "--rules", "10/1m quiet=25:00-07:00", good}, 2, []string{`--rules "10/1m quiet=25:00-07:00"`, "quiet hours"}},
		{"bad category in --rules", []string{"simulate", "--rules", "10/1m; Promo=1/1h", good}, 2, []string{`--rules "10/1m; Promo=1/1h"`, "Promo"}},
		{"bad generated category", []string{"simulate", "--generate", "10", "--generate-categories", "ok,Not OK"}, 2, []string{"--generate-categories", `"Not OK"`}},
		{"bad generated zone", []string{"simulate", "--generate", "10", "--generate-timezones", "Europe/Berlin,Nowhere"}, 2, []string{"--generate-timezones", `"Nowhere"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCmd(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestSimulateHelp: the help lists every flag simulate takes (a flag
// added later is checked too) and shows them in examples.
func TestSimulateHelp(t *testing.T) {
	stdout, _, code := runCmd(t, "simulate", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	// The examples as written, whatever the terminal's width broke them
	// into (a " \" at the end of a line continues it).
	unwrapped := regexp.MustCompile(` \\\n +`).ReplaceAllString(stdout, " ")
	for _, w := range []string{"time,user,category,timezone", "u-7,social,Europe/Berlin", "hush simulate --limits 10/1m --min-gap 3s < trace.csv",
		"--rules", "p99", "held back by", "-ttl duration", "quiet hours", "of delay", "(none)",
		"--html report.html trace.csv", "hush simulate --generate 1000000 --generate-users 10000 > trace.csv", "--held-by=false --rules",
		"--rules '10/1m,100/24h@3s quiet=off'", "--rules '10/1m,100/24h@3s; marketing=1/1d,1/4h@1h'",
		"--categories 'marketing=2/1d,1/4h@1h; social=10/1h@30s' --quiet-hours 22:00-08:00 --timezone Europe/Berlin",
		"--generate-categories marketing,social, --generate-timezones Europe/Berlin,America/New_York"} {
		if !strings.Contains(unwrapped, w) {
			t.Errorf("help does not mention %q", w)
		}
	}
	fs := simulateFlagSet(new(simulateFlags))
	flags := 0
	fs.VisitAll(func(f *flag.Flag) {
		flags++
		if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(stdout) {
			t.Errorf("help does not list -%s", f.Name)
		}
		if !strings.Contains(stdout, "--"+f.Name) {
			t.Errorf("help's text and examples never mention --%s", f.Name)
		}
	})
	if flags < 14 { // --limits ... --generate-timezones today
		t.Errorf("simulate has %d flags, want at least 14", flags)
	}
	// Every example in the help runs, on a small trace, up to its first
	// redirection or pipe, --html writing to a temporary directory.
	trace := writeFile(t, "trace.csv", fivePushes)
	examples := 0
	for line := range strings.Lines(unwrapped) {
		cmdline, ok := strings.CutPrefix(strings.TrimSpace(line), "hush simulate ")
		if !ok || strings.Contains(cmdline, "[--") || strings.Contains(cmdline, "--generate 1000000") {
			continue
		}
		args := []string{"simulate"}
		for _, w := range shellWords(cmdline) {
			if w == "<" || w == ">" || w == "|" {
				break
			}
			switch {
			case strings.HasSuffix(w, ".csv"):
				w = trace
			case strings.HasSuffix(w, ".html"):
				w = filepath.Join(t.TempDir(), w)
			}
			args = append(args, w)
		}
		if !slices.Contains(args, trace) && !slices.Contains(args, "--generate") {
			args = append(args, trace) // "< trace.csv"
		}
		examples++
		if _, stderr, code := runCmd(t, args...); code != 0 {
			t.Errorf("example %q: exit %d; stderr:\n%s", strings.TrimSpace(line), code, stderr)
		}
	}
	if examples < 8 {
		t.Errorf("ran %d examples of the help, want at least 8", examples)
	}
}

// shellWords splits a command line at spaces, keeping 'single-quoted'
// words whole (without their quotes).
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
			}
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
