package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

// runCmd runs one command line and returns its outputs and exit status.
func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	code = exitCode(err, &errb)
	return out.String(), errb.String(), code
}

func TestHelp(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // substrings of stdout
	}{
		{"--help", []string{"--help"}, []string{"Usage:", "serve", "send", "throttle", "version", "simulate", "demo", "Examples:", "hush send -f job.json"}},
		{"-h", []string{"-h"}, []string{"Commands:"}},
		{"help", []string{"help"}, []string{"Commands:"}},
		{"help send", []string{"help", "send"}, []string{"hush send -f job.json", "-user", "-apns", "-fcm", "-data", "HUSH_API_TOKEN"}},
		{"send --help", []string{"send", "--help"}, []string{"POST /v1/notifications", "-ttl duration"}},
		{"throttle --help", []string{"throttle", "--help"}, []string{"hush throttle status USER", "-json"}},
		{"throttle status -h", []string{"throttle", "status", "-h"}, []string{"reset", "-server URL"}},
		{"version --help", []string{"version", "--help"}, []string{"Usage: hush version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit status %d, want 0; stderr:\n%s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("help does not mention %q; stdout:\n%s", w, stdout)
				}
			}
		})
	}
}

func TestServeHelpListsEveryKey(t *testing.T) {
	stdout, stderr, code := runCmd(t, "serve", "--help")
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	for _, key := range []string{
		"HUSH_REDIS_URL", "HUSH_REDIS_CLUSTER_ADDRS", "HUSH_CONCURRENCY", "HUSH_QUEUES", "HUSH_MAX_RETRY",
		"HUSH_THROTTLE_LIMITS", "HUSH_THROTTLE_MIN_GAP", "HUSH_THROTTLE_BYPASS",
		"HUSH_APNS_KEY_FILE", "HUSH_APNS_KEY_ID", "HUSH_APNS_TEAM_ID", "HUSH_APNS_TOPIC",
		"HUSH_APNS_CERT_FILE", "HUSH_APNS_CERT_PASSWORD", "HUSH_APNS_PRODUCTION", "HUSH_APNS_ENDPOINT", "HUSH_APNS_CA_FILE",
		"HUSH_FCM_CREDENTIALS_FILE", "HUSH_FCM_PROJECT_ID", "HUSH_FCM_ENDPOINT",
		"HUSH_DRY_RUN", "HUSH_HTTP_ADDR", "HUSH_API_TOKEN", "HUSH_WEBHOOK_URL", "HUSH_LOG_LEVEL", "HUSH_LOG_FORMAT",
	} {
		if !strings.Contains(stdout, key) {
			t.Errorf("serve --help does not list %s", key)
		}
	}
	if !strings.Contains(stdout, "/readyz") {
		t.Errorf("serve --help does not say what serve does; stdout:\n%s", stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStderr []string
	}{
		{"no command", nil, []string{"no command given", "Commands:"}},
		{"unknown command", []string{"frobnicate"}, []string{`unknown command "frobnicate"`}},
		{"help unknown", []string{"help", "frobnicate"}, []string{`unknown command "frobnicate"`}},
		{"misspelled command", []string{"sned", "--user", "u"}, []string{`unknown command "sned" (did you mean "send"?)`}},
		{"help misspelled", []string{"help", "serv"}, []string{`unknown command "serv" (did you mean "serve"?)`}},
		{"throttle misspelled", []string{"throttle", "stauts", "u"}, []string{`unknown subcommand "stauts" (did you mean "status"?)`}},
		{"apps misspelled", []string{"apps", "chekc", "f"}, []string{`unknown subcommand "chekc" (did you mean "check"?)`}},
		{"send bad flag", []string{"send", "--bogus"}, []string{"send: flag provided but not defined: -bogus (run 'hush send --help')"}},
		{"send misspelled flag", []string{"send", "--titel", "x"}, []string{`send: flag provided but not defined: -titel (did you mean --title?)`}},
		{"throttle misspelled flag", []string{"throttle", "status", "u", "--jsno"}, []string{`flag provided but not defined: -jsno (did you mean --json?)`}},
		{"send nothing", []string{"send"}, []string{"give -f job.json, or --user"}},
		{"send no device", []string{"send", "--user", "u-1"}, []string{"needs at least one device"}},
		{"send bad data", []string{"send", "--user", "u-1", "--fcm", "t", "--data", "novalue"}, []string{`--data "novalue": want key=value`}},
		{"send bad ttl", []string{"send", "--ttl", "soon"}, []string{`invalid value "soon" for flag -ttl`}},
		{"send bad badge", []string{"send", "--badge", "x"}, []string{"-badge"}},
		{"send file and flags", []string{"send", "-f", "job.json", "--title", "x"}, []string{"-f cannot be combined with --title"}},
		{"send positional", []string{"send", "extra"}, []string{`unexpected argument "extra"`}},
		{"serve positional", []string{"serve", "now"}, []string{"serve takes no arguments"}},
		{"throttle nothing", []string{"throttle"}, []string{"want a subcommand"}},
		{"throttle unknown", []string{"throttle", "bump", "u"}, []string{`unknown subcommand "bump"`}},
		{"throttle status no user", []string{"throttle", "status"}, []string{"want exactly one USER, got 0"}},
		{"throttle reset two users", []string{"throttle", "reset", "a", "b"}, []string{"want exactly one USER, got 2"}},
		{"version args", []string{"version", "x"}, []string{"version takes no arguments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCmd(t, tt.args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2 (usage error)", code)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q; stderr:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"help", flag.ErrHelp, 0},
		{"usage", usageErrorf("bad"), 2},
		{"wrapped usage", errors.Join(errors.New("x"), usageErrorf("bad")), 2},
		{"other", errors.New("boom"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exitCode(tt.err, new(bytes.Buffer)); got != tt.want {
				t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestServeConfigErrorNamesKey(t *testing.T) {
	t.Setenv("HUSH_REDIS_URL", "redis://127.0.0.1:1/0")
	t.Setenv("HUSH_THROTTLE_LIMITS", "10/0s")
	t.Setenv("HUSH_CONCURRENCY", "0")
	_, stderr, code := runCmd(t, "serve")
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	for _, key := range []string{"HUSH_THROTTLE_LIMITS", "HUSH_CONCURRENCY"} {
		if !strings.Contains(stderr, key) {
			t.Errorf("stderr does not name %s:\n%s", key, stderr)
		}
	}
}

// TestServeWarnsUnknownKeys: a misspelled key is not ignored in silence;
// serve names it and the key it most likely meant before it starts.
func TestServeWarnsUnknownKeys(t *testing.T) {
	t.Setenv("HUSH_REDIS_URL", "redis://127.0.0.1:1/0") // nothing listens: serve stops after its start
	t.Setenv("HUSH_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("HUSH_THROTLE_LIMITS", "5/1m")
	_, stderr, _ := runCmd(t, "serve")
	if want := "key=HUSH_THROTLE_LIMITS did_you_mean=HUSH_THROTTLE_LIMITS"; !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		stdout, _, code := runCmd(t, args...)
		if code != 0 || !strings.HasPrefix(stdout, "hush ") {
			t.Errorf("%v: exit %d, stdout %q", args, code, stdout)
		}
	}
	if got := versionString("v1.2.3", "0123456789abcdef"); !strings.HasPrefix(got, "hush v1.2.3 (commit 0123456789ab,") {
		t.Errorf("versionString with ldflags = %q", got)
	}
}

func TestServerURL(t *testing.T) {
	tests := []struct {
		name, flag, addr, want string
	}{
		{"default", "", "", "http://127.0.0.1:8080"},
		{"flag", "http://hush.internal:9000/", ":1", "http://hush.internal:9000"},
		{"flag without scheme", "10.0.0.5:8080", "", "http://10.0.0.5:8080"},
		{"addr port only", "", ":9090", "http://127.0.0.1:9090"},
		{"addr all interfaces", "", "0.0.0.0:7000", "http://127.0.0.1:7000"},
		{"addr host", "", "10.1.2.3:7000", "http://10.1.2.3:7000"},
		{"addr ipv6", "", "[::1]:7000", "http://[::1]:7000"},
		{"addr garbage", "", "nonsense", "http://127.0.0.1:8080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := serverURL(tt.flag, tt.addr); got != tt.want {
				t.Errorf("serverURL(%q, %q) = %q, want %q", tt.flag, tt.addr, got, tt.want)
			}
		})
	}
}
