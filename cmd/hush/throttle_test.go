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
	api := startFakeAPI(t, http.StatusOK, `{"user_id":"u","now":"2026-11-21T22:40:10Z"}`)
	stdout, _, code := runCmd(t, "throttle", "status", "--json", "u", "--server", api.srv.URL)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := "{\n  \"user_id\": \"u\",\n  \"now\": \"2026-11-21T22:40:10Z\"\n}\n"
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

func TestThrottleStatusUnknownServerAnswer(t *testing.T) {
	api := startFakeAPI(t, http.StatusNotFound, `{"error":"no such route"}`)
	_, stderr, code := runCmd(t, "throttle", "status", "u", "--server", api.srv.URL)
	if code != 1 || !strings.Contains(stderr, "404") {
		t.Errorf("exit %d stderr %q", code, stderr)
	}
}
