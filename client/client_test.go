package client_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
	"github.com/hushpush/hush/worker/httpapi"
)

const token = "s3cret"

// api is the real HTTP API (worker/httpapi) on a private Redis (Asynq
// uses fixed key names), not running its tasks: jobs stay queued. Its
// policy has two categories, and quiet hours (quietZone's) that hold now
// in quietZone and not in UTC.
type api struct {
	srv *httptest.Server
	lim *throttle.Redis
	rdb *redis.Client
}

// quietZone is 9 hours ahead of UTC all year round.
const quietZone = "Asia/Tokyo"

func startAPI(t *testing.T) api {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	policy, err := throttle.ParsePolicy("5/1m", "2s")
	if err != nil {
		t.Fatal(err)
	}
	if policy.Categories, err = throttle.ParseCategories("marketing=2/1d,1/4h@1h; transactional=none global=off"); err != nil {
		t.Fatal(err)
	}
	// Quiet now in Tokyo, not for hours in UTC.
	from, to := testkit.QuietNowAhead(9)
	policy.Quiet = throttle.Quiet{From: from, To: to}
	lim, err := throttle.NewRedis(rdb, policy, throttle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(rdb, worker.Options{Limiter: lim, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(w, w.Client(), httpapi.Options{Token: token, MaxBodyBytes: 4096}))
	t.Cleanup(srv.Close)
	return api{srv: srv, lim: lim, rdb: rdb}
}

// lastBody keeps the body of the last answer a client received.
type lastBody struct {
	mu   sync.Mutex
	body []byte
}

func (l *lastBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.body = b
	l.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

func (l *lastBody) get() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.body
}

// sameJSON fails the test unless v, encoded, is the server's answer: the
// client's types keep every field the server sends, unchanged.
func sameJSON(t *testing.T, server []byte, v any) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, server); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), string(got)); diff != "" {
		t.Errorf("re-encoded answer (-server +client):\n%s", diff)
	}
}

func job(id, user string) payload.Job {
	return payload.Job{
		ID:         id,
		Recipients: []payload.Recipient{{UserID: user, Devices: []payload.Device{{Platform: payload.APNs, Token: testkit.APNsToken(user)}}}},
		Content:    payload.Content{Alert: &payload.Alert{Title: "hi"}, TTL: payload.Duration(time.Hour)},
	}
}

func TestSubmitAndStatus(t *testing.T) {
	a := startAPI(t)
	seen := &lastBody{}
	c := client.New(a.srv.URL+"/", client.WithToken(token), client.WithHTTPClient(&http.Client{Transport: seen}))
	ctx := t.Context()

	acc, err := c.Submit(ctx, job("j-1", "u-1"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(client.Accepted{ID: "j-1"}, acc); diff != "" {
		t.Errorf("first submit (-want +got):\n%s", diff)
	}
	acc, err = c.Submit(ctx, job("j-1", "u-1"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(client.Accepted{ID: "j-1", Duplicate: true}, acc); diff != "" {
		t.Errorf("second submit (-want +got):\n%s", diff)
	}
	acc, err = c.Submit(ctx, job("", "u-2"))
	if err != nil || len(acc.ID) != 32 {
		t.Errorf("submit without id: %+v, %v; want a generated id", acc, err)
	}

	st, err := c.Status(ctx, "j-1")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != client.StateQueued || st.Recipients != 1 || st.Counts["pending"] != 1 || st.Deadline.IsZero() {
		t.Errorf("status %+v: want queued, 1 recipient pending, a deadline", st)
	}
	sameJSON(t, seen.get(), st)
}

// TestCancel cancels a queued job (the worker does not run: its recipient
// stays pending, so the server waits out its grace before answering).
func TestCancel(t *testing.T) {
	a := startAPI(t)
	seen := &lastBody{}
	c := client.New(a.srv.URL, client.WithToken(token), client.WithHTTPClient(&http.Client{Transport: seen}))
	ctx := t.Context()
	if _, err := c.Submit(ctx, job("j-1", "u-1")); err != nil {
		t.Fatal(err)
	}
	res, err := c.Cancel(ctx, "j-1")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.State != client.StateCancelled || res.CancelledAt.IsZero() || res.Counts["pending"] != 1 {
		t.Errorf("cancel %+v: want cancelled by this call, state cancelled, cancelled_at, 1 pending", res)
	}
	sameJSON(t, seen.get(), res)

	again, err := c.Cancel(ctx, "j-1")
	if err != nil {
		t.Fatal(err)
	}
	if again.Cancelled || !again.CancelledAt.Equal(res.CancelledAt) {
		t.Errorf("second cancel %+v: want cancelled false and the first cancelled_at %v", again, res.CancelledAt)
	}
	st, err := c.Status(ctx, "j-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res.JobStatus, st); diff != "" {
		t.Errorf("status after the cancel (-cancel +status):\n%s", diff)
	}
	sameJSON(t, seen.get(), st)
}

func TestUserThrottle(t *testing.T) {
	a := startAPI(t)
	seen := &lastBody{}
	c := client.New(a.srv.URL, client.WithToken(token), client.WithHTTPClient(&http.Client{Transport: seen}))
	ctx := t.Context()
	// Two bookings for a user with path-unfriendly characters: the first
	// now, the second after the 2 s gap.
	const user = "u 1/ä?"
	if _, err := a.lim.ReserveBatch(ctx, []throttle.Request{{User: user, Member: "j-1/0"}, {User: user, Member: "j-2/0"}}); err != nil {
		t.Fatal(err)
	}
	st, err := c.UserThrottle(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	if st.UserID != user || len(st.Entries) != 2 || len(st.Held) != 1 || !st.NextAllowed.After(st.Now) || st.MinGap != "2s" {
		t.Errorf("throttle %+v: want %q with 2 entries, the second held, next allowed later, min gap 2s", st, user)
	}
	if st.Timezone != "UTC" || st.Quiet || st.QuietHours == "" {
		t.Errorf("throttle %+v: want the server's zone UTC, quiet hours, not quiet now", st)
	}
	if st.TimezoneFrom != client.TimezoneFromServerDefault {
		t.Errorf("timezone_from %q without a zone asked for, want %q", st.TimezoneFrom, client.TimezoneFromServerDefault)
	}
	// The window ending now holds the first booking only; the second is
	// booked after now, and leaves three once kept.
	n := func(i int) *int { return &i }
	if diff := cmp.Diff([]client.RuleRemaining{{Rule: "5/1m", Remaining: 4, Sent: n(1), Booked: n(1), AfterBookings: n(3)}}, st.Remaining); diff != "" {
		t.Errorf("remaining (-want +got):\n%s", diff)
	}
	var names []string
	for _, k := range st.Categories {
		names = append(names, k.Name)
	}
	if diff := cmp.Diff([]string{"marketing", "transactional"}, names); diff != "" {
		t.Errorf("categories (-want +got):\n%s", diff)
	}
	sameJSON(t, seen.get(), st)

	// In the user's zone, the quiet hours hold now: the global next
	// allowed instant is their end, and so is marketing's (it keeps the
	// global ones); transactional ignores them.
	if _, err := a.lim.ReserveBatch(ctx, []throttle.Request{{User: user, Member: "j-3/0", Category: "marketing"}}); err != nil {
		t.Fatal(err)
	}
	st, err = c.UserThrottleIn(ctx, user, quietZone)
	if err != nil {
		t.Fatal(err)
	}
	if st.Timezone != quietZone || st.TimezoneFrom != client.TimezoneFromRequest || !st.Quiet || st.NextAllowed.Sub(st.Now) < 25*time.Minute {
		t.Errorf("throttle in %s %+v: want quiet now, next allowed at the quiet hours' end", quietZone, st)
	}
	if m := st.Categories[0]; m.Rules != "2/24h,1/4h@1h" || !m.Quiet || m.QuietHours != st.QuietHours || len(m.Entries) != 1 {
		t.Errorf("marketing %+v: want its rules, the global quiet hours, quiet now, its one booking", m)
	}
	if tr := st.Categories[1]; tr.Quiet || tr.QuietHours != "" || !tr.NextAllowed.Equal(st.Now) {
		t.Errorf("transactional %+v: want no quiet hours, allowed now", tr)
	}
	sameJSON(t, seen.get(), st)

	if err := c.ResetUserThrottle(ctx, user); err != nil {
		t.Fatal(err)
	}
	if st, err := c.UserThrottle(ctx, user); err != nil || len(st.Entries) != 0 {
		t.Errorf("after reset: %+v, %v; want no entries", st, err)
	}
}

func TestErrors(t *testing.T) {
	a := startAPI(t)
	c := client.New(a.srv.URL, client.WithToken(token))
	ctx := t.Context()
	invalid := job("bad", "u-1")
	invalid.Recipients[0].Devices[0].Token = "zz"
	invalid.Alert.Badge = new(-1)

	tests := []struct {
		name string
		call func() error
		want client.Error
	}{
		{
			name: "field problems",
			call: func() error { _, err := c.Submit(ctx, invalid); return err },
			want: client.Error{Status: 400, Message: "invalid job", Problems: []client.Problem{
				{Field: "recipients[0].devices[0].token", Message: "not hex (invalid character at position 0)"},
				{Field: "alert.badge", Message: "must be 0 or more, got -1"},
			}},
		},
		{
			name: "unknown field, sent as is",
			call: func() error {
				_, err := c.SubmitJSON(ctx, []byte(`{"recipients":[{"user_id":"u","devices":[{"platform":"fcm","token":"t"}]}],"alert":{"title":"t"},"colour":"red"}`))
				return err
			},
			want: client.Error{Status: 400, Message: "invalid job", Problems: []client.Problem{{Field: "colour", Message: "unknown field"}}},
		},
		{
			name: "malformed",
			call: func() error { _, err := c.SubmitJSON(ctx, []byte(`{"recipients": [`)); return err },
			want: client.Error{Status: 400, Message: "malformed job JSON: unexpected end of input at offset 16"},
		},
		{
			name: "too large",
			call: func() error {
				big := job("big", "u-1")
				big.Alert.Body = strings.Repeat("b", 5000)
				_, err := c.Submit(ctx, big)
				return err
			},
			want: client.Error{Status: 413, Message: "request body larger than 4096 bytes"},
		},
		{
			name: "unknown job",
			call: func() error { _, err := c.Status(ctx, "nope"); return err },
			want: client.Error{Status: 404, Message: "no job with this id"},
		},
		{
			name: "unknown job, cancelled",
			call: func() error { _, err := c.Cancel(ctx, "nope"); return err },
			want: client.Error{Status: 404, Message: "no job with this id"},
		},
		{
			name: "unknown time zone",
			call: func() error { _, err := c.UserThrottleIn(ctx, "u", "Mars/Olympus"); return err },
			want: client.Error{Status: 400, Message: `timezone: unknown time zone "Mars/Olympus" (want an IANA name such as Europe/Berlin)`},
		},
		{
			name: "wrong token",
			call: func() error {
				_, err := client.New(a.srv.URL, client.WithToken("guess")).UserThrottle(ctx, "u")
				return err
			},
			want: client.Error{Status: 401, Message: "missing or wrong bearer token"},
		},
		{
			name: "no token",
			call: func() error { return client.New(a.srv.URL).ResetUserThrottle(ctx, "u") },
			want: client.Error{Status: 401, Message: "missing or wrong bearer token"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var got *client.Error
			if !errors.As(err, &got) {
				t.Fatalf("error %v (%T), want a *client.Error", err, err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReady(t *testing.T) {
	a := startAPI(t)
	err := client.New(a.srv.URL).Ready(t.Context())
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 503 || apiErr.Message != "not ready: task server not running" {
		t.Errorf("Ready of a worker not running: %v, want a 503 saying the task server is not running", err)
	}
}

func TestErrorText(t *testing.T) {
	e := &client.Error{Status: 400, Message: "invalid job", Problems: []client.Problem{{Field: "a", Message: "x"}, {Field: "b", Message: "y"}}}
	if got, want := e.Error(), "hush API: 400 Bad Request: invalid job: a: x; b: y"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestNotHush: answers that are not hush's (a proxy's page, a success
// without the documented body) and a server that is not there.
func TestNotHush(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"ok":true}`)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html>502 Bad Gateway</html>\n")
	}))
	t.Cleanup(proxy.Close)
	c := client.New(proxy.URL)

	_, err := c.Status(t.Context(), "j")
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || apiErr.Message != "<html>502 Bad Gateway</html>" {
		t.Errorf("502 page: %v, want a *client.Error with the page's text", err)
	}
	if _, err := c.Submit(t.Context(), job("j", "u")); err == nil || errors.As(err, &apiErr) {
		t.Errorf("202 without an id: %v, want an error that is not a *client.Error", err)
	}

	proxy.Close()
	if _, err := c.Status(t.Context(), "j"); err == nil || errors.As(err, &apiErr) {
		t.Errorf("server gone: %v, want a transport error", err)
	}
}

// TestEvents reads events through the real API: a filter, the page's
// cursor and next, and every field of the server's answer kept.
func TestEvents(t *testing.T) {
	a := startAPI(t)
	evs := []client.Event{
		{ID: "evt_a", Type: "token_invalid", Platform: "apns", Token: testkit.APNsToken("dead"), UserID: "u-1", Reason: "Unregistered", Job: "j-1", App: "default", At: time.Now().UTC()},
		{ID: "evt_b", Type: "dropped", UserID: "u-2", Reason: "expired", Job: "j-2", App: "default", At: time.Now().UTC()},
	}
	var ids []string
	for _, e := range evs {
		b, _ := json.Marshal(e)
		id, err := a.rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: worker.EventsStream, Values: []any{"type", e.Type, "event", b}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var last lastBody
	c := client.New(a.srv.URL, client.WithToken(token), client.WithHTTPClient(&http.Client{Transport: &last}))
	p, err := c.Events(t.Context(), client.EventsQuery{Type: "token_invalid"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 1 || p.Events[0].Event != evs[0] || p.Events[0].Cursor != ids[0] || p.Next != "" {
		t.Errorf("token_invalid events: %+v, want %+v at %s and no next", p, evs[0], ids[0])
	}
	sameJSON(t, last.get(), p)
	p, err = c.Events(t.Context(), client.EventsQuery{After: ids[0], Limit: 5})
	if err != nil || len(p.Events) != 1 || p.Events[0].Event != evs[1] || p.Next != ids[1] {
		t.Errorf("after the first: %+v, %v; want the second and next %s", p, err, ids[1])
	}
	_, err = c.Events(t.Context(), client.EventsQuery{Limit: 5000})
	if apiErr, ok := errors.AsType[*client.Error](err); !ok || apiErr.Status != 400 || !strings.Contains(apiErr.Message, "limit") {
		t.Errorf("limit 5000: %v, want a 400 naming limit", err)
	}
}
