// Package testkit holds small helpers shared by the tests of several hush
// packages: waiting on a condition, picking fake provider requests, making
// device tokens and jobs. Only tests import it.
package testkit

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
)

// APNsTopic is the topic the tests' APNs senders use.
const APNsTopic = "com.example.hush"

// FCMProject is the project the tests' FCM senders use.
const FCMProject = "hush-test"

// Buffer collects output that is written and read concurrently (a
// process's output, a logger's) safely.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// WaitFor polls cond every 20 ms until it holds, failing the test after
// timeout with what was awaited.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RequestsFor returns the fake provider requests for one token.
func RequestsFor(reqs []fake.Request, token string) []fake.Request {
	var out []fake.Request
	for _, r := range reqs {
		if r.Token == token {
			out = append(out, r)
		}
	}
	return out
}

// APNsToken returns a valid-looking APNs token (64 hex digits) derived
// from s: distinct strings give distinct tokens in practice.
func APNsToken(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; b.Len() < 64; i++ {
		c := byte(0)
		if len(s) > 0 {
			c = s[i%len(s)]
		}
		b.WriteByte(hex[(int(c)+i)%16])
	}
	return b.String()
}

// FCMToken returns a valid-looking FCM registration token derived from s.
func FCMToken(s string) string { return "fcm-" + s + ":APA91b" + APNsToken(s)[:40] }

// QuietNowAhead returns quiet hours, counted from the current UTC minute,
// from hours+30m to hours+1h30m of wall-clock time: in a zone `hours`
// ahead of UTC all year (Asia/Tokyo: 9) they hold now, in UTC they do not
// for hours.
func QuietNowAhead(hours int) (from, to time.Duration) {
	const day = 24 * time.Hour
	now := time.Now().UTC()
	minute := now.Sub(now.Truncate(day)).Truncate(time.Minute)
	h := time.Duration(hours) * time.Hour
	return (minute + h - 30*time.Minute + day) % day, (minute + h + 30*time.Minute) % day
}

// AlertJob is a job with id (empty: the server makes one) for recipients,
// alerting title with the body "body of <title>".
func AlertJob(id, title string, recipients ...payload.Recipient) payload.Job {
	return payload.Job{
		ID:         id,
		Recipients: recipients,
		Content:    payload.Content{Alert: &payload.Alert{Title: title, Body: "body of " + title}},
	}
}

// APNsRecipient is user with an APNs device for each of tokens.
func APNsRecipient(user string, tokens ...string) payload.Recipient {
	r := payload.Recipient{UserID: user}
	for _, tok := range tokens {
		r.Devices = append(r.Devices, payload.Device{Platform: payload.APNs, Token: tok})
	}
	return r
}

// OnlyImports fails t unless the package in the working directory, with
// everything it imports transitively, needs nothing beyond the standard
// library and allowed (the package itself first): what a package whose
// doc.go promises backends a light dependency checks.
func OnlyImports(t *testing.T, allowed ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		if !slices.Contains(allowed, dep) {
			t.Errorf("%s depends on %s; it may import only the standard library and %v", allowed[0], dep, allowed[1:])
		}
	}
	if !slices.Contains(deps, allowed[0]) {
		t.Errorf("go list -deps did not list the package itself: %q", deps)
	}
}
