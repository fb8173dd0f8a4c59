package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDemoRunsTheBurstToTheEnd runs the burst without categories and
// quiet hours: the global rules alone.
func TestDemoRunsTheBurstToTheEnd(t *testing.T) {
	stdout, stderr, code := runCmd(t, "demo", "--limits", "2/1s", "--min-gap", "200ms", "--pushes", "3", "--timeout", "30s",
		"--categories", "", "--quiet-for", "0")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	// Every push settles with one timeline line.
	settled := regexp.MustCompile(`(?m)^\+\d\d\.\d{3}s  u-\d  +#\d +(sent|dropped|token invalid)`)
	if got := len(settled.FindAllString(stdout, -1)); got != 12 {
		t.Errorf("%d settled timeline lines, want 12 (4 users x 3 pushes); stdout:\n%s", got, stdout)
	}
	for _, want := range []string{
		"rules 2/1s min-gap 200ms; 4 users x 3 pushes",
		"u-1   #",
		"sent (apns, fcm, webpush)",
		"deferred until +",
		"(min-gap 200ms)",
		"(2/1s)",
		"sent (fcm); apns token invalid",
		"u-3   #3   dropped: expired (ttl 500ms",
		"u-4   #3   sent (apns)  critical: bypasses the limiter",
		"u-1 (apns, fcm, webpush): 3 of 3 sent",
		"u-3 (fcm): 2 of 3 sent",
		"held back by min-gap 200ms",
		"held back by 2/1s",
		"3 provider answers said a token is invalid",
		"\n  2/1s           kept (most in any 1s: 2)\n",
		"\n  min-gap 200ms  kept",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q; stdout:\n%s", want, stdout)
		}
	}
	// Usually u-1 and u-2: 1 at once, 2 deferred; u-3: 1 and 1, the third
	// expires; u-4: 1 and 1, the third is critical: 4 at once and 6
	// deferred. On a loaded machine a held push can wake past its slot and
	// be booked again after a later push of its user that found the slot
	// free (seen in CI: 5 and 5), so the split may move, not the total.
	tally := regexp.MustCompile(`12 pushes: (\d+) sent at once, (\d+) deferred then sent, 1 critical \(not limited\), 1 dropped as expired\n`)
	if m := tally.FindStringSubmatch(stdout); m == nil {
		t.Errorf("output lacks the tally of 12 pushes with 1 critical and 1 expired; stdout:\n%s", stdout)
	} else if now, later := atoi(t, m[1]), atoi(t, m[2]); now+later != 10 || now < 4 || later < 2 {
		t.Errorf("tally: %d at once and %d deferred, want 10 in all, at least 4 at once (each user's first) and 2 deferred; stdout:\n%s", now, later, stdout)
	}
	for _, unwanted := range []string{"categories:", "quiet hours", "[", "BROKEN"} {
		if strings.Contains(stdout, unwanted) {
			t.Errorf("output has %q without categories and quiet hours; stdout:\n%s", unwanted, stdout)
		}
	}
	if stderr != "" {
		t.Errorf("stderr is not quiet without -v:\n%s", stderr)
	}
}

// TestDemoCategoriesAndQuietHours runs a scaled-down burst with a
// marketing cap and quiet hours from 1s to 3s into it: u-1's second
// marketing push waits for the category's cap, other pushes wait for the
// quiet hours to end, and u-1's transactional push goes out inside them.
func TestDemoCategoriesAndQuietHours(t *testing.T) {
	stdout, stderr, code := runCmd(t, "demo", "--limits", "3/2s", "--min-gap", "500ms", "--pushes", "4", "--timeout", "30s",
		"--categories", "marketing=1/3s; transactional=none global=off", "--quiet-in", "1s", "--quiet-for", "2s")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	// Every push settles with one timeline line: 4 users x 4, and u-1's
	// transactional one.
	settled := regexp.MustCompile(`(?m)^\+\d\d\.\d{3}s  u-\d  +#\d +(sent|dropped|token invalid)`)
	if got := len(settled.FindAllString(stdout, -1)); got != 17 {
		t.Errorf("%d settled timeline lines, want 17 (4 users x 4 pushes, and 1 transactional); stdout:\n%s", got, stdout)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^categories: marketing=1/3s; transactional=none global=off quiet=off$`),
		regexp.MustCompile(`(?m)^quiet hours: \+01\.000s to \+03\.000s \(HUSH_QUIET_HOURS=\d\d:\d\d:\d\d-\d\d:\d\d:\d\d in UTC, HUSH_DEFAULT_TIMEZONE\); u-1 #5, transactional, is submitted at \+02\.000s$`),
		// Whichever of the two marketing pushes the worker books first.
		regexp.MustCompile(`(?m)^\+\d\d\.\d{3}s  u-1   #[12]   sent \(apns, fcm, webpush\)  \[marketing\]$`),
		regexp.MustCompile(`(?m)^\+\d\d\.\d{3}s  u-1   #[12]   deferred until \+\d\d\.\d{3}s  \(marketing 1/3s\)  \[marketing\]$`),
		regexp.MustCompile(`(?m)^\+\d\d\.\d{3}s  u-2   #\d   deferred until \+03\.000s  \(quiet hours\)$`),
		regexp.MustCompile(`(?m)^\+01\.000s  quiet hours begin: pushes that keep them are held until \+03\.000s$`),
		regexp.MustCompile(`(?m)^\+0[23]\.\d{3}s  u-1   #5   sent \(apns, fcm, webpush\)  \[transactional: keeps no quiet hours\]$`),
		regexp.MustCompile(`(?m)^\+03\.000s  quiet hours end$`),
		regexp.MustCompile(`(?m)^  #[12]  sent .*  held back by marketing 1/3s  \[marketing\]$`),
		regexp.MustCompile(`(?m)^  #\d  sent .*  held back by quiet hours$`),
		regexp.MustCompile(`(?m)^  #5  sent .*  at once  \[transactional: inside the quiet hours, which it does not keep\]$`),
		regexp.MustCompile(`(?m)^  3/2s +kept \(most in any 2s: [23]\)$`),
		regexp.MustCompile(`(?m)^  marketing 1/3s +kept \(most in any 3s: 1\)$`),
		regexp.MustCompile(`(?m)^  quiet hours +kept: no push that keeps them arrived from \+01\.000s to \+03\.000s.*; 1 push of a category that keeps none did, as it may$`),
	} {
		if !want.MatchString(stdout) {
			t.Errorf("output does not match %s; stdout:\n%s", want, stdout)
		}
	}
	// Nothing that keeps the quiet hours was sent inside them (but for the
	// contract's 250ms at either end): every send of the timeline between
	// them is u-1's transactional push.
	sent := regexp.MustCompile(`(?m)^\+(\d\d\.\d{3})s  (u-\d   #\d)   sent .*$`)
	for _, m := range sent.FindAllStringSubmatch(stdout, -1) {
		if at, _ := strconv.ParseFloat(m[1], 64); at > 1.25 && at < 2.75 && m[2] != "u-1   #5" {
			t.Errorf("a push that keeps the quiet hours was sent inside them: %s", m[0])
		}
	}
	if strings.Contains(stdout, "BROKEN") {
		t.Errorf("a rule is broken; stdout:\n%s", stdout)
	}
	if stderr != "" {
		t.Errorf("stderr is not quiet without -v:\n%s", stderr)
	}
}

func TestDemoUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no users", []string{"demo", "--users", "0"}, "--users"},
		{"bad limits", []string{"demo", "--limits", "3/ten"}, `--limits "3/ten"`},
		{"argument", []string{"demo", "now"}, "no arguments"},
		{"bad categories", []string{"demo", "--categories", "marketing"}, `--categories "marketing"`},
		{"quiet in parts of a second", []string{"demo", "--quiet-in", "1500ms"}, "--quiet-in must be whole seconds"},
		{"negative quiet", []string{"demo", "--quiet-for", "-1s"}, "--quiet-for must be whole seconds"},
		{"quiet all day", []string{"demo", "--quiet-for", "24h"}, "--quiet-for must be whole seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCmd(t, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

func TestDemoHelp(t *testing.T) {
	stdout, _, code := runCmd(t, "demo", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, w := range []string{"fake APNs", "no network", "deferred until", "token invalid", "critical", "hush demo --limits", "-pushes",
		"marketing", "transactional", "HUSH_QUIET_HOURS", "quiet hours begin", "-categories", "-quiet-in", "-quiet-for"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("help does not mention %q", w)
		}
	}
}

// atoi is strconv.Atoi for a string a regexp matched as digits.
func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
