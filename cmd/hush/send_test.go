package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/throttle"
)

// recordedRequest is what a fake API saw.
type recordedRequest struct {
	Method, Path, Query, Auth, ContentType string
	Body                                   []byte
}

// fakeAPI answers every request with status and body and records it.
type fakeAPI struct {
	mu   sync.Mutex
	reqs []recordedRequest
	srv  *httptest.Server
}

func startFakeAPI(t *testing.T, status int, body string) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recordedRequest{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), b})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) requests() []recordedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recordedRequest(nil), f.reqs...)
}

func (f *fakeAPI) only(t *testing.T) recordedRequest {
	t.Helper()
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("the API got %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

func TestSendBuildsJobFromFlags(t *testing.T) {
	t.Setenv("HUSH_API_TOKEN", "s3cret")
	api := startFakeAPI(t, http.StatusAccepted, `{"id":"order-4711"}`)
	stdout, stderr, code := runCmd(t, "send", "--server", api.srv.URL,
		"--id", "order-4711", "--user", "u-42",
		"--apns", strings.Repeat("ab", 32), "--fcm", "fcm-token-1", "--fcm", "fcm-token-2",
		"--title", "Shipped", "--body", "Order 4711 is on its way", "--sound", "default", "--badge", "3",
		"--priority", "high", "--ttl", "2h", "--collapse-key", "order-4711",
		"--data", "order=4711", "--data", "url=https://x.test/?a=b")
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	if stdout != "order-4711\n" {
		t.Errorf("stdout = %q, want the id", stdout)
	}
	req := api.only(t)
	if diff := cmp.Diff(recordedRequest{Method: "POST", Path: "/v1/notifications", Auth: "Bearer s3cret", ContentType: "application/json"},
		recordedRequest{Method: req.Method, Path: req.Path, Auth: req.Auth, ContentType: req.ContentType}); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	var got map[string]any
	if err := json.Unmarshal(req.Body, &got); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, req.Body)
	}
	want := map[string]any{
		"id": "order-4711",
		"recipients": []any{map[string]any{
			"user_id": "u-42",
			"devices": []any{
				map[string]any{"platform": "apns", "token": strings.Repeat("ab", 32)},
				map[string]any{"platform": "fcm", "token": "fcm-token-1"},
				map[string]any{"platform": "fcm", "token": "fcm-token-2"},
			},
		}},
		"alert":        map[string]any{"title": "Shipped", "body": "Order 4711 is on its way", "sound": "default", "badge": float64(3)},
		"data":         map[string]any{"order": "4711", "url": "https://x.test/?a=b"},
		"priority":     "high",
		"ttl":          "2h0m0s",
		"collapse_key": "order-4711",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("job body (-want +got):\n%s", diff)
	}
}

func TestSendSilentMinimal(t *testing.T) {
	t.Setenv("HUSH_API_TOKEN", "")
	api := startFakeAPI(t, http.StatusAccepted, `{"id":"generated-1"}`)
	stdout, stderr, code := runCmd(t, "send", "--user", "u-1", "--fcm", "tok", "--silent", "--data", "sync=1", "--server", api.srv.URL)
	if code != 0 || stdout != "generated-1\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	req := api.only(t)
	if req.Auth != "" {
		t.Errorf("Authorization = %q without HUSH_API_TOKEN, want none", req.Auth)
	}
	var got map[string]any
	if err := json.Unmarshal(req.Body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"recipients": []any{map[string]any{"user_id": "u-1", "devices": []any{map[string]any{"platform": "fcm", "token": "tok"}}}},
		"data":       map[string]any{"sync": "1"},
		"silent":     true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("job body (-want +got):\n%s", diff)
	}
}

func TestSendFileAsIs(t *testing.T) {
	t.Setenv("HUSH_API_TOKEN", "")
	job := `{"recipients":[{"user_id":"u-1","devices":[{"platform":"fcm","token":"t"}]}],"alert":{"title":"hi"}}`
	file := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(file, []byte(job), 0o600); err != nil {
		t.Fatal(err)
	}
	api := startFakeAPI(t, http.StatusOK, `{"id":"j-1","duplicate":true}`)
	stdout, stderr, code := runCmd(t, "send", "-f", file, "--server", api.srv.URL)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if stdout != "j-1\n" || !strings.Contains(stderr, "duplicate") {
		t.Errorf("stdout %q stderr %q; want the id and a duplicate note", stdout, stderr)
	}
	if got := string(api.only(t).Body); got != job {
		t.Errorf("body = %s, want the file unchanged: %s", got, job)
	}
}

func TestSendErrorsAreReadable(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   []string
	}{
		{"field errors", http.StatusBadRequest,
			`{"error":{"message":"invalid job","problems":[{"field":"recipients[0].devices[0].token","message":"not hex"},{"field":"alert","message":"required unless silent"}]}}`,
			[]string{"rejected the request (400): invalid job", "\n  recipients[0].devices[0].token: not hex", "\n  alert: required unless silent"}},
		{"malformed", http.StatusBadRequest, `{"error":{"message":"malformed job JSON at offset 3"}}`,
			[]string{"rejected the request (400): malformed job JSON at offset 3"}},
		{"unauthorized", http.StatusUnauthorized, `{"error":{"message":"missing or wrong bearer token"}}`, []string{"HUSH_API_TOKEN", "401", "missing or wrong bearer token"}},
		{"too large", http.StatusRequestEntityTooLarge, `{"error":{"message":"request body larger than 8388608 bytes"}}`, []string{"too large", "8388608"}},
		{"unavailable", http.StatusServiceUnavailable, `{"error":{"message":"could not accept the job, try again"}}`, []string{"503 Service Unavailable: could not accept the job, try again"}},
		{"server error text", http.StatusInternalServerError, `redis down`, []string{"500", "redis down"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := startFakeAPI(t, tt.status, tt.body)
			stdout, stderr, code := runCmd(t, "send", "--user", "u", "--fcm", "t", "--server", api.srv.URL)
			if code != 1 || stdout != "" {
				t.Errorf("exit %d stdout %q, want 1 and nothing on stdout", code, stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestSendServerDown(t *testing.T) {
	api := startFakeAPI(t, http.StatusAccepted, `{}`)
	url := api.srv.URL
	api.srv.Close()
	_, stderr, code := runCmd(t, "send", "--user", "u", "--fcm", "t", "--server", url)
	if code != 1 || !strings.Contains(stderr, "is hush serve running there?") {
		t.Errorf("exit %d stderr %q", code, stderr)
	}
}

// TestSendAndThrottleAgainstTheRealAPI runs hush send and hush throttle
// against the real HTTP API on a real Redis (not running its tasks).
func TestSendAndThrottleAgainstTheRealAPI(t *testing.T) {
	policy, err := throttle.ParsePolicy("5/1m", "2s")
	if err != nil {
		t.Fatal(err)
	}
	url, lim := realAPI(t, policy, "s3cret")
	tok := testkit.APNsToken("cli")

	send := []string{"send", "--server", url, "--id", "cli-1", "--user", "u-cli", "--apns", tok, "--title", "hi"}
	if stdout, stderr, code := runCmd(t, send...); code != 0 || stdout != "cli-1\n" || stderr != "" {
		t.Fatalf("send: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if stdout, stderr, code := runCmd(t, send...); code != 0 || stdout != "cli-1\n" || !strings.Contains(stderr, "duplicate: job cli-1 was already accepted") {
		t.Errorf("send again: exit %d stdout %q stderr %q, want the id and the duplicate note", code, stdout, stderr)
	}
	_, stderr, code := runCmd(t, "send", "--server", url, "--user", "u-cli", "--apns", "zz", "--badge", "-1")
	want := "hush: send: the server rejected the request (400): invalid job\n" +
		"  recipients[0].devices[0].token: not hex (invalid character at position 0)\n" +
		"  alert: a job that is not silent needs alert.title or alert.body\n" +
		"  alert.badge: must be 0 or more, got -1\n"
	if diff := cmp.Diff(want, stderr); code != 1 || diff != "" {
		t.Errorf("invalid job: exit %d, stderr (-want +got):\n%s", code, diff)
	}

	if _, err := lim.ReserveBatch(t.Context(), []throttle.Request{{User: "u-cli", Member: "cli-1/0"}}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCmd(t, "throttle", "status", "u-cli", "--server", url)
	if code != 0 || !strings.Contains(stdout, "user u-cli") || !strings.Contains(stdout, "5/1m     1 sent  0 booked  4 more") || !strings.Contains(stdout, "cli-1/0") {
		t.Errorf("throttle status: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	stdout, _, code = runCmd(t, "throttle", "status", "u-cli", "--json", "--server", url)
	var st map[string]any
	if err := json.Unmarshal([]byte(stdout), &st); code != 0 || err != nil || st["user_id"] != "u-cli" || st["min_gap"] != "2s" {
		t.Errorf("throttle status --json: exit %d, %v, %s", code, err, stdout)
	}
	if stdout, stderr, code := runCmd(t, "throttle", "reset", "u-cli", "--server", url); code != 0 || !strings.HasPrefix(stdout, "reset: u-cli's") {
		t.Errorf("throttle reset: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if stdout, _, _ := runCmd(t, "throttle", "status", "u-cli", "--server", url); !strings.Contains(stdout, "recent sends: none") {
		t.Errorf("after reset: %s", stdout)
	}
}

func TestSendCategorySendAtTimezone(t *testing.T) {
	t.Setenv("HUSH_API_TOKEN", "")
	api := startFakeAPI(t, http.StatusAccepted, `{"id":"promo-1"}`)
	stdout, stderr, code := runCmd(t, "send", "--server", api.srv.URL, "--user", "u-42", "--fcm", "tok", "--title", "20% off",
		"--category", "marketing", "--send-at", "2026-11-22T08:00:00+01:00", "--timezone", "Europe/Berlin", "--ttl", "1h")
	if code != 0 || stdout != "promo-1\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal(api.only(t).Body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"recipients": []any{map[string]any{"user_id": "u-42", "timezone": "Europe/Berlin",
			"devices": []any{map[string]any{"platform": "fcm", "token": "tok"}}}},
		"alert":    map[string]any{"title": "20% off"},
		"category": "marketing",
		"send_at":  "2026-11-22T08:00:00+01:00",
		"ttl":      "1h0m0s",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("job body (-want +got):\n%s", diff)
	}
}

// TestSendWhen: --send-at is taken as written, --send-in counts from now
// up to a whole second, and the two exclude each other.
func TestSendWhen(t *testing.T) {
	now := time.Date(2026, 11, 21, 18, 0, 0, 300_000_000, time.UTC)
	at := time.Date(2026, 11, 22, 8, 0, 0, 0, time.FixedZone("", 3600))
	tests := []struct {
		name    string
		f       sendFlags
		want    *time.Time
		wantErr string
	}{
		{"neither", sendFlags{}, nil, ""},
		{"send-at", sendFlags{sendAt: &at}, &at, ""},
		{"send-in", sendFlags{sendIn: 10 * time.Minute}, new(time.Date(2026, 11, 21, 18, 10, 1, 0, time.UTC)), ""},
		{"send-in on a second", sendFlags{sendIn: 700 * time.Millisecond}, new(time.Date(2026, 11, 21, 18, 0, 1, 0, time.UTC)), ""},
		{"both", sendFlags{sendAt: &at, sendIn: time.Minute}, nil, "--send-at or --send-in, not both"},
		{"negative", sendFlags{sendIn: -time.Minute}, nil, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f.when(now)
			if tt.wantErr != "" {
				if _, ok := errors.AsType[*usageError](err); !ok || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want a usage error saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("send_at (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSendUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad send-at", []string{"--send-at", "tomorrow 8am"}, "not an RFC 3339 time"},
		{"send-at and send-in", []string{"--send-at", "2026-11-22T08:00:00Z", "--send-in", "1h"}, "--send-at or --send-in, not both"},
		{"bad send-in", []string{"--send-in", "soon"}, `invalid value "soon" for flag -send-in`},
		{"file and category", []string{"-f", "job.json", "--category", "marketing"}, "-f cannot be combined with --category"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := startFakeAPI(t, http.StatusAccepted, `{"id":"x"}`)
			args := append([]string{"send", "--server", api.srv.URL, "--user", "u", "--fcm", "t"}, tt.args...)
			_, stderr, code := runCmd(t, args...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
			if n := len(api.requests()); n != 0 {
				t.Errorf("the API got %d requests after a usage error, want none", n)
			}
		})
	}
}
