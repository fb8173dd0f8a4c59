package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker"
)

// addEvents appends events to hush:events as the worker writes them (the
// fields type and event) in one round trip, and returns their cursors.
func addEvents(t *testing.T, rdb *redis.Client, evs ...wire.Event) []string {
	t.Helper()
	cmds, err := rdb.Pipelined(context.Background(), func(p redis.Pipeliner) error {
		for _, e := range evs {
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			p.XAdd(context.Background(), &redis.XAddArgs{Stream: worker.EventsStream, Values: []any{"type", e.Type, "event", b}})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(cmds))
	for i, c := range cmds {
		ids[i] = c.(*redis.StringCmd).Val()
	}
	return ids
}

// dropped is a dropped event of job for user of app.
func dropped(app, job, user string) wire.Event {
	return wire.Event{ID: "evt_" + job + user, Type: worker.EventDropped, Reason: "cancelled", Job: job, UserID: user, App: app, At: time.Now().UTC()}
}

// page GETs path and decodes the page, failing the test on another status.
func page(t *testing.T, srv *httptest.Server, path, token string) wire.EventsPage {
	t.Helper()
	resp, b := send(t, srv, "GET", path, token, "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	var p wire.EventsPage
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, b)
	}
	return p
}

// TestEventsPages: GET /v1/events pages through the stream newest first
// (before) and oldest first (after), with every event exactly once, and a
// tail that asks again with after's Next reads only what came since.
func TestEventsPages(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	srv := e.server()
	var evs []wire.Event
	for i := range 250 {
		evs = append(evs, dropped(worker.DefaultApp, fmt.Sprintf("j-%03d", i), "u-1"))
	}
	ids := addEvents(t, e.rdb, evs...)

	var got []string
	next, sizes := "", []int{}
	for range 10 {
		p := page(t, srv, "/v1/events?limit=100"+param("before", next), "")
		sizes = append(sizes, len(p.Events))
		for _, en := range p.Events {
			got = append(got, en.Event.Job)
		}
		if next = p.Next; next == "" {
			break
		}
	}
	if fmt.Sprint(sizes) != "[100 100 50]" {
		t.Errorf("pages of %v events, want [100 100 50] and the last without next", sizes)
	}
	for i, job := range got {
		if want := fmt.Sprintf("j-%03d", 249-i); job != want {
			t.Fatalf("newest first: event %d is %s, want %s", i, job, want)
		}
	}

	// Oldest first, from the tenth event on.
	p := page(t, srv, "/v1/events?limit=1000&after="+ids[9], "")
	if len(p.Events) != 240 || p.Events[0].Event.Job != "j-010" || p.Events[239].Event.Job != "j-249" || p.Next != ids[249] {
		t.Fatalf("after the tenth: %d events (%v .. ), next %q; want j-010 to j-249 and next the last cursor %q", len(p.Events), p.Events[0].Event.Job, p.Next, ids[249])
	}
	if empty := page(t, srv, "/v1/events?after="+p.Next, ""); len(empty.Events) != 0 || empty.Next != p.Next {
		t.Errorf("after the last: %d events, next %q; want none and the same cursor %q", len(empty.Events), empty.Next, p.Next)
	}
	addEvents(t, e.rdb, dropped(worker.DefaultApp, "j-new", "u-1"))
	if tail := page(t, srv, "/v1/events?after="+p.Next, ""); len(tail.Events) != 1 || tail.Events[0].Event.Job != "j-new" {
		t.Errorf("the tail after a new event: %+v, want j-new alone", tail.Events)
	}
}

// TestEventsFilters: type, job, user and app each select their events; a
// filter that matches little reads a bounded part of the stream per
// request, and the next page goes on from there; an entry hush did not
// write is passed over.
func TestEventsFilters(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	srv := e.server()
	invalid := wire.Event{ID: "evt_x", Type: worker.EventTokenInvalid, Platform: "apns", Token: apnsToken("dead"), UserID: "u-9", Reason: "Unregistered", Job: "j-dead", App: worker.DefaultApp, At: time.Now().UTC()}
	addEvents(t, e.rdb, invalid, dropped("shop", "j-shop", "u-2"))
	if err := e.rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: worker.EventsStream, Values: []any{"event", "not json"}}).Err(); err != nil {
		t.Fatal(err)
	}
	var filler []wire.Event
	for i := range worker.EventsScanned + 500 {
		filler = append(filler, dropped(worker.DefaultApp, fmt.Sprintf("f-%d", i), "u-1"))
	}
	addEvents(t, e.rdb, filler...)

	for _, tt := range []struct {
		query, want string
	}{
		{"type=token_invalid", "j-dead"},
		{"job=j-shop", "j-shop"},
		{"user=u-9", "j-dead"},
		{"app=shop", "j-shop"},
		{"app=shop&user=u-9", ""},
	} {
		// The filler is newer than the events sought: the first page
		// reads EventsScanned entries and stops, the second finds them.
		first := page(t, srv, "/v1/events?"+tt.query, "")
		if len(first.Events) != 0 || first.Next == "" {
			t.Errorf("%s: first page %d events, next %q; want none and a next past %d entries", tt.query, len(first.Events), first.Next, worker.EventsScanned)
			continue
		}
		second := page(t, srv, "/v1/events?"+tt.query+"&before="+first.Next, "")
		var jobs []string
		for _, en := range second.Events {
			jobs = append(jobs, en.Event.Job)
		}
		if strings.Join(jobs, ",") != tt.want || second.Next != "" {
			t.Errorf("%s: second page %v, next %q; want [%s] and the stream's end", tt.query, jobs, second.Next, tt.want)
		}
	}
	p := page(t, srv, "/v1/events?type=token_invalid&before="+page(t, srv, "/v1/events?type=token_invalid", "").Next, "")
	if len(p.Events) != 1 || p.Events[0].Event != invalid {
		t.Errorf("the token_invalid event read back: %+v, want %+v", p.Events, invalid)
	}
}

// TestEventsRefusesBadQueries: each bad parameter answers 400 naming it.
func TestEventsRefusesBadQueries(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	srv := e.server()
	for _, tt := range []struct{ query, want string }{
		{"limit=abc", `limit: want a whole number, got "abc"`},
		{"limit=0", "limit: want 1 to 1000, got 0"},
		{"limit=1001", "limit: want 1 to 1000, got 1001"},
		{"before=yesterday", `before: want a cursor of an earlier page (such as 1764547200000-0), got "yesterday"`},
		{"after=1-0-0", "after: want a cursor"},
		{"before=1-0&after=2-0", "after: give before or after, not both"},
		{"type=sent", `type: want one of delivered, failed, token_invalid, dropped, got "sent"`},
	} {
		a := call(t, srv, "GET", "/v1/events?"+tt.query, "", "")
		if msg := errorMessage(t, a); a.Status != 400 || !strings.Contains(msg, tt.want) {
			t.Errorf("%s: %d %q, want 400 with %q", tt.query, a.Status, msg, tt.want)
		}
	}
}

// TestEventsPerAppToken: a token for shop reads shop's events only, and
// is refused another app's.
func TestEventsPerAppToken(t *testing.T) {
	e := newTwoApps(t)
	addEvents(t, e.rdb, dropped("courier", "c-1", "u-1"), dropped("shop", "s-1", "u-1"), dropped("", "legacy", "u-1"))
	jobs := func(token, query string) []string {
		var out []string
		for _, en := range page(t, e.srv, "/v1/events"+query, token).Events {
			out = append(out, en.Event.Job)
		}
		return out
	}
	if got := jobs(shopToken, ""); fmt.Sprint(got) != "[s-1]" {
		t.Errorf("shop's token reads %v, want [s-1]", got)
	}
	if got := jobs(allToken, ""); fmt.Sprint(got) != "[legacy s-1 c-1]" {
		t.Errorf("the all-apps token reads %v, want [legacy s-1 c-1]", got)
	}
	if got := jobs(allToken, "?app=courier"); fmt.Sprint(got) != "[c-1]" {
		t.Errorf("the all-apps token with app=courier reads %v, want [c-1]", got)
	}
	a := call(t, e.srv, "GET", "/v1/events?app=courier", shopToken, "")
	if msg := errorMessage(t, a); a.Status != 403 || !strings.Contains(msg, `app "courier": this token acts for the app shop only`) {
		t.Errorf("shop's token asking for courier: %d %q, want 403", a.Status, msg)
	}
}

// param is "&name=value", or "" for an empty value.
func param(name, value string) string {
	if value == "" {
		return ""
	}
	return "&" + name + "=" + url.QueryEscape(value)
}
