package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const statusJSON = `{
  "user_id": "u 42",
  "now": "2026-11-21T22:40:10.000Z",
  "next_allowed": "2026-11-21T22:40:12.500Z",
  "remaining": [{"rule": "10/1m", "remaining": 0}, {"rule": "100/24h", "remaining": 88}],
  "min_gap": "3s",
  "entries": [
    {"member": "job-1/0", "at": "2026-11-21T22:39:12.500Z"},
    {"member": "job-9/3", "at": "2026-11-21T22:40:12.500Z"}
  ]
}`

func TestThrottleStatusRendering(t *testing.T) {
	t.Setenv("HUSH_API_TOKEN", "tok")
	api := startFakeAPI(t, http.StatusOK, statusJSON)
	stdout, stderr, code := runCmd(t, "throttle", "status", "u 42", "--server", api.srv.URL)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	want := `user u 42  (limiter clock 2026-11-21 22:40:10.000 UTC)
next allowed: in 2.5s (at 22:40:12.500)
remaining:
  10/1m    0 more
  100/24h  88 more
  min gap  3s
recent sends and bookings (2, oldest first):
  22:39:12.500  57.5s ago         job-1/0
  22:40:12.500  in 2.5s (booked)  job-9/3
`
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("rendering (-want +got):\n%s", diff)
	}
	req := api.only(t)
	if diff := cmp.Diff(recordedRequest{Method: "GET", Path: "/v1/users/u%2042/throttle", Auth: "Bearer tok"},
		recordedRequest{Method: req.Method, Path: req.Path, Auth: req.Auth}); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

func TestThrottleStatusJSON(t *testing.T) {
	api := startFakeAPI(t, http.StatusOK, statusJSON)
	stdout, _, code := runCmd(t, "throttle", "status", "--json", "u 42", "--server", api.srv.URL)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := `{
  "user_id": "u 42",
  "now": "2026-11-21T22:40:10Z",
  "next_allowed": "2026-11-21T22:40:12.5Z",
  "remaining": [
    {
      "rule": "10/1m",
      "remaining": 0
    },
    {
      "rule": "100/24h",
      "remaining": 88
    }
  ],
  "min_gap": "3s",
  "entries": [
    {
      "member": "job-1/0",
      "at": "2026-11-21T22:39:12.5Z"
    },
    {
      "member": "job-9/3",
      "at": "2026-11-21T22:40:12.5Z"
    }
  ]
}
`
	if diff := cmp.Diff(want, stdout); diff != "" {
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
			"-json\n", "-server URL\n", "HUSH_API_TOKEN",
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
