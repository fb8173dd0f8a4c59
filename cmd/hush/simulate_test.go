package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

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

func mustRuleSet(t testing.TB, s string) ruleSet {
	t.Helper()
	rs, err := parseRuleSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestSimulateHandComputed(t *testing.T) {
	events, err := readTrace(strings.NewReader(fivePushes), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Under 3/10s with min-gap 2s, pushes at 0,1,2,3,4 s get the slots:
	//   0: now; 1: 2 (gap after 0); 2: 4 (gap after the booking at 2);
	//   3: 10 (0,2,4 fill the 10 s window until 0 leaves it);
	//   4: 12 (2,4,10 would be 4 in a window before 12; gap after 10).
	// Delays 0,1,2,7,8 s.
	tests := []struct {
		name  string
		rules string
		ttl   time.Duration
		want  simResult
	}{
		{"3/10s gap 2s", "3/10s@2s", 0, simResult{
			Rules: "3/10s min-gap 2s", Events: 5, Allowed: 1, Deferred: 4, DeferredPct: 80,
			DelayP50: 2000, DelayP90: 8000, DelayP99: 8000, DelayMax: 8000,
			HeldBy: map[string]int{"min-gap 2s": 2, "3/10s": 2}, Users: 1, UsersDeferred: 1,
		}},
		// With a 5 s ttl the pushes at 3 s and 4 s (slots 10 s and, once 10
		// is released, 10 s again) are dropped.
		{"3/10s gap 2s ttl 5s", "3/10s@2s", 5 * time.Second, simResult{
			Rules: "3/10s min-gap 2s", Events: 5, Allowed: 1, Deferred: 2, Dropped: 2, DeferredPct: 40, DroppedPct: 40,
			DelayP50: 1000, DelayP90: 2000, DelayP99: 2000, DelayMax: 2000,
			HeldBy: map[string]int{"min-gap 2s": 2, "3/10s": 2}, Users: 1, UsersDeferred: 1,
		}},
		// A slot exactly ttl after the push is dropped too (the worker's
		// deadline is exclusive): the push at 2 s would wait exactly 2 s.
		// Its slot given back, the push at 3 s takes 4 s (1 s wait); the
		// one at 4 s meets 0,2,4 in the window and would wait 6 s.
		{"ttl equals the wait", "3/10s@2s", 2 * time.Second, simResult{
			Rules: "3/10s min-gap 2s", Events: 5, Allowed: 1, Deferred: 2, Dropped: 2, DeferredPct: 40, DroppedPct: 40,
			DelayP50: 1000, DelayP90: 1000, DelayP99: 1000, DelayMax: 1000,
			HeldBy: map[string]int{"min-gap 2s": 3, "3/10s": 1}, Users: 1, UsersDeferred: 1,
		}},
		// A gap of exactly the spacing allows everything.
		{"gap 1s", "@1s", 0, simResult{
			Rules: "min-gap 1s", Events: 5, Allowed: 5, HeldBy: map[string]int{}, Users: 1,
		}},
		{"5/1m", "5/1m", 0, simResult{
			Rules: "5/1m", Events: 5, Allowed: 5, HeldBy: map[string]int{}, Users: 1,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := simulate(context.Background(), events, mustRuleSet(t, tt.rules), simOptions{TTL: tt.ttl, HeldBy: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(simResult{}, "Seconds")); diff != "" {
				t.Errorf("simulate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadTrace(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []traceEvent
	}{
		{"both time formats, header, comment, blank, quotes", fivePushes, []traceEvent{
			{1795255200000, "u-1"}, {1795255201000, "u-1"}, {1795255202000, "u-1"},
			{1795255203000, "u-1"}, {1795255204000, "u-1"},
		}},
		{"no header, extra columns ignored", "5,a,x\n7,b,y\n", []traceEvent{{5, "a"}, {7, "b"}}},
		{"sorted by time, equal times in input order", "9,a\n3,b\n9,c\n1,d\n", []traceEvent{{1, "d"}, {3, "b"}, {9, "a"}, {9, "c"}}},
		{"fractional seconds", "2026-11-21T10:00:00.250Z,a\n", []traceEvent{{1795255200250, "a"}}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readTrace(strings.NewReader(tt.input), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(traceEvent{})); diff != "" {
				t.Errorf("readTrace (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadTraceErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  traceLineError // Err not compared
	}{
		{"bad time after the header", "time,user\n1,a\n\nyesterday,b\n", traceLineError{Line: 4, Field: "time", Text: "yesterday"}},
		{"a second unparsable line is no header", "time,user\nwhen,who\n", traceLineError{Line: 2, Field: "time", Text: "when"}},
		{"bad date", "1,a\n2026-13-01T00:00:00Z,b\n", traceLineError{Line: 2, Field: "time", Text: "2026-13-01T00:00:00Z"}},
		{"missing user", "1,a\n# c\n2\n", traceLineError{Line: 3, Field: "user", Text: ""}},
		{"empty user", "1,a\n2, ,x\n", traceLineError{Line: 2, Field: "user", Text: ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readTrace(strings.NewReader(tt.input), nil)
			le, ok := errors.AsType[*traceLineError](err)
			if !ok {
				t.Fatalf("err = %v, want a *traceLineError", err)
			}
			got := *le
			got.Err = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("message %q does not name the line", err)
			}
		})
	}
}

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
		if strings.Contains(line, "%") && len(f) >= 12 {
			// The rule name has spaces: take the columns from the right.
			rows[strings.Join(f[:len(f)-11], " ")] = f[len(f)-11:]
		}
	}
	want := map[string][]string{
		"3/10s min-gap 2s": {"5", "1", "2", "40.0%", "2", "40.0%", "1.0s", "2.0s", "2.0s", "2.0s", "1/1"},
		"min-gap 1s":       {"5", "5", "0", "0.0%", "0", "0.0%", "0", "0", "0", "0", "0/1"},
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
	var got []simResult
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
	for _, w := range []string{"time,user", "hush simulate --limits 10/1m --min-gap 3s < trace.csv", "--rules", "p99", "held back by", "-ttl duration",
		"--html report.html trace.csv", "hush simulate --generate 1000000 --generate-users 10000 > trace.csv", "--held-by=false --rules"} {
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
	if flags < 9 { // --limits ... --generate-users today
		t.Errorf("simulate has %d flags, want at least 9", flags)
	}
}

func TestGeneratedTraceReadsBack(t *testing.T) {
	var buf bytes.Buffer
	if err := writeTrace(&buf, 5000, 100, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), 7); err != nil {
		t.Fatal(err)
	}
	events, err := readTrace(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]bool{}
	for _, e := range events {
		users[e.user] = true
	}
	if len(events) != 5000 || len(users) < 50 {
		t.Errorf("generated %d events over %d users, want 5000 over most of 100", len(events), len(users))
	}
}

// BenchmarkSimulate replays a generated bursty trace (100k events over 10k
// users, a day long) under the worker's default rules with a 1h ttl.
func BenchmarkSimulate(b *testing.B) {
	var buf bytes.Buffer
	if err := writeTrace(&buf, 100_000, 10_000, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), 1); err != nil {
		b.Fatal(err)
	}
	events, err := readTrace(&buf, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		rules  string
		heldBy bool
	}{{"10/1m,100/24h@3s", true}, {"10/1m,100/24h@3s", false}, {"3/10s@2s", true}} {
		rules, heldBy := bc.rules, bc.heldBy
		b.Run(fmt.Sprintf("%s/held-by=%t", rules, heldBy), func(b *testing.B) {
			rs := mustRuleSet(b, rules)
			b.ReportAllocs()
			start := time.Now()
			n := 0
			for b.Loop() {
				if _, err := simulate(context.Background(), events, rs, simOptions{TTL: time.Hour, HeldBy: heldBy}); err != nil {
					b.Fatal(err)
				}
				n += len(events)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
		})
	}
}

func TestFmtDelay(t *testing.T) {
	tests := []struct {
		ms   int64
		want string
	}{
		{0, "0"}, {850, "850ms"}, {2549, "2.5s"}, {59_999, "59.9s"}, {190_500, "3m10s"},
		{3_599_999, "59m59s"}, {26*3_600_000 + 59_999, "26h0m"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := fmtDelay(tt.ms); got != tt.want {
				t.Errorf("fmtDelay(%d) = %q, want %q", tt.ms, got, tt.want)
			}
		})
	}
}
