package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/throttle"
)

// statusJSON is an answer of a server with quiet hours and categories, for
// a user in quiet hours in Europe/Berlin (23:40 there).
const statusJSON = `{
  "user_id": "u 42",
  "app": "default",
  "now": "2026-11-21T22:40:10Z",
  "next_allowed": "2026-11-22T07:00:03Z",
  "remaining": [
    {
      "rule": "10/1m",
      "remaining": 0,
      "sent": 10,
      "booked": 0,
      "after_bookings": 0
    },
    {
      "rule": "100/24h",
      "remaining": 88,
      "sent": 12,
      "booked": 1,
      "after_bookings": 87
    }
  ],
  "min_gap": "3s",
  "timezone": "Europe/Berlin",
  "timezone_from": "request",
  "quiet_hours": "22:00-08:00",
  "quiet": true,
  "held": [
    {
      "member": "job-9/3",
      "at": "2026-11-22T07:00:00Z"
    }
  ],
  "entries": [
    {
      "member": "job-1/0",
      "at": "2026-11-21T22:39:12.5Z"
    },
    {
      "member": "job-9/3",
      "at": "2026-11-22T07:00:00Z"
    }
  ],
  "categories": [
    {
      "name": "marketing",
      "rules": "2/1d,1/4h@1h quiet=21:00-09:00",
      "remaining": [
        {
          "rule": "2/1d",
          "remaining": 1,
          "sent": 1,
          "booked": 1,
          "after_bookings": 0
        },
        {
          "rule": "1/4h",
          "remaining": 0,
          "sent": 1,
          "booked": 0,
          "after_bookings": 0
        }
      ],
      "next_allowed": "2026-11-22T12:00:00Z",
      "quiet_hours": "21:00-09:00",
      "quiet": true,
      "held": [
        {
          "member": "promo-7/0",
          "at": "2026-11-22T08:00:00Z",
          "held_by": "marketing 2/1d"
        }
      ],
      "entries": [
        {
          "member": "promo-6/0",
          "at": "2026-11-21T21:10:00Z"
        },
        {
          "member": "promo-7/0",
          "at": "2026-11-22T08:00:00Z"
        }
      ]
    },
    {
      "name": "social",
      "rules": "none",
      "remaining": [],
      "next_allowed": "2026-11-22T07:00:03Z",
      "quiet_hours": "22:00-08:00",
      "quiet": true,
      "held": [],
      "entries": []
    },
    {
      "name": "transactional",
      "rules": "none global=off quiet=off",
      "remaining": [],
      "next_allowed": "2026-11-21T22:40:10Z",
      "quiet": false,
      "held": [],
      "entries": []
    }
  ]
}
`

func TestThrottleStatusRendering(t *testing.T) {
	t.Setenv("HUSH_API_TOKEN", "tok")
	api := startFakeAPI(t, http.StatusOK, statusJSON)
	stdout, stderr, code := runCmd(t, "throttle", "status", "u 42", "--server", api.srv.URL, "--timezone", "Europe/Berlin")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	want := `user u 42  (limiter clock 2026-11-21 22:40:10.000 UTC)
time zone Europe/Berlin (23:40:10 there), as asked with --timezone
quiet hours 22:00-08:00: quiet now
next allowed: in 8h19m53s (at 07:00:03.000)
remaining, the bookings kept:
  10/1m    10 sent  0 booked  0 more
  100/24h  12 sent  1 booked  87 more
  min gap  3s
held (1, each until its slot):
  07:00:00.000  in 8h19m50s  08:00:00 Europe/Berlin  job-9/3
recent sends and bookings (2, oldest first):
  22:39:12.500  57.5s ago             job-1/0
  07:00:00.000  in 8h19m50s (booked)  job-9/3
category marketing (rules 2/1d,1/4h@1h quiet=21:00-09:00)
  quiet hours 21:00-09:00: quiet now
  next allowed: in 13h19m50s (at 12:00:00.000)
  remaining, the bookings kept:
    2/1d  1 sent  1 booked  0 more
    1/4h  1 sent  0 booked  0 more
  held (1, each until its slot):
    08:00:00.000  in 9h19m50s  09:00:00 Europe/Berlin  promo-7/0  held by marketing 2/1d
  recent sends and bookings (2, oldest first):
    21:10:00.000  1h30m10s ago          promo-6/0
    08:00:00.000  in 9h19m50s (booked)  promo-7/0
category social (rules none)
  quiet hours 22:00-08:00: quiet now
  no rules of its own: its pushes keep the global rules, among the sends above
  next allowed: in 8h19m53s (at 07:00:03.000)
category transactional (rules none global=off quiet=off)
  quiet hours: none
  no rules and no quiet hours: its pushes go out at once
  next allowed: now
`
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("rendering (-want +got):\n%s", diff)
	}
	req := api.only(t)
	if diff := cmp.Diff(recordedRequest{Method: "GET", Path: "/v1/users/u%2042/throttle", Query: "timezone=Europe%2FBerlin", Auth: "Bearer tok"},
		recordedRequest{Method: req.Method, Path: req.Path, Query: req.Query, Auth: req.Auth}); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

// TestThrottleStatusOlderServer: an answer without the time zone, quiet
// hours and categories renders as it did before them.
func TestThrottleStatusOlderServer(t *testing.T) {
	api := startFakeAPI(t, http.StatusOK, `{
  "user_id": "u-1", "now": "2026-11-21T22:40:10Z", "next_allowed": "2026-11-21T22:40:12.5Z",
  "remaining": [{"rule": "10/1m", "remaining": 9}], "min_gap": "3s",
  "entries": [{"member": "job-1/0", "at": "2026-11-21T22:40:09.5Z"}]}`)
	stdout, stderr, code := runCmd(t, "throttle", "status", "u-1", "--server", api.srv.URL)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	want := `user u-1  (limiter clock 2026-11-21 22:40:10.000 UTC)
next allowed: in 2.5s (at 22:40:12.500)
remaining:
  10/1m    9 more
  min gap  3s
recent sends and bookings (1, oldest first):
  22:40:09.500  500ms ago  job-1/0
`
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("rendering (-want +got):\n%s", diff)
	}
	if q := api.only(t).Query; q != "" {
		t.Errorf("query %q without --timezone, want none", q)
	}
}

// TestThrottleStatusServerZone: quiet hours read in the server's default
// zone say so, and how to read them in the user's.
func TestThrottleStatusServerZone(t *testing.T) {
	api := startFakeAPI(t, http.StatusOK, `{
  "user_id": "u-1", "now": "2026-11-21T22:40:10Z", "next_allowed": "2026-11-22T08:00:00Z",
  "remaining": [{"rule": "10/1m", "remaining": 10, "sent": 0, "booked": 2, "after_bookings": 8}],
  "timezone": "America/New_York", "timezone_from": "server_default", "quiet_hours": "17:00-08:00", "quiet": true,
  "held": [], "entries": []}`)
	stdout, stderr, code := runCmd(t, "throttle", "status", "u-1", "--server", api.srv.URL)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	want := `user u-1  (limiter clock 2026-11-21 22:40:10.000 UTC)
time zone America/New_York (17:40:10 there), the server's HUSH_DEFAULT_TIMEZONE: it does not know the user's zone; give it with --timezone
quiet hours 17:00-08:00: quiet now
next allowed: in 9h19m50s (at 08:00:00.000)
remaining, the bookings kept:
  10/1m  0 sent  2 booked  8 more
recent sends: none inside the longest window
`
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("rendering (-want +got):\n%s", diff)
	}
}

// TestThrottleStatusJSON: --json prints the API's answer, indented.
func TestThrottleStatusJSON(t *testing.T) {
	api := startFakeAPI(t, http.StatusOK, statusJSON)
	stdout, _, code := runCmd(t, "throttle", "status", "--json", "u 42", "--server", api.srv.URL)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if diff := cmp.Diff(statusJSON, stdout); diff != "" {
		t.Errorf("--json (-want +got):\n%s", diff)
	}
}

func TestThrottleReset(t *testing.T) {
	api := startFakeAPI(t, http.StatusNoContent, ``)
	stdout, stderr, code := runCmd(t, "throttle", "reset", "u-42", "--server", api.srv.URL)
	if code != 0 || !strings.Contains(stdout, "u-42") {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if req := api.only(t); req.Method != http.MethodDelete || req.Path != "/v1/users/u-42/throttle" {
		t.Errorf("request %s %s, want DELETE /v1/users/u-42/throttle", req.Method, req.Path)
	}
}

func TestThrottleErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status int
		body   string
		want   []string
	}{
		{"not found", []string{"status", "u"}, http.StatusNotFound, `{"error":{"message":"no such endpoint: GET /v1/users/u/throttle"}}`,
			[]string{"throttle status: not found (404): no such endpoint"}},
		{"no admin", []string{"reset", "u"}, http.StatusNotImplemented, `{"error":{"message":"the limiter cannot be reset"}}`,
			[]string{"throttle reset: the server answered 501 Not Implemented: the limiter cannot be reset"}},
		{"not hush", []string{"status", "u"}, http.StatusBadGateway, "<html>bad gateway</html>", []string{"502", "<html>bad gateway</html>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := startFakeAPI(t, tt.status, tt.body)
			_, stderr, code := runCmd(t, append(append([]string{"throttle"}, tt.args...), "--server", api.srv.URL)...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestThrottleHelp: a bare "hush throttle" and "hush throttle --help" show
// the subcommands and the flags they take.
func TestThrottleHelp(t *testing.T) {
	_, bare, code := runCmd(t, "throttle")
	if code != 2 {
		t.Errorf("bare throttle: exit %d, want 2", code)
	}
	help, _, code := runCmd(t, "throttle", "--help")
	if code != 0 {
		t.Errorf("throttle --help: exit %d, want 0", code)
	}
	for name, out := range map[string]string{"bare": bare, "--help": help} {
		for _, want := range []string{
			"hush throttle status USER", "hush throttle reset USER",
			"Subcommands:\n  status   show", "\n  reset    forget",
			"-json\n", "-server URL\n", "-timezone zone\n", "HUSH_API_TOKEN",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: help lacks %q:\n%s", name, want, out)
			}
		}
		if strings.HasSuffix(strings.TrimSpace(out), "Flags:") || strings.Contains(out, "Flags:\n\n") {
			t.Errorf("%s: an empty Flags list:\n%s", name, out)
		}
	}
}

// TestSendAndThrottleStatusWithCategories runs hush send and hush throttle
// status against the real HTTP API on a real Redis (not running its
// tasks), with categories and quiet hours that hold now in Asia/Tokyo and
// not in UTC: a marketing booking in Tokyo is held until they end.
func TestSendAndThrottleStatusWithCategories(t *testing.T) {
	policy, err := throttle.ParsePolicy("5/1m", "2s")
	if err != nil {
		t.Fatal(err)
	}
	if policy.Categories, err = throttle.ParseCategories("marketing=1/1h; transactional=none global=off"); err != nil {
		t.Fatal(err)
	}
	// Quiet now in Tokyo (9 hours ahead of UTC all year), not in UTC.
	from, to := testkit.QuietNowAhead(9)
	policy.Quiet = throttle.Quiet{From: from, To: to}
	url, lim := realAPI(t, policy, "")
	tok := testkit.APNsToken("cat")

	send := []string{"send", "--server", url, "--user", "u-cat", "--apns", tok, "--title", "20% off", "--timezone", "Asia/Tokyo"}
	if stdout, stderr, code := runCmd(t, append(send, "--id", "promo-1", "--category", "marketing", "--send-in", "1m")...); code != 0 || stdout != "promo-1\n" {
		t.Errorf("send --category marketing: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	_, stderr, code := runCmd(t, append(send, "--category", "promo")...)
	if want := "  category: unknown category \"promo\" (configured: marketing, transactional)\n"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("send --category promo: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	_, stderr, code = runCmd(t, append(send, "--timezone", "Mars/Base")...)
	if want := "recipients[0].timezone: unknown time zone \"Mars/Base\""; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("send --timezone Mars/Base: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}

	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	res, err := lim.ReserveBatch(t.Context(), []throttle.Request{{User: "u-cat", Member: "promo-1/0", Category: "marketing", Location: tokyo}})
	if err != nil || res[0].Wait < 20*time.Minute {
		t.Fatalf("the marketing booking in quiet hours: %+v, %v; want it held for their end", res, err)
	}
	stdout, stderr, code := runCmd(t, "throttle", "status", "u-cat", "--timezone", "Asia/Tokyo", "--server", url)
	if code != 0 {
		t.Fatalf("throttle status: exit %d stderr %q", code, stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^time zone Asia/Tokyo \(\d\d:\d\d:\d\d there\), as asked with --timezone$`),
		regexp.MustCompile(`(?m)^quiet hours \d\d:\d\d-\d\d:\d\d: quiet now$`),
		regexp.MustCompile(`(?m)^held \(1, each until its slot\):\n  \d\d:\d\d:\d\d\.000  in \d+m\d+s  \d\d:\d\d:00 Asia/Tokyo  promo-1/0$`),
		regexp.MustCompile(`(?m)^category marketing \(rules 1/1h\)\n  quiet hours \d\d:\d\d-\d\d:\d\d: quiet now\n  next allowed: in \S+ \(at [\d:.]+\)\n  remaining, the bookings kept:\n    1/1h  0 sent  1 booked  0 more\n  held \(1, each until its slot\):\n`),
		regexp.MustCompile(`(?m)^category transactional \(rules none global=off quiet=off\)\n  quiet hours: none\n  no rules and no quiet hours: its pushes go out at once\n  next allowed: now$`),
	} {
		if !want.MatchString(stdout) {
			t.Errorf("throttle status --timezone Asia/Tokyo does not match %s:\n%s", want, stdout)
		}
	}
	stdout, _, _ = runCmd(t, "throttle", "status", "u-cat", "--server", url)
	if !strings.Contains(stdout, "\ntime zone UTC, the server's HUSH_DEFAULT_TIMEZONE: it does not know the user's zone; give it with --timezone\nquiet hours ") || !strings.Contains(stdout, ": not quiet now\n") {
		t.Errorf("throttle status in the default zone, UTC, is not quiet now:\n%s", stdout)
	}
	_, stderr, code = runCmd(t, "throttle", "status", "u-cat", "--timezone", "Mars/Base", "--server", url)
	if code != 1 || !strings.Contains(stderr, "rejected the request (400): timezone: unknown time zone \"Mars/Base\"") {
		t.Errorf("throttle status --timezone Mars/Base: exit %d, stderr %q", code, stderr)
	}
}
