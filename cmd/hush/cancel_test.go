package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/throttle"
)

func TestCancelRendering(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"cancelled now",
			`{"id":"order-4711","state":"cancelled","queue":"default","accepted_at":"2026-11-21T22:40:00Z",
			  "cancelled_at":"2026-11-21T22:40:10Z","recipients":4,
			  "counts":{"delivered":1,"cancelled":2,"expired":0,"pending":1},"deferrals":3,"cancelled":true}`,
			`job order-4711 (4 recipients) cancelled: none of its pushes will be sent from now on
  delivered  1  sent before the cancellation
  cancelled  2  dropped unsent
  pending    1  being dropped now: they end cancelled (or delivered, if a device already had the push)
`},
		{"already cancelled",
			`{"id":"order-4711","state":"cancelled","queue":"default","accepted_at":"2026-11-21T22:40:00Z",
			  "cancelled_at":"2026-11-21T22:40:10Z","recipients":4,
			  "counts":{"delivered":1,"cancelled":3},"deferrals":3,"cancelled":false}`,
			`job order-4711 (4 recipients) was already cancelled at 2026-11-21 22:40:10.000 UTC; nothing changed
  delivered  1  sent before the cancellation
  cancelled  3  dropped unsent
`},
		{"already done",
			`{"id":"j","state":"done","queue":"default","accepted_at":"2026-11-21T22:40:00Z","recipients":3,
			  "counts":{"delivered":1,"expired":1,"token_invalid":1,"surprised":2},"deferrals":0,"cancelled":false}`,
			`job j (3 recipients) had already finished: every recipient has a final state; nothing was cancelled
  delivered      1  sent before the cancellation
  cancelled      0  dropped unsent
  expired        1  dropped before, expired
  token_invalid  1  every token invalid
  surprised      2
`},
		{"nothing left",
			`{"id":"j","state":"cancelled","queue":"default","accepted_at":"2026-11-21T22:40:00Z","recipients":1,
			  "counts":{"delivered":1},"deferrals":0,"cancelled":true}`,
			`job j (1 recipient) cancelled, but nothing was left to drop: every recipient already had a final state
  delivered  1  sent before the cancellation
  cancelled  0  dropped unsent
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HUSH_API_TOKEN", "tok")
			api := startFakeAPI(t, http.StatusOK, tt.body)
			stdout, stderr, code := runCmd(t, "cancel", "order 4711", "--server", api.srv.URL)
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			if diff := cmp.Diff(tt.want, stdout); diff != "" {
				t.Errorf("rendering (-want +got):\n%s", diff)
			}
			req := api.only(t)
			if diff := cmp.Diff(recordedRequest{Method: "DELETE", Path: "/v1/notifications/order%204711", Auth: "Bearer tok"},
				recordedRequest{Method: req.Method, Path: req.Path, Auth: req.Auth}); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCancelJSON(t *testing.T) {
	const answer = `{
  "id": "j-1",
  "state": "cancelled",
  "queue": "default",
  "accepted_at": "2026-11-21T22:40:00Z",
  "cancelled_at": "2026-11-21T22:40:10Z",
  "recipients": 2,
  "counts": {
    "cancelled": 1,
    "delivered": 1
  },
  "deferrals": 1,
  "cancelled": true
}
`
	api := startFakeAPI(t, http.StatusOK, answer)
	stdout, stderr, code := runCmd(t, "cancel", "--json", "j-1", "--server", api.srv.URL)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if diff := cmp.Diff(answer, stdout); diff != "" {
		t.Errorf("--json (-want +got):\n%s", diff)
	}
}

func TestCancelErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status int
		body   string
		code   int
		want   string
	}{
		{"unknown id", []string{"nope"}, http.StatusNotFound, `{"error":{"message":"no job with this id"}}`, 1,
			`cancel: the server knows no job "nope" (404: no job with this id); the id is the one hush send printed`},
		{"unavailable", []string{"j"}, http.StatusServiceUnavailable, `{"error":{"message":"could not cancel the job, try again (cancelling again is safe)"}}`, 1,
			"cancel: the server answered 503 Service Unavailable: could not cancel the job, try again (cancelling again is safe)"},
		{"unauthorized", []string{"j"}, http.StatusUnauthorized, `{"error":{"message":"missing or wrong bearer token"}}`, 1, "HUSH_API_TOKEN"},
		{"no id", nil, http.StatusOK, `{}`, 2, "cancel: want exactly one job ID, got 0 arguments"},
		{"two ids", []string{"a", "b"}, http.StatusOK, `{}`, 2, "want exactly one job ID, got 2 arguments"},
		{"empty id", []string{""}, http.StatusOK, `{}`, 2, "want exactly one job ID"},
		{"bad flag", []string{"j", "--force"}, http.StatusOK, `{}`, 2, "cancel: flag provided but not defined: -force"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := startFakeAPI(t, tt.status, tt.body)
			stdout, stderr, code := runCmd(t, append(append([]string{"cancel"}, tt.args...), "--server", api.srv.URL)...)
			if code != tt.code || stdout != "" {
				t.Errorf("exit %d stdout %q, want %d and nothing on stdout", code, stdout, tt.code)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr does not contain %q:\n%s", tt.want, stderr)
			}
			if tt.code == 2 && len(api.requests()) != 0 {
				t.Errorf("a usage error reached the API")
			}
		})
	}
}

// TestCancelAgainstTheRealAPI cancels a job on the real HTTP API on a
// real Redis, not running its tasks: its one recipient stays pending, so
// the server waits out its grace, and a second cancel changes nothing.
func TestCancelAgainstTheRealAPI(t *testing.T) {
	policy, err := throttle.ParsePolicy("5/1m", "2s")
	if err != nil {
		t.Fatal(err)
	}
	url, _ := realAPI(t, policy, "")
	send := []string{"send", "--server", url, "--id", "cx-1", "--user", "u-cx", "--apns", testkit.APNsToken("cx"), "--title", "hi"}
	if stdout, stderr, code := runCmd(t, send...); code != 0 || stdout != "cx-1\n" {
		t.Fatalf("send: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	stdout, stderr, code := runCmd(t, "cancel", "cx-1", "--server", url)
	if code != 0 || !strings.HasPrefix(stdout, "job cx-1 (1 recipient) cancelled: none of its pushes will be sent from now on\n") ||
		!strings.Contains(stdout, "\n  pending    1  being dropped now") {
		t.Errorf("cancel: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	stdout, stderr, code = runCmd(t, "cancel", "cx-1", "--json", "--server", url)
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil || res["cancelled"] != false || res["state"] != "cancelled" {
		t.Errorf("cancel again --json: exit %d, %v, stdout %s stderr %q", code, err, stdout, stderr)
	}
	if _, stderr, code := runCmd(t, "cancel", "cx-2", "--server", url); code != 1 || !strings.Contains(stderr, `knows no job "cx-2"`) {
		t.Errorf("unknown id: exit %d stderr %q", code, stderr)
	}
}
