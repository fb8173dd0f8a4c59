package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/throttle"
)

// TestPreferencesPutRequest: put sends the flags as the preferences body,
// the opt-outs split at commas and the flag repeated, to the app named.
func TestPreferencesPutRequest(t *testing.T) {
	t.Setenv("HUSH_API_TOKEN", "tok")
	api := startFakeAPI(t, http.StatusOK, `{"user_id": "u 42", "app": "shop", "opt_out": ["marketing", "social"], "quiet_hours": "22:00-07:00", "timezone": "Europe/Paris"}`)
	stdout, stderr, code := runCmd(t, "preferences", "put", "u 42", "--server", api.srv.URL, "--app", "shop",
		"--opt-out", "social, marketing", "--opt-out", "news", "--quiet-hours", "22:00-07:00", "--timezone", "Europe/Paris")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	want := `user u 42  (app shop)
opted out of: marketing, social
quiet hours:  22:00-07:00
time zone:    Europe/Paris
`
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("rendering (-want +got):\n%s", diff)
	}
	req := api.only(t)
	if diff := cmp.Diff(recordedRequest{Method: "PUT", Path: "/v1/users/u%2042/preferences", Query: "app=shop", Auth: "Bearer tok", ContentType: "application/json",
		Body: []byte(`{"opt_out":["social","marketing","news"],"quiet_hours":"22:00-07:00","timezone":"Europe/Paris"}`)}, req); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

// TestPreferencesRealAPI: put, get, delete and user delete against the
// real API: what put stores get shows, delete leaves none, and user
// delete removes the user's keys.
func TestPreferencesRealAPI(t *testing.T) {
	url, lim, rdb := realAPIRedis(t, throttle.Policy{MinGap: time.Second}, "tok")
	run := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := runCmd(t, append(args, "--server", url)...)
		if code != 0 {
			t.Fatalf("hush %s: exit %d; stderr:\n%s", strings.Join(args, " "), code, stderr)
		}
		return stdout
	}
	if got := run("preferences", "get", "u-1"); got != "user u-1  (app default)\nno preferences\n" {
		t.Errorf("get of a user with none:\n%s", got)
	}
	run("preferences", "put", "u-1", "--opt-out", "marketing", "--timezone", "Asia/Tokyo")
	want := "user u-1  (app default)\nopted out of: marketing\nquiet hours:  none\ntime zone:    Asia/Tokyo\n"
	if got := run("preferences", "get", "u-1"); got != want {
		t.Errorf("get after put (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got := run("preferences", "get", "u-1", "--json"); !strings.Contains(got, `"opt_out": [`+"\n"+`    "marketing"`) {
		t.Errorf("get --json:\n%s", got)
	}
	if got := run("preferences", "delete", "u-1"); got != "deleted: u-1 has no preferences in app default\n" {
		t.Errorf("delete:\n%s", got)
	}
	if got := run("preferences", "get", "u-1"); got != "user u-1  (app default)\nno preferences\n" {
		t.Errorf("get after delete:\n%s", got)
	}

	run("preferences", "put", "u-1", "--opt-out", "marketing")
	if _, err := lim.ReserveBatch(t.Context(), []throttle.Request{{User: "u-1", Member: "j-1/0"}}); err != nil {
		t.Fatal(err)
	}
	if got := run("user", "delete", "u-1"); got != "deleted: every key hush kept for u-1 in app default is gone\n" {
		t.Errorf("user delete:\n%s", got)
	}
	if keys, err := rdb.Keys(t.Context(), throttle.DefaultPrefix+"{u-1}*").Result(); err != nil || len(keys) > 0 {
		t.Errorf("keys after user delete: %v, %v; want none", keys, err)
	}
}

func TestPreferencesErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status int
		body   string
		want   []string
		code   int
	}{
		{"bad field", []string{"preferences", "put", "u", "--quiet-hours", "25:00-07:00"}, http.StatusBadRequest,
			`{"error":{"message":"invalid preferences (quiet_hours)","problems":[{"field":"quiet_hours","message":"\"25:00-07:00\": start: \"25:00\" is not HH:MM (00:00 to 23:59)"}]}}`,
			[]string{"preferences put: the server rejected the request (400): invalid preferences (quiet_hours)", `  quiet_hours: "25:00-07:00": start:`}, 1},
		{"unknown app", []string{"user", "delete", "u", "--app", "nope"}, http.StatusNotFound, `{"error":{"message":"app: unknown app \"nope\" (configured: default)"}}`,
			[]string{`user delete: not found (404): app: unknown app "nope" (configured: default)`}, 1},
		{"put's flags on get", []string{"preferences", "get", "u", "--opt-out", "x"}, http.StatusOK, `{}`,
			[]string{"preferences get: --opt-out, --quiet-hours and --timezone are put's"}, 2},
		{"no user", []string{"user", "delete"}, http.StatusOK, `{}`, []string{"user delete: want exactly one USER, got 0 arguments"}, 2},
		{"unknown subcommand", []string{"preferences", "set", "u"}, http.StatusOK, `{}`, []string{`preferences: unknown subcommand "set"`}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := startFakeAPI(t, tc.status, tc.body)
			_, stderr, code := runCmd(t, append(tc.args, "--server", api.srv.URL)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
