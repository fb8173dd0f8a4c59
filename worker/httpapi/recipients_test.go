package httpapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pb33f/libopenapi-validator/schema_validation"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/worker"
)

// byToken answers the tokens of dead token_invalid and of bad a
// permanent failure, and every other push delivered.
type byToken struct{ dead, bad string }

func (s byToken) Send(_ context.Context, p providers.Push) providers.Result {
	switch p.Token {
	case s.dead:
		return providers.Result{Outcome: providers.TokenInvalid, Reason: "Unregistered"}
	case s.bad:
		return providers.Result{Outcome: providers.Permanent, Reason: "BadTopic"}
	}
	return providers.Result{Outcome: providers.Delivered}
}

// recipientsPage GETs path and decodes the page, failing the test on
// another status.
func recipientsPage(t *testing.T, srv *httptest.Server, path string) worker.RecipientsPage {
	t.Helper()
	resp, b := send(t, srv, "GET", path, "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	var p worker.RecipientsPage
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, b)
	}
	return p
}

// TestRecipientsRoute: GET /v1/notifications/{id}/recipients lists a live
// job's delivered, token_invalid, failed and held recipients, pages by
// next_cursor, filters by state, and answers 400 naming a bad parameter.
func TestRecipientsRoute(t *testing.T) {
	dead, bad := apnsToken("dead"), apnsToken("bad")
	e := newEnv(t, envOptions{limits: "1/1h", senders: map[payload.Platform]worker.Sender{payload.APNs: byToken{dead, bad}}})
	srv := e.server()
	e.waitDone(e.submit(alertJob("first", "first", apnsRecipient("u-busy", apnsToken("busy-0")))), 10*time.Second)
	id := e.submit(alertJob("r-job", "hello",
		apnsRecipient("u-ok", apnsToken("ok-0"), apnsToken("ok-1")),
		apnsRecipient("u-dead", dead),
		apnsRecipient("u-fail", bad),
		apnsRecipient("u-busy", apnsToken("busy-1"))))
	testkit.WaitFor(t, 10*time.Second, "three final, one held", func() bool {
		st, err := e.w.Client().Status(context.Background(), id)
		return err == nil && st.Counts["pending"] == 1 && st.Counts["failed"] == 1 && st.Counts["token_invalid"] == 1 && st.Counts["delivered"] == 1
	})
	base := "/v1/notifications/" + id + "/recipients"

	var states []string
	var cursors []string
	path := base + "?limit=3"
	for {
		p := recipientsPage(t, srv, path)
		for _, r := range p.Items {
			states = append(states, r.State)
		}
		if p.Next == "" {
			break
		}
		cursors = append(cursors, p.Next)
		path = base + "?limit=3&cursor=" + p.Next
	}
	if diff := cmp.Diff([]string{"delivered", "token_invalid", "failed", "held"}, states); diff != "" {
		t.Errorf("states by index (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"3"}, cursors); diff != "" {
		t.Errorf("cursors (-want +got):\n%s", diff)
	}

	// Every page, a held recipient's booking included, is a RecipientsPage.
	api := loadOpenAPI(t)
	schema := api.model.Components.Schemas.GetOrZero("RecipientsPage").Schema()
	for _, q := range []string{"", "?state=held"} {
		_, b := send(t, srv, "GET", base+q, "", "")
		if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(schema, b); !ok {
			t.Errorf("GET %s: %s is not a RecipientsPage:%s", base+q, b, describe(errs))
		}
		for _, tok := range []string{dead, bad, apnsToken("ok-0"), apnsToken("busy-1")} {
			if strings.Contains(string(b), tok) || strings.Contains(string(b), tok[:12]) {
				t.Errorf("GET %s shows a device token: %s", base+q, b)
			}
		}
	}
	p := recipientsPage(t, srv, base+"?state=held")
	if len(p.Items) != 1 || p.Items[0].Index != 3 || p.Items[0].Held == nil || p.Items[0].Held.Queue == "" {
		t.Fatalf("held: %+v, want recipient 3 with its task", p.Items)
	}
	if h := p.Items[0].Held; h.HeldBy != "1/1h" || h.Slot.Before(time.Now().Add(59*time.Minute)) || h.Slot.After(time.Now().Add(time.Hour)) {
		t.Errorf("held recipient: slot %v held by %q, want about an hour from now, held by 1/1h", h.Slot, h.HeldBy)
	}
	p = recipientsPage(t, srv, base+"?state=delivered")
	want := []worker.RecipientState{{Index: 0, State: "delivered", Devices: []worker.DeviceState{{Device: 0, State: "delivered"}, {Device: 1, State: "delivered"}}}}
	if diff := cmp.Diff(want, p.Items); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ name, query, msg string }{
		{"state", "?state=lost", `state: want one of delivered, expired, token_invalid, failed, throttle_full, collapsed, cancelled, opted_out, held, pending, got "lost"`},
		{"limit", "?limit=0", "limit: want 1 to 1000, got 0"},
		{"limit not a number", "?limit=ten", `limit: want a whole number, got "ten"`},
		{"cursor", "?cursor=-3", `cursor: want the next_cursor of an earlier page (such as 100), got "-3"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := call(t, srv, "GET", base+tc.query, "", "")
			if a.Status != 400 || errorMessage(t, a) != tc.msg {
				t.Errorf("%s: %d %q, want 400 %q", tc.query, a.Status, errorMessage(t, a), tc.msg)
			}
		})
	}
}

// TestRecipientsPerApp: a token for the app shop reads its job's
// recipients and is refused courier's (403), as an id no job has.
func TestRecipientsPerApp(t *testing.T) {
	e := newTwoApps(t)
	later := time.Now().Add(time.Hour)
	e.submit(t, "c-held", "courier", "u-1", &later)
	e.submit(t, "s-held", "shop", "u-1", &later)
	const refused = notOwnJob + ": this token acts for the app shop only"
	for _, tc := range []struct {
		name, path, token string
		want              int
		msg               string
	}{
		{"its app's job", "/v1/notifications/s-held/recipients", shopToken, 200, ""},
		{"another app's job", "/v1/notifications/c-held/recipients", shopToken, 403, refused},
		{"no job", "/v1/notifications/none/recipients", shopToken, 403, refused},
		{"all apps", "/v1/notifications/c-held/recipients", allToken, 200, ""},
		{"no job, all apps", "/v1/notifications/none/recipients", allToken, 404, "no job with this id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := call(t, e.srv, "GET", tc.path, tc.token, "")
			if a.Status != tc.want || errorMessage(t, a) != tc.msg {
				t.Errorf("GET %s: %d %q, want %d %q", tc.path, a.Status, errorMessage(t, a), tc.want, tc.msg)
			}
		})
	}
}
