package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker"
)

// addStreamEvent appends e to hush:events as the worker writes it and
// returns its cursor.
func addStreamEvent(t *testing.T, rdb *redis.Client, e wire.Event) string {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	id, err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: worker.EventsStream, Values: []any{"type", e.Type, "event", b}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestEvents: hush events prints the events through the real API, newest
// first, one a line with the token's ends only; the filters reach the
// server; --json prints the API's entries.
func TestEvents(t *testing.T) {
	url, _, rdb := realAPIRedis(t, throttle.Policy{MinGap: time.Second}, "tok")
	at := time.Date(2026, 11, 21, 10, 0, 3, 512e6, time.UTC)
	dead := testkit.APNsToken("dead")
	first := addStreamEvent(t, rdb, wire.Event{ID: "evt_1", Type: "token_invalid", Platform: "apns", Token: dead, UserID: "u-42", Reason: "Unregistered", Job: "order-1", App: "default", At: at})
	second := addStreamEvent(t, rdb, wire.Event{ID: "evt_2", Type: "dropped", UserID: "u-7", Reason: "expired", Job: "promo-1", App: "default", At: at.Add(time.Second)})

	stdout, stderr, code := runCmd(t, "events", "--server", url)
	want := "2026-11-21T10:00:04.512Z dropped app=default job=promo-1 user=u-7 reason=expired " + second + "\n" +
		"2026-11-21T10:00:03.512Z token_invalid app=default job=order-1 user=u-42 device=apns:" + dead[:6] + "…" + dead[len(dead)-4:] + " reason=Unregistered " + first + "\n"
	if code != 0 || stdout != want {
		t.Errorf("hush events: exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, stdout, want, stderr)
	}
	if strings.Contains(stdout, dead) {
		t.Errorf("hush events printed the whole token")
	}
	stdout, _, code = runCmd(t, "events", "--server", url, "--user", "u-42", "--json")
	var en wire.EventEntry
	if err := json.Unmarshal([]byte(stdout), &en); code != 0 || err != nil || en.Cursor != first || en.Event.Token != dead {
		t.Errorf("--user u-42 --json: exit %d, stdout %q (%v), want the token_invalid entry with its whole token", code, stdout, err)
	}
	stdout, _, code = runCmd(t, "events", "--server", url, "--type", "dropped", "--job", "order-1")
	if code != 0 || stdout != "" {
		t.Errorf("filters matching nothing: exit %d, stdout %q, want nothing", code, stdout)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--limit", "0"}, 2, "--limit: want 1 to 1000, got 0"},
		{[]string{"--before", first, "--after", first}, 2, "give --before or --after, not both"},
		{[]string{"--follow", "--after", first}, 2, "--follow starts from the newest events"},
		{[]string{"u-42"}, 2, `takes no arguments, got "u-42"`},
		{[]string{"--type", "sent"}, 1, `type: want one of delivered, failed, token_invalid, dropped, got "sent"`},
	} {
		_, stderr, code := runCmd(t, append([]string{"events", "--server", url}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("hush events %v: exit %d, stderr %q; want %d with %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestEventsFollow: --follow prints the newest events oldest first, then
// each event written after it started, once, and only those its filter
// selects.
func TestEventsFollow(t *testing.T) {
	url, _, rdb := realAPIRedis(t, throttle.Policy{MinGap: time.Second}, "")
	for i := range 3 {
		addStreamEvent(t, rdb, wire.Event{ID: fmt.Sprint("evt_", i), Type: "dropped", UserID: "u-1", Reason: "expired", Job: fmt.Sprint("old-", i), App: "default", At: time.Now()})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"events", "--server", url, "--follow", "--limit", "2", "--user", "u-1", "--poll", "50ms"}, &out, &errb)
	}()
	jobs := func() []string {
		var js []string
		for _, f := range strings.Fields(out.String()) {
			if j, ok := strings.CutPrefix(f, "job="); ok {
				js = append(js, j)
			}
		}
		return js
	}
	testkit.WaitFor(t, 10*time.Second, "the two newest events", func() bool { return len(jobs()) == 2 })
	addStreamEvent(t, rdb, wire.Event{ID: "evt_x", Type: "dropped", UserID: "u-2", Reason: "expired", Job: "other-user", App: "default", At: time.Now()})
	addStreamEvent(t, rdb, wire.Event{ID: "evt_n", Type: "dropped", UserID: "u-1", Reason: "expired", Job: "new", App: "default", At: time.Now()})
	testkit.WaitFor(t, 10*time.Second, "the new event", func() bool { return len(jobs()) >= 3 })
	time.Sleep(200 * time.Millisecond) // a few more polls, which must print nothing again
	cancel()
	if err := <-done; err != nil {
		t.Errorf("events --follow: %v (stderr %s)", err, errb.String())
	}
	if got := strings.Join(jobs(), ","); got != "old-1,old-2,new" {
		t.Errorf("--follow printed jobs %s, want old-1,old-2,new", got)
	}
}

// TestWebhookStatusAndEnable: hush webhook status says whether the
// endpoint is disabled and why, and enable enables it, through the API.
func TestWebhookStatusAndEnable(t *testing.T) {
	url, _, rdb := realAPIRedis(t, throttle.Policy{MinGap: time.Second}, "tok")
	stdout, stderr, code := runCmd(t, "webhook", "status", "--server", url)
	if code != 0 || stdout != "enabled; 0 events wait for a retry\n" {
		t.Errorf("status of an enabled webhook: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	// The state a 410 leaves (worker's TestWebhook410Disables makes it
	// for real).
	rdb.Set(t.Context(), "{hush:webhook:default}:disabled", `{"reason":"the endpoint answered 410 Gone","at":"2026-11-21T10:00:00Z"}`, 0)
	rdb.ZAdd(t.Context(), "{hush:webhook:default}:due", redis.Z{Score: 1, Member: "1-0"})
	stdout, _, code = runCmd(t, "webhook", "status", "--server", url)
	if want := "disabled since 2026-11-21T10:00:00Z: the endpoint answered 410 Gone\n1 events wait for a retry; hush webhook enable posts them once the receiver is fixed\n"; code != 0 || stdout != want {
		t.Errorf("status of a disabled webhook: exit %d, stdout:\n%s\nwant:\n%s", code, stdout, want)
	}
	stdout, _, code = runCmd(t, "webhook", "enable", "--server", url)
	if code != 0 || stdout != "enabled; 1 events wait for a retry\n" {
		t.Errorf("enable: exit %d, stdout %q", code, stdout)
	}
	t.Setenv("HUSH_API_TOKEN", "wrong")
	if _, stderr, code := runCmd(t, "webhook", "status", "--server", url); code != 1 || !strings.Contains(stderr, "unauthorized (401)") {
		t.Errorf("a wrong token: exit %d, stderr %q", code, stderr)
	}
}
