package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestEmptyAnswers: a 200 without the documented fields (a proxy's {},
// another service) is an error, not "already cancelled" or an empty status.
func TestEmptyAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"cancel", []string{"cancel", "j-1"}},
		{"throttle status", []string{"throttle", "status", "u-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := startFakeAPI(t, http.StatusOK, `{}`)
			stdout, stderr, code := runCmd(t, append(tc.args, "--server", api.srv.URL)...)
			if code != 1 || stdout != "" || !strings.Contains(stderr, "unexpected answer") {
				t.Errorf("answer {}: exit %d stdout %q stderr %q, want exit 1, nothing on stdout, an unexpected answer", code, stdout, stderr)
			}
		})
	}
}

// TestServerStringsArePrinted: control characters in what a server
// answers (ids, names, error messages) reach the terminal escaped.
func TestServerStringsArePrinted(t *testing.T) {
	const hostile = "\x1b]0;owned\x07\x1b[2J\u009b31m"
	const shown = `\x1b]0;owned\x07\x1b[2J\u009b31m`
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		body   string
	}{
		{"cancel", []string{"cancel", "j-1"}, http.StatusOK,
			`{"id":"` + jsonEscape(hostile) + `","state":"cancelled","queue":"normal","accepted_at":"2026-11-21T10:00:00Z","recipients":1,` +
				`"counts":{"delivered":0,"cancelled":1,"` + jsonEscape(hostile) + `":1},"deferrals":0,"cancelled":true}`},
		{"throttle status", []string{"throttle", "status", "u-1"}, http.StatusOK,
			`{"user_id":"` + jsonEscape(hostile) + `","now":"2026-11-21T22:40:10Z","next_allowed":"2026-11-21T22:40:10Z",` +
				`"remaining":[{"rule":"` + jsonEscape(hostile) + `","remaining":1}],"entries":[{"member":"` + jsonEscape(hostile) + `","at":"2026-11-21T22:40:09Z"}]}`},
		{"error message", []string{"cancel", "j-1"}, http.StatusServiceUnavailable, `{"error":{"message":"` + jsonEscape(hostile) + `"}}`},
		{"send", []string{"send", "--user", "u-1", "--fcm", "t-1"}, http.StatusAccepted, `{"id":"` + jsonEscape(hostile) + `"}`},
		{"send duplicate", []string{"send", "--user", "u-1", "--fcm", "t-1"}, http.StatusOK, `{"id":"` + jsonEscape(hostile) + `","duplicate":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := startFakeAPI(t, tc.status, tc.body)
			stdout, stderr, _ := runCmd(t, append(tc.args, "--server", api.srv.URL)...)
			out := stdout + stderr
			if strings.ContainsAny(out, "\x1b\x07\u009b") {
				t.Errorf("control characters reach the terminal: %q", out)
			}
			if !strings.Contains(out, shown) {
				t.Errorf("output %q does not show the string escaped as %s", out, shown)
			}
		})
	}
}

// jsonEscape writes s as the inside of a JSON string, invalid UTF-8
// included (encoding/json would replace it).
func jsonEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 || c == '"' || c == '\\':
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
