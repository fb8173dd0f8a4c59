package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker"
)

// prefsAnswer sends one request and decodes a 200 answer's preferences;
// it fails the test on another status.
func prefsAnswer(t *testing.T, e *env, method, path, body string) wire.UserPreferences {
	t.Helper()
	resp, b := send(t, e.server(), method, path, "", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s, want 200", method, path, resp.StatusCode, b)
	}
	var p wire.UserPreferences
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s %s: %s: %v", method, path, b, err)
	}
	return p
}

// TestPreferencesRoundTrip: a PUT stores the preferences in the user's
// preferences hash and answers them as GET does (opt-outs sorted, once
// each); GET of a user with none answers the empty ones; DELETE deletes
// the hash and answers the empty ones.
func TestPreferencesRoundTrip(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	const path = "/v1/users/u-p/preferences"
	empty := wire.UserPreferences{UserID: "u-p", App: "default", OptOut: []string{}}
	if diff := cmp.Diff(empty, prefsAnswer(t, e, http.MethodGet, path, "")); diff != "" {
		t.Errorf("GET of a user with none (-want +got):\n%s", diff)
	}

	want := wire.UserPreferences{UserID: "u-p", App: "default", OptOut: []string{"marketing", "social"},
		QuietHours: "22:00-07:00", Timezone: "Europe/Paris"}
	put := prefsAnswer(t, e, http.MethodPut, path,
		`{"opt_out": ["social", "marketing", "social"], "quiet_hours": "22:00-07:00", "timezone": "Europe/Paris"}`)
	if diff := cmp.Diff(want, put); diff != "" {
		t.Errorf("PUT answer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, prefsAnswer(t, e, http.MethodGet, path, "")); diff != "" {
		t.Errorf("GET after PUT (-want +got):\n%s", diff)
	}
	key := throttle.DefaultPrefix + "{u-p}:p"
	h, err := e.rdb.HGetAll(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	wantHash := map[string]string{"o:marketing": "1", "o:social": "1", "quiet": "79200000 25200000", "zone": "Europe/Paris"}
	if diff := cmp.Diff(wantHash, h); diff != "" {
		t.Errorf("hash %s (-want +got):\n%s", key, diff)
	}

	// A PUT replaces the whole: the fields left out are none.
	want = wire.UserPreferences{UserID: "u-p", App: "default", OptOut: []string{"marketing"}}
	if diff := cmp.Diff(want, prefsAnswer(t, e, http.MethodPut, path, `{"opt_out": ["marketing"]}`)); diff != "" {
		t.Errorf("second PUT (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, prefsAnswer(t, e, http.MethodGet, path+"?app=default", "")); diff != "" {
		t.Errorf("GET after the second PUT (-want +got):\n%s", diff)
	}

	if diff := cmp.Diff(empty, prefsAnswer(t, e, http.MethodDelete, path, "")); diff != "" {
		t.Errorf("DELETE answer (-want +got):\n%s", diff)
	}
	if n, err := e.rdb.Exists(t.Context(), key).Result(); err != nil || n != 0 {
		t.Errorf("after DELETE, %s exists (%d, %v), want it gone", key, n, err)
	}
	if diff := cmp.Diff(empty, prefsAnswer(t, e, http.MethodGet, path, "")); diff != "" {
		t.Errorf("GET after DELETE (-want +got):\n%s", diff)
	}
	// {} deletes them too.
	prefsAnswer(t, e, http.MethodPut, path, `{"timezone": "Asia/Tokyo"}`)
	if diff := cmp.Diff(empty, prefsAnswer(t, e, http.MethodPut, path, `{}`)); diff != "" {
		t.Errorf("PUT {} (-want +got):\n%s", diff)
	}
}

// TestPreferencesBadFields: every bad field answers 400 naming it by its
// JSON name, in the message and in problems, and stores nothing.
func TestPreferencesBadFields(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	srv := e.server()
	tooMany := make([]string, throttle.MaxOptOuts+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf(`"c%d"`, i)
	}
	tests := []struct {
		name, body string
		fields     []string // the problems' fields, in order
	}{
		{"opt-out not a category name", `{"opt_out": ["Marketing Mails"]}`, []string{"opt_out"}},
		{"an empty opt-out", `{"opt_out": [""]}`, []string{"opt_out"}},
		{"too many opt-outs", `{"opt_out": [` + strings.Join(tooMany, ",") + `]}`, []string{"opt_out"}},
		{"opt_out a string", `{"opt_out": "marketing"}`, []string{"opt_out"}},
		{"opt_out of numbers", `{"opt_out": [1]}`, []string{"opt_out"}},
		{"opt_out null", `{"opt_out": null}`, []string{"opt_out"}},
		{"quiet hours not HH:MM", `{"quiet_hours": "25:00-07:00"}`, []string{"quiet_hours"}},
		{"quiet hours without an end", `{"quiet_hours": "22:00"}`, []string{"quiet_hours"}},
		{"quiet hours a number", `{"quiet_hours": 22}`, []string{"quiet_hours"}},
		{"unknown zone", `{"timezone": "Mars/Olympus"}`, []string{"timezone"}},
		{"the server's own zone", `{"timezone": "Local"}`, []string{"timezone"}},
		{"unknown field", `{"opt_out": ["marketing"], "colour": "red"}`, []string{"colour"}},
		{"a field spelt in another case", `{"Opt_Out": ["marketing"]}`, []string{"Opt_Out"}},
		{"a field given twice", `{"timezone": "UTC", "timezone": "Europe/Paris"}`, []string{"timezone"}},
		{"quiet hours and zone both bad", `{"quiet_hours": "x", "timezone": "Mars/Olympus"}`, []string{"quiet_hours", "timezone"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := send(t, srv, http.MethodPut, "/v1/users/u-bad/preferences", "", tc.body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("%d %s, want 400", resp.StatusCode, b)
			}
			var env wire.ErrorBody
			if err := json.Unmarshal(b, &env); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range env.Error.Problems {
				got = append(got, p.Field)
			}
			if diff := cmp.Diff(tc.fields, got); diff != "" {
				t.Errorf("problem fields (-want +got):\n%s\nbody: %s", diff, b)
			}
			if want := "invalid preferences (" + strings.Join(tc.fields, ", ") + ")"; env.Error.Message != want {
				t.Errorf("message %q, want %q", env.Error.Message, want)
			}
		})
	}
	t.Run("not one JSON object", func(t *testing.T) {
		for _, body := range []string{``, `[]`, `"x"`, `{"opt_out": [`, `{} {}`, `{"timezone": "UTC"}x`} {
			resp, b := send(t, srv, http.MethodPut, "/v1/users/u-bad/preferences", "", body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "preferences") {
				t.Errorf("body %q: %d %s, want 400 saying what the preferences are", body, resp.StatusCode, b)
			}
		}
	})
	if n, err := e.rdb.Exists(t.Context(), throttle.DefaultPrefix+"{u-bad}:p").Result(); err != nil || n != 0 {
		t.Errorf("a refused PUT stored preferences (%d, %v)", n, err)
	}
}

// TestPreferencesBodyLimit: a body past the API's limit answers 413 and
// stores nothing.
func TestPreferencesBodyLimit(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true, maxBody: 512})
	body := repeated(2048, `{"opt_out": [`, `"marketing"`, `]}`)
	resp, b := send(t, e.server(), http.MethodPut, "/v1/users/u-big/preferences", "", body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "larger than 512 bytes") {
		t.Errorf("%d %s, want 413 naming the limit", resp.StatusCode, b)
	}
	if n, err := e.rdb.Exists(t.Context(), throttle.DefaultPrefix+"{u-big}:p").Result(); err != nil || n != 0 {
		t.Errorf("an oversized PUT stored preferences (%d, %v)", n, err)
	}
}

// TestPreferencesApps: every user route answers 404 for an app that is
// not configured, 400 for none named among several apps without a
// default, and keeps each app's preferences apart.
func TestPreferencesApps(t *testing.T) {
	two := newTwoApps(t)
	routes := []struct{ method, path, body string }{
		{http.MethodPut, "/v1/users/u-a/preferences", `{"opt_out": ["marketing"]}`},
		{http.MethodGet, "/v1/users/u-a/preferences", ""},
		{http.MethodDelete, "/v1/users/u-a/preferences", ""},
		{http.MethodDelete, "/v1/users/u-a", ""},
	}
	for _, rt := range routes {
		resp, b := send(t, two.srv, rt.method, rt.path+"?app=nope", allToken, rt.body)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `app: unknown app \"nope\" (configured: courier, shop)`) {
			t.Errorf("%s %s?app=nope: %d %s, want 404 naming the configured apps", rt.method, rt.path, resp.StatusCode, b)
		}
		resp, b = send(t, two.srv, rt.method, rt.path, allToken, rt.body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "app: required") {
			t.Errorf("%s %s without app: %d %s, want 400 app: required", rt.method, rt.path, resp.StatusCode, b)
		}
		resp, b = send(t, two.srv, rt.method, rt.path+"?app=courier", shopToken, rt.body)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s?app=courier with the shop's token: %d %s, want 403", rt.method, rt.path, resp.StatusCode, b)
		}
	}

	resp, b := send(t, two.srv, http.MethodPut, "/v1/users/u-a/preferences?app=shop", shopToken, `{"opt_out": ["marketing"]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT for shop: %d %s", resp.StatusCode, b)
	}
	for app, want := range map[string][]string{"shop": {"marketing"}, "courier": {}} {
		resp, b := send(t, two.srv, http.MethodGet, "/v1/users/u-a/preferences?app="+app, allToken, "")
		var p wire.UserPreferences
		if err := json.Unmarshal(b, &p); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET for %s: %d %s", app, resp.StatusCode, b)
		}
		if p.App != app || !slices.Equal(p.OptOut, want) {
			t.Errorf("GET for %s: %s, want app %s opting out of %v", app, b, app, want)
		}
	}
}

// TestDeleteUser: DELETE /v1/users/{id} removes every key the user has in
// the app's limiter (preferences, sets, collapse records) and no other
// user's; deleting again answers the same.
func TestDeleteUser(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	ctx := t.Context()
	for _, user := range []string{"u-d", "u-keep"} {
		if err := e.lim.PutPreferences(ctx, user, throttle.Preferences{OptOut: []string{"marketing"}}); err != nil {
			t.Fatal(err)
		}
		reqs := []throttle.Request{{User: user, Member: "j-1/0"}, {User: user, Member: "j-2/0", CollapseKey: "score"}}
		if _, err := e.lim.ReserveBatch(ctx, reqs); err != nil {
			t.Fatal(err)
		}
	}
	keysOf := func(user string) []string {
		t.Helper()
		keys, err := e.rdb.Keys(ctx, throttle.DefaultPrefix+"{"+user+"}*").Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		return keys
	}
	before := keysOf("u-d")
	for _, suffix := range []string{"", ":k", ":p"} {
		if !slices.Contains(before, throttle.DefaultPrefix+"{u-d}"+suffix) {
			t.Fatalf("keys before the deletion %v lack %q: the test does not set up what it deletes", before, suffix)
		}
	}
	kept := keysOf("u-keep")
	srv := e.server()
	for range 2 {
		resp, b := send(t, srv, http.MethodDelete, "/v1/users/u-d", "", "")
		var got wire.UserDeleted
		if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("DELETE: %d %s", resp.StatusCode, b)
		}
		if diff := cmp.Diff(wire.UserDeleted{Status: "deleted", UserID: "u-d", App: "default"}, got); diff != "" {
			t.Errorf("answer (-want +got):\n%s", diff)
		}
		if left := keysOf("u-d"); len(left) > 0 {
			t.Errorf("keys left after the deletion: %v (before: %v)", left, before)
		}
	}
	if diff := cmp.Diff(kept, keysOf("u-keep")); diff != "" {
		t.Errorf("another user's keys (-before +after):\n%s", diff)
	}
}

// TestPreferencesNotSupported: a limiter that keeps no preferences answers
// 501 on every user route.
func TestPreferencesNotSupported(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	srv := serve(t, limiterOnlyWorker(t, e), e.opts)
	for _, rt := range []struct{ method, path, body string }{
		{http.MethodPut, "/v1/users/u/preferences", `{}`},
		{http.MethodGet, "/v1/users/u/preferences", ""},
		{http.MethodDelete, "/v1/users/u/preferences", ""},
		{http.MethodDelete, "/v1/users/u", ""},
	} {
		resp, b := send(t, srv, rt.method, rt.path, "", rt.body)
		if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(b), "not supported") {
			t.Errorf("%s %s: %d %s, want 501 not supported", rt.method, rt.path, resp.StatusCode, b)
		}
	}
}

// limiterOnlyWorker is a Worker (not running) on e's Redis whose limiter
// has Limiter's methods alone.
func limiterOnlyWorker(t *testing.T, e *env) *worker.Worker {
	t.Helper()
	w, err := worker.New(e.rdb, worker.Options{Limiter: limiterOnly{e.lim}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}
