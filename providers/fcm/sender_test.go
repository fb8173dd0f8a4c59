package fcm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/fake"
)

func intPtr(n int) *int { return &n }

func TestSendMessageJSON(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		push providers.Push
		want string // the request body FCM receives
	}{
		{
			name: "urgent alert with expiry",
			push: providers.Push{
				ID: "job-1/u-42/1", Platform: payload.FCM, Token: "fcm-token-1",
				Expiry: now.Add(90*time.Minute + 500*time.Millisecond),
				Content: &payload.Content{
					Alert:       &payload.Alert{Title: "Shipped", Body: "Order 4711", Sound: "default", Badge: intPtr(3)},
					Data:        map[string]string{"order": "4711"},
					Priority:    payload.PriorityHigh,
					CollapseKey: "order-4711",
				},
			},
			want: `{"message":{
				"token":"fcm-token-1",
				"data":{"order":"4711"},
				"notification":{"title":"Shipped","body":"Order 4711"},
				"android":{"ttl":"5400s","collapse_key":"order-4711","priority":"high","notification":{"sound":"default"}},
				"apns":{
					"headers":{"apns-collapse-id":"order-4711","apns-expiration":"1893558600","apns-priority":"10","apns-push-type":"alert"},
					"payload":{"aps":{"alert":{"title":"Shipped","body":"Order 4711"},"badge":3,"sound":"default"}}
				}}}`,
		},
		{
			name: "silent, no expiry",
			push: providers.Push{
				ID: "job-2/u-42/1", Platform: payload.FCM, Token: "fcm-token-2",
				Content: &payload.Content{Silent: true, Data: map[string]string{"sync": "inbox"}},
			},
			want: `{"message":{
				"token":"fcm-token-2",
				"data":{"sync":"inbox"},
				"android":{"priority":"normal"},
				"apns":{
					"headers":{"apns-priority":"5","apns-push-type":"background"},
					"payload":{"aps":{"content-available":1}}
				}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, s := startFake(t)
			s.now = func() time.Time { return now }
			got := s.Send(context.Background(), tt.push)
			if diff := cmp.Diff(providers.Result{Outcome: providers.Delivered, StatusCode: 200}, got); diff != "" {
				t.Fatalf("Send (-want +got):\n%s", diff)
			}
			reqs := f.Requests()
			if len(reqs) != 1 {
				t.Fatalf("fake received %d sends, want 1", len(reqs))
			}
			if want := "/v1/projects/" + project + "/messages:send"; reqs[0].Path != want {
				t.Errorf("path = %q, want %q", reqs[0].Path, want)
			}
			if diff := cmp.Diff(decodeJSON(t, tt.want), decodeJSON(t, string(reqs[0].Body))); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

// TestOAuthFlow checks the sender fetches one access token from the service
// account's token_uri and reuses it.
func TestOAuthFlow(t *testing.T) {
	f, s := startFake(t)
	for range 3 {
		if r := s.Send(context.Background(), alertPush("tok")); r.Outcome != providers.Delivered {
			t.Fatalf("Send: %+v", r)
		}
	}
	if n := f.TokenRequests(); n != 1 {
		t.Errorf("token endpoint issued %d tokens, want 1", n)
	}
	for _, r := range f.Requests() {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ya29.fake-") {
			t.Errorf("Authorization = %q, want the fake's access token", r.Header.Get("Authorization"))
		}
	}
	if accepted, rejected := f.Counts(); accepted != 3 || rejected != 0 {
		t.Errorf("accepted, rejected = %d, %d; want 3, 0", accepted, rejected)
	}
}

// TestWarm checks Warm fetches the access token once, ahead of the first
// Send, and reports a rejected key as a credential failure.
func TestWarm(t *testing.T) {
	t.Run("fetches once", func(t *testing.T) {
		f, s := startFake(t)
		if r := s.Warm(); r.Outcome != providers.Delivered || r.Err != nil {
			t.Fatalf("Warm: %+v", r)
		}
		if n := f.TokenRequests(); n != 1 {
			t.Fatalf("after Warm the token endpoint issued %d tokens, want 1", n)
		}
		if r := s.Send(context.Background(), alertPush("tok")); r.Outcome != providers.Delivered {
			t.Fatalf("Send: %+v", r)
		}
		if n := f.TokenRequests(); n != 1 {
			t.Errorf("after Warm and Send the token endpoint issued %d tokens, want 1 (cached)", n)
		}
	})
	t.Run("key rejected", func(t *testing.T) {
		f, s := startFake(t)
		f.RejectTokens(true)
		got := s.Warm()
		want := providers.Result{Outcome: providers.Permanent, Reason: "oauth: invalid_grant", StatusCode: 400, Credential: true}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(providers.Result{}, "Err")); diff != "" {
			t.Errorf("Warm (-want +got):\n%s", diff)
		}
		if got.Err == nil {
			t.Error("Err is nil")
		}
	})
}

func TestTokenEndpointFailures(t *testing.T) {
	t.Run("key rejected", func(t *testing.T) {
		f, s := startFake(t)
		f.RejectTokens(true)
		got := s.Send(context.Background(), alertPush("tok"))
		want := providers.Result{Outcome: providers.Permanent, Reason: "oauth: invalid_grant", StatusCode: 400, Credential: true}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(providers.Result{}, "Err")); diff != "" {
			t.Errorf("Send (-want +got):\n%s", diff)
		}
		if got.Err == nil {
			t.Error("Err is nil")
		}
		if accepted, rejected := f.Counts(); accepted+rejected != 0 {
			t.Errorf("fake saw %d sends, want none", accepted+rejected)
		}
	})
	t.Run("token endpoint down", func(t *testing.T) {
		f, s := startFake(t)
		f.Close()
		got := s.Send(context.Background(), alertPush("tok"))
		want := providers.Result{Outcome: providers.Transient, Reason: "oauth: network"}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(providers.Result{}, "Err")); diff != "" {
			t.Errorf("Send (-want +got):\n%s", diff)
		}
	})
}

// TestSendMakesOneAttempt: the SDK would retry a 503 or a network error
// up to four times over seconds, after hush's slot check; Send makes
// exactly one HTTP attempt and classifies its real answer at once.
func TestSendMakesOneAttempt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer fake.Answer
		want   providers.Result
	}{
		{"503", fake.Status(503), providers.Result{Outcome: providers.Transient, Reason: "UNAVAILABLE", StatusCode: 503}},
		{"503 with Retry-After", fake.Status(503).WithRetryAfter(7 * time.Second), providers.Result{Outcome: providers.Transient, Reason: "UNAVAILABLE", StatusCode: 503, RetryAfter: 7 * time.Second}},
		{"500", fake.Status(500), providers.Result{Outcome: providers.Transient, Reason: "INTERNAL", StatusCode: 500}},
		{"429", fake.TooMany(3 * time.Second), providers.Result{Outcome: providers.Throttled, Reason: "QUOTA_EXCEEDED", StatusCode: 429, RetryAfter: 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, s := startFake(t)
			f.Script("tok", tc.answer)
			start := time.Now()
			got := s.Send(t.Context(), alertPush("tok"))
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(providers.Result{}, "Err")); diff != "" {
				t.Errorf("Send (-want +got):\n%s", diff)
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("the fake saw %d requests, want exactly 1 (in %s)", n, time.Since(start))
			}
		})
	}
}

// TestSendNetworkErrorOneAttempt: a connection closed mid-request is one
// attempt, reported as a network failure (the SDK would retry it at once).
func TestSendNetworkErrorOneAttempt(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "token") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"t","token_type":"Bearer","expires_in":3600}`))
			return
		}
		hits.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	sa, err := fake.WriteServiceAccount(t.TempDir(), srv.URL+"/token", "p")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(t.Context(), Config{CredentialsFile: sa, Endpoint: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Send(t.Context(), alertPush("tok"))
	if got.Outcome != providers.Transient || got.Reason != "network" || got.StatusCode != 0 {
		t.Errorf("Send = %+v, want a transient network failure", got)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the server saw %d requests, want exactly 1", n)
	}
}

// TestSendByInThePast: a push that would leave after Push.SendBy is not
// sent at all, and says so with providers.ErrNotSent.
func TestSendByInThePast(t *testing.T) {
	f, s := startFake(t)
	p := alertPush("late")
	p.SendBy = time.Now().Add(-time.Millisecond)
	got := s.Send(t.Context(), p)
	if !errors.Is(got.Err, providers.ErrNotSent) || got.Outcome != providers.Transient {
		t.Errorf("Send = %+v, want Transient wrapping ErrNotSent", got)
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("the fake saw %d requests, want none", n)
	}
	p.SendBy = time.Now().Add(time.Minute)
	if got := s.Send(t.Context(), p); got.Outcome != providers.Delivered {
		t.Errorf("Send with SendBy ahead = %+v, want delivered", got)
	}
}

func TestNewConfigErrors(t *testing.T) {
	dir := t.TempDir()
	good, err := fake.WriteServiceAccount(dir, "http://127.0.0.1:1/token", "p")
	if err != nil {
		t.Fatal(err)
	}
	noProject := filepath.Join(dir, "noproject.json")
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(noProject, []byte(strings.Replace(string(data), `"project_id": "p"`, `"project_id": ""`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(dir, "not.json")
	if err := os.WriteFile(notJSON, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     Config
		wantKey string
	}{
		{"no credentials", Config{}, "HUSH_FCM_CREDENTIALS_FILE"},
		{"missing file", Config{CredentialsFile: filepath.Join(dir, "nope.json")}, "HUSH_FCM_CREDENTIALS_FILE"},
		{"not JSON", Config{CredentialsFile: notJSON}, "HUSH_FCM_CREDENTIALS_FILE"},
		{"no project", Config{CredentialsFile: noProject}, "HUSH_FCM_PROJECT_ID"},
		{"bad endpoint", Config{CredentialsFile: good, Endpoint: "ftp://x"}, "HUSH_FCM_ENDPOINT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(context.Background(), tt.cfg)
			if err == nil {
				t.Fatalf("New succeeded, want an error naming %s", tt.wantKey)
			}
			if !strings.Contains(err.Error(), tt.wantKey) {
				t.Errorf("New error %q does not name %s", err, tt.wantKey)
			}
		})
	}
}

// TestProjectFromTheCredentials: a sender without HUSH_FCM_PROJECT_ID
// names the credentials file's project (what serve's "FCM sender ready"
// line shows); an explicit one wins.
func TestProjectFromTheCredentials(t *testing.T) {
	sa, err := fake.WriteServiceAccount(t.TempDir(), "http://127.0.0.1:1/token", "from-file")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, project, want string }{
		{"from the file", "", "from-file"},
		{"configured", "configured", "configured"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(t.Context(), Config{CredentialsFile: sa, ProjectID: tt.project})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Project(); got != tt.want {
				t.Errorf("Project() = %q, want %q", got, tt.want)
			}
		})
	}
}
