package httpapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker"
)

// The tokens of the two-apps API: one for every app, one for each app.
const (
	allToken     = "all-apps"
	courierToken = "courier-only"
	shopToken    = "shop-only"
)

// twoApps is a running Worker serving the apps courier and shop (no
// default), and the API in front of it taking allToken, courierToken and
// shopToken.
type twoApps struct {
	rdb    *redis.Client
	w      *worker.Worker
	srv    *httptest.Server
	tokens *Tokens
}

func newTwoApps(t *testing.T) *twoApps {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	policy, err := throttle.ParsePolicy("100/1m", "0s")
	if err != nil {
		t.Fatal(err)
	}
	var apps []worker.App
	for _, name := range []string{"courier", "shop"} {
		lim, err := throttle.NewRedis(rdb, policy, throttle.Options{Scope: name, CollapseMargin: worker.CollapseMargin})
		if err != nil {
			t.Fatal(err)
		}
		apps = append(apps, worker.App{Name: name, Senders: senders(), Limiter: lim, Policy: policy})
	}
	set, err := worker.NewApps(apps...)
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(rdb, worker.Options{Apps: set, Concurrency: 10, ShutdownTimeout: 3 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	testkit.WaitFor(t, 10*time.Second, "worker ready", func() bool { return len(w.NotReady(ctx)) == 0 })
	tokens := NewTokens(map[string][]string{courierToken: {"courier"}, shopToken: {"shop"}})
	return &twoApps{rdb: rdb, w: w, tokens: tokens, srv: serve(t, w, Options{Token: allToken, Tokens: tokens, Logger: testLogger(t)})}
}

// job is a job of app for user, as JSON.
func appJob(t *testing.T, id, app, user string) (payload.Job, string) {
	t.Helper()
	job := alertJob(id, id, apnsRecipient(user, apnsToken(id)))
	job.App = app
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	return job, string(b)
}

// submit enqueues a job of app directly, past the API.
func (e *twoApps) submit(t *testing.T, id, app, user string, sendAt *time.Time) {
	t.Helper()
	job, _ := appJob(t, id, app, user)
	job.SendAt = sendAt
	if _, err := e.w.Client().Enqueue(t.Context(), job); err != nil {
		t.Fatal(err)
	}
}

func (e *twoApps) status(t *testing.T, id string) wire.JobStatus {
	t.Helper()
	st, err := e.w.Client().Status(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// errorMessage is an error answer's message.
func errorMessage(t *testing.T, a apiAnswer) string {
	t.Helper()
	env, _ := a.Body["error"].(map[string]any)
	msg, _ := env["message"].(string)
	return msg
}

// TestTokensPerApp: through the real API, a token limited to the app shop
// submits, reads, cancels and resets for shop, and is refused (403,
// naming its own app) every route for courier: a submission, a batch's
// job, a job's status, its cancellation, a user's limiter status and its
// reset. A courier job's id reads the same to it as an id no job has. The
// all-apps token acts for both.
func TestTokensPerApp(t *testing.T) {
	e := newTwoApps(t)
	later := time.Now().Add(time.Hour).Truncate(time.Second)
	e.submit(t, "c-done", "courier", "u-1", nil)
	e.submit(t, "c-held", "courier", "u-1", &later)
	e.submit(t, "s-held", "shop", "u-1", &later)
	testkit.WaitFor(t, 10*time.Second, "c-done done", func() bool {
		st, err := e.w.Client().Status(t.Context(), "c-done")
		return err == nil && st.State == wire.StateDone
	})
	const refused = "this token acts for the app shop only"
	_, courierJob := appJob(t, "c-new", "courier", "u-2")
	_, shopJob := appJob(t, "s-new", "shop", "u-2")
	_, noApp := appJob(t, "x-new", "", "u-2")
	_, takenID := appJob(t, "c-done", "shop", "u-2")

	tests := []struct {
		name, method, path, token, body string
		want                            int
		wantMsg                         string // a part of the error message
	}{
		{"submit for another app", "POST", "/v1/notifications", shopToken, courierJob, 403, `app "courier": ` + refused},
		{"submit naming no app", "POST", "/v1/notifications", shopToken, noApp, 403, refused},
		{"submit naming an unknown app", "POST", "/v1/notifications", shopToken, strings.Replace(shopJob, `"shop"`, `"nope"`, 1), 403, `app "nope": ` + refused},
		{"submit with an id another app's job has", "POST", "/v1/notifications", shopToken, takenID, 403, refused},
		{"submit for its app", "POST", "/v1/notifications", shopToken, shopJob, 202, ""},
		{"status of another app's finished job", "GET", "/v1/notifications/c-done", shopToken, "", 403, notOwnJob + ": " + refused},
		{"status of another app's pending job", "GET", "/v1/notifications/c-held", shopToken, "", 403, notOwnJob + ": " + refused},
		{"status of no job", "GET", "/v1/notifications/none", shopToken, "", 403, notOwnJob + ": " + refused},
		{"status of its app's job", "GET", "/v1/notifications/s-held", shopToken, "", 200, ""},
		{"status, all apps", "GET", "/v1/notifications/c-done", allToken, "", 200, ""},
		{"status of no job, all apps", "GET", "/v1/notifications/none", allToken, "", 404, "no job with this id"},
		{"cancel another app's job", "DELETE", "/v1/notifications/c-held", shopToken, "", 403, notOwnJob + ": " + refused},
		{"cancel no job", "DELETE", "/v1/notifications/none", shopToken, "", 403, notOwnJob + ": " + refused},
		{"cancel its app's job", "DELETE", "/v1/notifications/s-held", shopToken, "", 200, ""},
		{"throttle status of another app", "GET", "/v1/users/u-1/throttle?app=courier", shopToken, "", 403, `app "courier": ` + refused},
		{"throttle status of an unknown app", "GET", "/v1/users/u-1/throttle?app=nope", shopToken, "", 403, `app "nope": ` + refused},
		{"throttle status naming no app", "GET", "/v1/users/u-1/throttle", shopToken, "", 403, refused},
		{"throttle status of its app", "GET", "/v1/users/u-1/throttle?app=shop", shopToken, "", 200, ""},
		{"throttle reset of another app", "DELETE", "/v1/users/u-1/throttle?app=courier", shopToken, "", 403, `app "courier": ` + refused},
		{"throttle reset of its app", "DELETE", "/v1/users/u-1/throttle?app=shop", shopToken, "", 200, ""},
		{"throttle status, all apps", "GET", "/v1/users/u-1/throttle?app=courier", allToken, "", 200, ""},
		{"an unknown token", "GET", "/v1/notifications/s-held", "courier-onl", "", 401, "missing or wrong bearer token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, e.srv, tt.method, tt.path, tt.token, tt.body)
			if a.Status != tt.want {
				t.Fatalf("%s %s: %d %v, want %d", tt.method, tt.path, a.Status, a.Body, tt.want)
			}
			if msg := errorMessage(t, a); !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("%s %s: message %q, want it to contain %q", tt.method, tt.path, msg, tt.wantMsg)
			}
			if tt.want == 403 && strings.Contains(errorMessage(t, a), "courier") && !strings.Contains(tt.path+tt.body, "courier") {
				t.Errorf("%s %s: the refusal %q names courier, which the request did not", tt.method, tt.path, errorMessage(t, a))
			}
		})
	}

	// What the refusals left alone.
	if st := e.status(t, "c-held"); st.State == wire.StateCancelled || st.App != "courier" {
		t.Errorf("c-held after a shop token's cancel: state %s app %q, want not cancelled, app courier", st.State, st.App)
	}
	if st := e.status(t, "s-held"); st.State != wire.StateCancelled {
		t.Errorf("s-held after the shop token's cancel: state %s, want cancelled", st.State)
	}
	if _, err := e.w.Client().Status(t.Context(), "c-new"); err == nil {
		t.Errorf("c-new, refused to the shop token, was accepted")
	}
	if st := e.status(t, "c-done"); st.App != "courier" {
		t.Errorf("c-done, finished: app %q, want courier", st.App)
	}
}

// TestTokensPerAppBatch: a batch with a token limited to shop has each job
// answered on its own: shop's accepted, courier's and one naming no app
// (of a server without default) refused with 403, as a submission of each
// alone would be.
func TestTokensPerAppBatch(t *testing.T) {
	e := newTwoApps(t)
	_, courierJob := appJob(t, "b-c", "courier", "u-1")
	_, shopJob := appJob(t, "b-s", "shop", "u-1")
	_, noApp := appJob(t, "b-x", "", "u-1")
	a := call(t, e.srv, "POST", "/v1/notifications:batch", shopToken, `{"jobs":[`+courierJob+`,`+shopJob+`,`+noApp+`]}`)
	if a.Status != 200 {
		t.Fatalf("batch: %d %v, want 200", a.Status, a.Body)
	}
	b, _ := json.Marshal(a.Body)
	var got wire.BatchResults
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Results) != 3 || got.Results[0].Status != 403 || got.Results[0].Error == nil ||
		!strings.Contains(got.Results[0].Error.Message, "this token acts for the app shop only") || got.Results[1].Status != 202 || got.Results[2].Status != 403 {
		t.Fatalf("batch answers %s: want courier's 403 naming shop, shop's 202, the job naming no app 403", b)
	}
	if _, err := e.w.Client().Status(t.Context(), "b-c"); err == nil {
		t.Errorf("b-c, refused, was accepted")
	}
}

// TestTokensSet: the tokens swapped in serve at once; the ones swapped out
// are refused; with no token left, every request is refused (the API was
// started requiring one).
func TestTokensSet(t *testing.T) {
	e := newTwoApps(t)
	e.submit(t, "s-1", "shop", "u-1", nil)
	if a := call(t, e.srv, "GET", "/v1/notifications/s-1", shopToken, ""); a.Status != 200 {
		t.Fatalf("before: %d, want 200", a.Status)
	}
	e.tokens.Set(map[string][]string{"shop-2": {"shop"}, courierToken: {"courier", "shop"}})
	for _, c := range []struct {
		token string
		want  int
	}{{shopToken, 401}, {"shop-2", 200}, {courierToken, 200}, {allToken, 200}} {
		if a := call(t, e.srv, "GET", "/v1/notifications/s-1", c.token, ""); a.Status != c.want {
			t.Errorf("after Set, token %s: %d, want %d", c.token, a.Status, c.want)
		}
	}
	e.tokens.Set(nil)
	only := serve(t, e.w, Options{Tokens: e.tokens})
	if a := call(t, only, "GET", "/v1/notifications/s-1", "", ""); a.Status != 401 {
		t.Errorf("no token left, none sent: %d, want 401", a.Status)
	}
	if a := call(t, only, "GET", "/v1/notifications/s-1", "shop-2", ""); a.Status != 401 {
		t.Errorf("no token left, an old one sent: %d, want 401", a.Status)
	}
}
