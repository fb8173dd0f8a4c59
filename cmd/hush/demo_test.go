package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestDemoRunsTheBurstToTheEnd(t *testing.T) {
	stdout, stderr, code := runCmd(t, "demo", "--limits", "2/1s", "--min-gap", "200ms", "--pushes", "3", "--timeout", "30s")
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
		"sent (apns, fcm)",
		"deferred until +",
		"(min-gap 200ms)",
		"(2/1s)",
		"sent (fcm); apns token invalid",
		"u-3   #3   dropped: expired (ttl 500ms",
		"u-4   #3   sent (apns)  critical: bypasses the limiter",
		"u-1 (apns, fcm): 3 of 3 sent",
		"u-3 (fcm): 2 of 3 sent",
		"held back by min-gap 200ms",
		"held back by 2/1s",
		// u-1 and u-2: 1 at once, 2 deferred; u-3: 1 and 1, the third
		// expires; u-4: 1 and 1, the third is critical.
		"12 pushes: 4 sent at once, 6 deferred then sent, 1 critical (not limited), 1 dropped as expired\n",
		"3 provider answers said a token is invalid",
		"2/1s kept (most in any 1s: 2)",
		"min-gap 200ms kept",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q; stdout:\n%s", want, stdout)
		}
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
	for _, w := range []string{"fake APNs", "no network", "deferred until", "token invalid", "critical", "hush demo --limits", "-pushes"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("help does not mention %q", w)
		}
	}
}
