package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/wire"
)

type apiAnswer struct {
	Status int
	Body   map[string]any
}

// call makes one request (send) and decodes its JSON answer.
func call(t *testing.T, srv *httptest.Server, method, path, token, body string) apiAnswer {
	t.Helper()
	resp, b := send(t, srv, method, path, token, body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s answered %d with non-JSON %q", method, path, resp.StatusCode, b)
	}
	return apiAnswer{Status: resp.StatusCode, Body: m}
}

// fields returns the fields of an error answer's problems.
func fields(a apiAnswer) []string {
	env, _ := a.Body["error"].(map[string]any)
	problems, _ := env["problems"].([]any)
	var out []string
	for _, e := range problems {
		m, _ := e.(map[string]any)
		f, _ := m["field"].(string)
		out = append(out, f)
	}
	return out
}

func TestAPISubmit(t *testing.T) {
	const token = "s3cret"
	e := newEnv(t, envOptions{noRun: true, token: token, maxBody: 2048})
	srv := e.server()
	tok := apnsToken("api")
	good := `{"id":"api-1","recipients":[{"user_id":"u-1","devices":[{"platform":"apns","token":"` + tok + `"}]}],"alert":{"title":"hi"}}`

	tests := []struct {
		name       string
		token      string
		body       string
		wantStatus int
		wantFields []string // for 400
		wantBody   map[string]any
		notStored  string // a job id the refusal left unknown
	}{
		{name: "accepted", token: token, body: good, wantStatus: http.StatusAccepted, wantBody: map[string]any{"id": "api-1"}},
		{name: "duplicate", token: token, body: good, wantStatus: http.StatusOK, wantBody: map[string]any{"id": "api-1", "duplicate": true}},
		{name: "wrong token", token: "nope", body: good, wantStatus: http.StatusUnauthorized, wantBody: map[string]any{
			"error": map[string]any{"message": "missing or wrong bearer token"},
		}},
		{name: "no token", body: good, wantStatus: http.StatusUnauthorized},
		{name: "malformed JSON", token: token, body: `{"recipients": [`, wantStatus: http.StatusBadRequest, wantBody: map[string]any{
			"error": map[string]any{"message": "malformed job JSON: unexpected end of input at offset 16"},
		}},
		{name: "too large", token: token, body: `{"data":{"x":"` + strings.Repeat("a", 4096) + `"}}`, wantStatus: http.StatusRequestEntityTooLarge, wantBody: map[string]any{
			"error": map[string]any{"message": "request body larger than 2048 bytes"},
		}},
		{name: "missing recipients", token: token, body: `{"alert":{"title":"hi"}}`, wantStatus: http.StatusBadRequest, wantFields: []string{"recipients"}},
		{
			name: "unknown platform and bad token", token: token,
			body:       `{"recipients":[{"user_id":"u-1","devices":[{"platform":"pager","token":"x"},{"platform":"apns","token":"zz"}]}],"alert":{"title":"hi"}}`,
			wantStatus: http.StatusBadRequest,
			wantFields: []string{"recipients[0].devices[0].platform", "recipients[0].devices[1].token"},
		},
		// A caller's accepted_at would shrink the records' TTL, let a past
		// deadline through or stretch one: hush alone sets it.
		{
			name: "accepted_at", token: token,
			body:       `{"id":"stamped","recipients":[{"user_id":"u","devices":[{"platform":"apns","token":"` + tok + `"}]}],"alert":{"title":"t"},"ttl":"1h","accepted_at":"2020-01-01T00:00:00Z"}`,
			wantStatus: http.StatusBadRequest,
			wantFields: []string{"accepted_at"},
			notStored:  "stamped",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := call(t, srv, http.MethodPost, "/v1/notifications", tt.token, tt.body)
			if got.Status != tt.wantStatus {
				t.Fatalf("status %d (%v), want %d", got.Status, got.Body, tt.wantStatus)
			}
			if tt.wantBody != nil {
				if diff := cmp.Diff(tt.wantBody, got.Body); diff != "" {
					t.Errorf("body (-want +got):\n%s", diff)
				}
			}
			if tt.wantFields != nil {
				if diff := cmp.Diff(tt.wantFields, fields(got)); diff != "" {
					t.Errorf("error fields (-want +got):\n%s\nbody: %v", diff, got.Body)
				}
			}
			if tt.notStored != "" {
				if st := call(t, srv, http.MethodGet, "/v1/notifications/"+tt.notStored, token, ""); st.Status != http.StatusNotFound {
					t.Errorf("the refused job %s: status %d (%v), want 404", tt.notStored, st.Status, st.Body)
				}
			}
		})
	}
}

func TestAPIStatus(t *testing.T) {
	e := newEnv(t, envOptions{limits: "5/1m", gap: "1s"})
	srv := e.server()
	id := e.submit(alertJob("status-1", "s", apnsRecipient("u-7", apnsToken("s1")), apnsRecipient("u-8", apnsToken("s2"))))
	e.waitDone(id, 10*time.Second)

	got := call(t, srv, http.MethodGet, "/v1/notifications/"+id, "", "")
	if got.Status != http.StatusOK || got.Body["state"] != wire.StateDone {
		t.Fatalf("GET job: %d %v, want 200 done", got.Status, got.Body)
	}
	want := map[string]any{"delivered": 2.0, "expired": 0.0, "token_invalid": 0.0, "failed": 0.0, "throttle_full": 0.0, "collapsed": 0.0, "cancelled": 0.0, "opted_out": 0.0, "pending": 0.0}
	if diff := cmp.Diff(want, got.Body["counts"]); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if got := call(t, srv, http.MethodGet, "/v1/notifications/nope", "", ""); got.Status != http.StatusNotFound {
		t.Errorf("unknown job: %d, want 404", got.Status)
	}

	th := call(t, srv, http.MethodGet, "/v1/users/u-7/throttle", "", "")
	entries, _ := th.Body["entries"].([]any)
	if th.Status != http.StatusOK || len(entries) != 1 || th.Body["min_gap"] != "1s" {
		t.Fatalf("GET throttle: %d %v, want one entry and the min gap", th.Status, th.Body)
	}
	wantRemaining := []any{map[string]any{"rule": "5/1m", "remaining": 4.0, "sent": 1.0, "booked": 0.0, "after_bookings": 4.0}}
	if diff := cmp.Diff(wantRemaining, th.Body["remaining"]); diff != "" {
		t.Errorf("remaining (-want +got):\n%s", diff)
	}
	if th.Body["timezone_from"] != "server_default" {
		t.Errorf("timezone_from %v without ?timezone=, want server_default", th.Body["timezone_from"])
	}
	if th := call(t, srv, http.MethodGet, "/v1/users/u-7/throttle?timezone=Europe/Berlin", "", ""); th.Body["timezone_from"] != "request" {
		t.Errorf("timezone_from %v with ?timezone=, want request", th.Body["timezone_from"])
	}
	if got := call(t, srv, http.MethodDelete, "/v1/users/u-7/throttle", "", ""); got.Status != http.StatusOK {
		t.Fatalf("DELETE throttle: %d %v", got.Status, got.Body)
	}
	th = call(t, srv, http.MethodGet, "/v1/users/u-7/throttle", "", "")
	if entries, _ := th.Body["entries"].([]any); len(entries) != 0 {
		t.Errorf("after reset: entries %v, want none", entries)
	}

	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200} {
		if got := call(t, srv, http.MethodGet, path, "", ""); got.Status != want {
			t.Errorf("%s: %d %v, want %d", path, got.Status, got.Body, want)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	e := newEnv(t, envOptions{})
	srv := e.server()
	e.waitDone(e.submit(alertJob("m", "m", apnsRecipient("u-1", apnsToken("m")))), 10*time.Second)
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`hush_device_sends_total{app="default",outcome="delivered",platform="apns"} 1`,
		`hush_deliveries_total{app="default",state="delivered"} 1`,
		`hush_limiter_decisions_total{app="default",decision="allowed"} 1`,
		`hush_provider_latency_seconds_count{app="default",platform="apns"} 1`,
		`hush_queue_tasks{queue="normal",state="pending"} 0`,
		`hush_jobs_submitted_total{result="accepted"} 1`,
		`hush_dequeues_total{queue="normal",result="task"} 1`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestAPIWrongMethod: a known path asked with a method it does not serve
// answers 405 with Allow and the error envelope, before authentication; an
// unknown path answers 404.
func TestAPIWrongMethod(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	h := New(e.w, e.w.Client(), Options{Token: "s3cret"})
	tests := []struct {
		method, path string
		wantStatus   int
		wantAllow    string
		wantMessage  string
	}{
		{"DELETE", "/v1/notifications", 405, "POST", "method DELETE not allowed on /v1/notifications (allowed: POST)"},
		{"GET", "/v1/notifications", 405, "POST", "method GET not allowed on /v1/notifications (allowed: POST)"},
		{"POST", "/v1/notifications/j-1", 405, "GET, DELETE", "method POST not allowed on /v1/notifications/j-1 (allowed: GET, DELETE)"},
		{"PUT", "/v1/notifications/j-1", 405, "GET, DELETE", "method PUT not allowed on /v1/notifications/j-1 (allowed: GET, DELETE)"},
		{"PATCH", "/v1/notifications/j-1", 405, "GET, DELETE", "method PATCH not allowed on /v1/notifications/j-1 (allowed: GET, DELETE)"},
		{"PUT", "/v1/users/u-1/throttle", 405, "GET, DELETE", "method PUT not allowed on /v1/users/u-1/throttle (allowed: GET, DELETE)"},
		{"POST", "/healthz", 405, "GET", "method POST not allowed on /healthz (allowed: GET)"},
		{"HEAD", "/metrics", 405, "GET", ""},
		{"GET", "/v2/notifications", 404, "", "no such endpoint: GET /v2/notifications"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, httptest.NewRequest(tt.method, tt.path, nil))
			if rr.Code != tt.wantStatus || rr.Header().Get("Allow") != tt.wantAllow {
				t.Fatalf("%d Allow %q, want %d Allow %q", rr.Code, rr.Header().Get("Allow"), tt.wantStatus, tt.wantAllow)
			}
			if tt.method == http.MethodHead {
				return
			}
			if got := rr.Header().Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q, want application/json", got)
			}
			var got map[string]any
			if err := json.Unmarshal(rr.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"error": map[string]any{"message": tt.wantMessage}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}
