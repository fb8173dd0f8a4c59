package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	valerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/docs"
	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker"
)

// openAPI is docs/openapi.yaml, loaded and checked against the OpenAPI 3.1
// schema, with a validator of requests and responses against it.
type openAPI struct {
	model *v3.Document
	v     validator.Validator
}

func loadOpenAPI(t *testing.T) openAPI {
	t.Helper()
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	if got := doc.GetVersion(); !strings.HasPrefix(got, "3.1") {
		t.Fatalf("docs/openapi.yaml is OpenAPI %s, want 3.1", got)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("docs/openapi.yaml: validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		t.Fatalf("docs/openapi.yaml is not a valid OpenAPI document:%s", describe(verrs))
	}
	return openAPI{model: &m.Model, v: v}
}

// operations returns the documented operations ("GET /healthz") and their
// response codes.
func (api openAPI) operations() map[string][]string {
	ops := map[string][]string{}
	for path, item := range api.model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			ops[strings.ToUpper(method)+" "+path] = slices.Collect(op.Responses.Codes.KeysFromOldest())
		}
	}
	return ops
}

// methods returns the methods the description documents for path.
func (api openAPI) methods(path string) []string {
	var out []string
	for m := range api.model.Paths.PathItems.GetOrZero(path).GetOperations().KeysFromOldest() {
		out = append(out, strings.ToUpper(m))
	}
	slices.Sort(out)
	return out
}

// validateError checks body against the schema Error.
func (api openAPI) validateError(t *testing.T, what string, body []byte) {
	t.Helper()
	schema := api.model.Components.Schemas.GetOrZero("Error").Schema()
	if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(schema, body); !ok {
		t.Errorf("%s: body %s is not an Error:%s", what, body, describe(errs))
	}
}

func describe(errs []*valerrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  %s: %s", e.Message, e.Reason)
		for _, s := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    %s: %s", s.FieldPath, s.Reason)
		}
	}
	return b.String()
}

// contractCase is one request to a real Handler, and what it must produce.
type contractCase struct {
	name string
	srv  *httptest.Server
	op   string // the documented operation, "GET /v1/notifications/{id}"
	path string // the request's path
	// token is sent as the bearer token when set.
	token, body string
	status      int
	// requestValid says whether the request conforms to the description:
	// false for the bad jobs and missing tokens the server must refuse.
	requestValid bool
	wantFields   []string // a 400's problem fields, in order
	before       func()   // runs first
	// check, when set, checks the answer's body further.
	check func(t *testing.T, body []byte)
}

// TestOpenAPIContract builds the real Handler on real Redis and checks
// docs/openapi.yaml against it: every route the handler serves is
// documented and nothing else is; requests producing every documented
// status of every operation are validated, request and response, with
// libopenapi-validator; a wrong method on every path answers 405 with the
// documented Allow header, and an unknown path 404, both in the Error
// envelope.
func TestOpenAPIContract(t *testing.T) {
	api := loadOpenAPI(t)
	const token = "s3cret"
	e := newEnv(t, envOptions{token: token, maxBody: 2048, limits: "5/1m", gap: "1s"})

	t.Run("every route is documented, and only those", func(t *testing.T) {
		var served []string
		for _, rt := range (&server{w: e.w}).routes() {
			served = append(served, rt.method+" "+rt.pattern)
		}
		slices.Sort(served)
		documented := slices.Sorted(maps.Keys(api.operations()))
		if diff := cmp.Diff(documented, served); diff != "" {
			t.Errorf("operations (-documented +served):\n%s", diff)
		}
	})

	main := e.server()
	// A limiter without Status and Reset: the throttle routes answer 501.
	noAdmin, err := worker.New(e.rdb, worker.Options{Limiter: limiterOnly{e.lim}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	plain := serve(t, noAdmin, e.opts)
	down := serve(t, redisDownWorker(t), e.opts)
	cats := serve(t, categoriesWorker(t, e.rdb, "u-k"), e.opts)

	const id = "contract-1"
	job := alertJob(id, "contract", apnsRecipient("u-c", apnsToken("contract")))
	good, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	big := alertJob("contract-big", strings.Repeat("t", 3000), apnsRecipient("u-c", apnsToken("contract")))
	tooLarge, err := json.Marshal(big)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := json.Marshal(alertJob("contract-batch", "batch", apnsRecipient("u-b", apnsToken("batch"))))
	if err != nil {
		t.Fatal(err)
	}
	const batch = "POST /v1/notifications:batch"
	const submit, status, cancel, getThrottle, resetThrottle = "POST /v1/notifications", "GET /v1/notifications/{id}",
		"DELETE /v1/notifications/{id}", "GET /v1/users/{id}/throttle", "DELETE /v1/users/{id}/throttle"
	const recipients = "GET /v1/notifications/{id}/recipients"
	const putPrefs, getPrefs, deletePrefs, deleteUser = "PUT /v1/users/{id}/preferences", "GET /v1/users/{id}/preferences",
		"DELETE /v1/users/{id}/preferences", "DELETE /v1/users/{id}"
	const prefsPath, prefsBody = "/v1/users/u-c/preferences", `{"opt_out": ["marketing"], "quiet_hours": "22:00-07:00", "timezone": "Europe/Paris"}`
	const jobPath, userPath = "/v1/notifications/" + id, "/v1/users/u-c/throttle"
	const laterID = "contract-later"
	const laterPath = "/v1/notifications/" + laterID
	var cancelledAt any // the first cancellation's cancelled_at
	two := newTwoApps(t)
	two.submit(t, "c-1", "courier", "u-1", nil)
	_, courierJob := appJob(t, "c-2", "courier", "u-2")
	cases := []contractCase{
		{name: "accepted", srv: main, op: submit, token: token, body: string(good), status: 202, requestValid: true},
		{name: "duplicate", srv: main, op: submit, token: token, body: string(good), status: 200, requestValid: true},
		{name: "malformed JSON", srv: main, op: submit, token: token, body: `{"recipients": [`, status: 400},
		{
			name: "field problems", srv: main, op: submit, token: token, status: 400,
			body:       `{"recipients":[{"user_id":"u-1","devices":[{"platform":"pager","token":"x"},{"platform":"apns","token":"zz"}]}],"alert":{"title":"hi"}}`,
			wantFields: []string{"recipients[0].devices[0].platform", "recipients[0].devices[1].token"},
		},
		{
			name: "a rule only the server checks (unique user ids)", srv: main, op: submit, token: token, status: 400, requestValid: true,
			body:       `{"recipients":[{"user_id":"u-1","devices":[{"platform":"fcm","token":"a"}]},{"user_id":"u-1","devices":[{"platform":"fcm","token":"b"}]}],"alert":{"title":"hi"}}`,
			wantFields: []string{"recipients[1].user_id"},
		},
		// One rule each: the description refuses what the server refuses.
		{name: "unknown platform", srv: main, op: submit, token: token, status: 400, body: withDevice("pager", "abc", ""), wantFields: []string{"recipients[0].devices[0].platform"}},
		{name: "apns token not hex", srv: main, op: submit, token: token, status: 400, body: withDevice("apns", "xyz", ""), wantFields: []string{"recipients[0].devices[0].token"}},
		{name: "apns token too short", srv: main, op: submit, token: token, status: 400, body: withDevice("apns", "abcd", ""), wantFields: []string{"recipients[0].devices[0].token"}},
		{name: "fcm token with a space", srv: main, op: submit, token: token, status: 400, body: withDevice("fcm", "has space", ""), wantFields: []string{"recipients[0].devices[0].token"}},
		{name: "missing recipients", srv: main, op: submit, token: token, status: 400, body: `{"alert":{"title":"t"}}`, wantFields: []string{"recipients"}},
		{name: "unknown field", srv: main, op: submit, token: token, status: 400, body: withDevice("fcm", "t", `,"colour":"red"`), wantFields: []string{"colour"}},
		{name: "ttl as a number", srv: main, op: submit, token: token, status: 400, body: withDevice("fcm", "t", `,"ttl":3600`), wantFields: []string{"ttl"}},
		{name: "ttl and expires_at", srv: main, op: submit, token: token, status: 400, body: withDevice("fcm", "t", `,"ttl":"1h","expires_at":"2999-01-01T00:00:00Z"`), wantFields: []string{"expires_at"}},
		{name: "reserved data key", srv: main, op: submit, token: token, status: 400, body: withDevice("fcm", "t", `,"data":{"aps":"x"}`), wantFields: []string{`data["aps"]`}},
		{name: "silent with an alert", srv: main, op: submit, token: token, status: 400, body: withDevice("fcm", "t", `,"silent":true`), wantFields: []string{"alert"}},
		{name: "no alert", srv: main, op: submit, token: token, status: 400, body: `{"recipients":[{"user_id":"u","devices":[{"platform":"fcm","token":"t"}]}]}`, wantFields: []string{"alert"}},
		{name: "alert without title or body", srv: main, op: submit, token: token, status: 400, body: `{"recipients":[{"user_id":"u","devices":[{"platform":"fcm","token":"t"}]}],"alert":{"sound":"default"}}`, wantFields: []string{"alert"}},
		{name: "negative badge", srv: main, op: submit, token: token, status: 400, body: `{"recipients":[{"user_id":"u","devices":[{"platform":"fcm","token":"t"}]}],"alert":{"title":"t","badge":-1}}`, wantFields: []string{"alert.badge"}},
		{name: "no token", srv: main, op: submit, body: string(good), status: 401},
		{name: "wrong token", srv: main, op: submit, token: "nope", body: string(good), status: 401, requestValid: true},
		{name: "too large", srv: main, op: submit, token: token, body: string(tooLarge), status: 413, requestValid: true},
		{name: "redis down", srv: down, op: submit, token: token, body: string(good), status: 503, requestValid: true},

		// A batch answers each job as the single submission would: the
		// new one accepted, the one submitted above a duplicate.
		{
			name: "batch", srv: main, op: batch, token: token, status: 200, requestValid: true,
			body:  `{"jobs":[` + string(fresh) + `,` + string(good) + `]}`,
			check: wantAnswers(wire.BatchAnswer{Status: 202, ID: "contract-batch"}, wire.BatchAnswer{Status: 200, ID: id, Duplicate: true}),
		},
		{
			name: "batch with an invalid job", srv: main, op: batch, token: token, status: 200,
			body: `{"jobs":[` + withDevice("apns", "xyz", "") + `,` + string(good) + `]}`,
			check: wantAnswers(wire.BatchAnswer{Status: 400, Error: &wire.ErrorDetail{Message: "invalid job", Problems: []wire.Problem{{Field: "recipients[0].devices[0].token"}}}},
				wire.BatchAnswer{Status: 200, ID: id, Duplicate: true}),
		},
		{
			name: "batch, redis down", srv: down, op: batch, token: token, status: 200, requestValid: true,
			body:  `{"jobs":[` + string(good) + `]}`,
			check: wantAnswers(wire.BatchAnswer{Status: 503, ID: id, Error: &wire.ErrorDetail{Message: "could not accept the job, try again"}}),
		},
		{name: "batch of no jobs", srv: main, op: batch, token: token, status: 400, body: `{"jobs":[]}`, wantFields: []string{"jobs"}},
		{name: "batch with JOBS", srv: main, op: batch, token: token, status: 400, body: `{"JOBS":[` + string(good) + `]}`, wantFields: []string{"JOBS"}},
		{name: "batch with trailing data", srv: main, op: batch, token: token, status: 400, body: `{"jobs":[` + string(good) + `]}}`},
		{name: "job id ..", srv: main, op: submit, token: token, status: 400, body: `{"id":"..",` + withDevice("fcm", "t", "")[1:], wantFields: []string{"id"}},
		{name: "user id .", srv: main, op: submit, token: token, status: 400, body: `{"recipients":[{"user_id":".","devices":[{"platform":"fcm","token":"t"}]}],"alert":{"title":"hi"}}`, wantFields: []string{"recipients[0].user_id"}},
		{name: "collapse_key with a newline", srv: main, op: submit, token: token, status: 400, body: withDevice("fcm", "t", `,"collapse_key":"a\nb"`), wantFields: []string{"collapse_key"}},
		{
			name: "more problems than listed", srv: main, op: submit, token: token, status: 400,
			body: `{"recipients":[` + strings.Repeat(`{},`, 150) + `{}]}`,
			check: func(t *testing.T, body []byte) {
				var env wire.ErrorBody
				if err := json.Unmarshal(body, &env); err != nil {
					t.Fatal(err)
				}
				if len(env.Error.Problems) != payload.MaxProblems || env.Error.Omitted == 0 {
					t.Errorf("%d problems listed and %d omitted, want %d listed and the others counted", len(env.Error.Problems), env.Error.Omitted, payload.MaxProblems)
				}
			},
		},
		{name: "batch as an array", srv: main, op: batch, token: token, status: 400, body: `[` + string(good) + `]`},
		{name: "batch with another field", srv: main, op: batch, token: token, status: 400, body: `{"jobs":[` + string(good) + `],"priority":"high"}`},
		{name: "batch without token", srv: main, op: batch, body: `{"jobs":[` + string(good) + `]}`, status: 401},
		{name: "batch too large", srv: main, op: batch, token: token, body: `{"jobs":[` + string(tooLarge) + `]}`, status: 413, requestValid: true},

		{
			name: "job status", srv: main, op: status, path: jobPath, token: token, status: 200, requestValid: true,
			before: func() { e.waitDone(id, 10*time.Second) },
		},
		{name: "unknown job", srv: main, op: status, path: "/v1/notifications/nope", token: token, status: 404, requestValid: true},
		{name: "job status without token", srv: main, op: status, path: jobPath, status: 401},
		{name: "job status, redis down", srv: down, op: status, path: jobPath, token: token, status: 503, requestValid: true},

		// A job already done is left as it is: the cancellation answers at
		// once.
		{
			name: "cancel a done job", srv: main, op: cancel, path: jobPath, token: token, status: 200, requestValid: true,
			check: func(t *testing.T, body []byte) {
				got := fieldsOf(t, body, "state", "cancelled", "cancelled_at")
				if got["state"] != wire.StateDone || got["cancelled"] != false || got["cancelled_at"] != nil {
					t.Errorf("cancel of a done job: %s, want state done, cancelled false, no cancelled_at", body)
				}
			},
		},
		// A job scheduled an hour ahead: cancelled, its job task run at
		// once (it drops its recipient), answered after the grace.
		{
			name: "cancel", srv: main, op: cancel, path: laterPath, token: token, status: 200, requestValid: true,
			before: func() {
				at := time.Now().Add(time.Hour)
				j := alertJob(laterID, "later", apnsRecipient("u-l", apnsToken("later")))
				j.SendAt = &at
				e.submit(j)
			},
			check: func(t *testing.T, body []byte) {
				got := fieldsOf(t, body, "state", "cancelled", "cancelled_at")
				if got["state"] != wire.StateCancelled || got["cancelled"] != true || got["cancelled_at"] == nil {
					t.Errorf("first cancel: %s, want state cancelled, cancelled true and cancelled_at", body)
				}
				cancelledAt = got["cancelled_at"]
			},
		},
		{
			name: "cancel again", srv: main, op: cancel, path: laterPath, token: token, status: 200, requestValid: true,
			check: func(t *testing.T, body []byte) {
				got := fieldsOf(t, body, "state", "cancelled", "cancelled_at")
				if got["state"] != wire.StateCancelled || got["cancelled"] != false || got["cancelled_at"] != cancelledAt {
					t.Errorf("second cancel: %s, want state cancelled, cancelled false and the first cancelled_at %v", body, cancelledAt)
				}
			},
		},
		{
			name: "cancelled job status", srv: main, op: status, path: laterPath, token: token, status: 200, requestValid: true,
			check: func(t *testing.T, body []byte) {
				got := fieldsOf(t, body, "state", "cancelled_at")
				if got["state"] != wire.StateCancelled || got["cancelled_at"] != cancelledAt {
					t.Errorf("status after the cancel: %s, want state cancelled and cancelled_at %v", body, cancelledAt)
				}
			},
		},
		{name: "cancel unknown job", srv: main, op: cancel, path: "/v1/notifications/nope", token: token, status: 404, requestValid: true, check: wantMessage("no job with this id")},
		{name: "cancel without token", srv: main, op: cancel, path: jobPath, status: 401},
		{name: "cancel, redis down", srv: down, op: cancel, path: jobPath, token: token, status: 503, requestValid: true},

		{
			name: "recipients of a finished job", srv: main, op: recipients, path: jobPath + "/recipients?state=delivered&limit=10", token: token, status: 200, requestValid: true,
			check: func(t *testing.T, body []byte) {
				if got := fieldsOf(t, body, "retired", "items"); got["retired"] != true {
					t.Errorf("recipients of a done job: %s, want retired", body)
				}
			},
		},
		{name: "recipients, unknown state", srv: main, op: recipients, path: jobPath + "/recipients?state=lost", token: token, status: 400, check: wantMessagePart("state: want one of")},
		{name: "recipients, limit too large", srv: main, op: recipients, path: jobPath + "/recipients?limit=5000", token: token, status: 400, check: wantMessagePart("limit: want 1 to 1000")},
		{name: "recipients, bad cursor", srv: main, op: recipients, path: jobPath + "/recipients?cursor=x", token: token, status: 400, check: wantMessagePart("cursor: want the next_cursor")},
		{name: "recipients of an unknown job", srv: main, op: recipients, path: "/v1/notifications/nope/recipients", token: token, status: 404, requestValid: true},
		{name: "recipients without token", srv: main, op: recipients, path: jobPath + "/recipients", status: 401},
		{name: "recipients, redis down", srv: down, op: recipients, path: jobPath + "/recipients", token: token, status: 503, requestValid: true},
		{name: "throttle status", srv: main, op: getThrottle, path: userPath, token: token, status: 200, requestValid: true},
		{
			name: "throttle status in a time zone", srv: main, op: getThrottle, path: userPath + "?timezone=Europe/Berlin", token: token, status: 200, requestValid: true,
			check: func(t *testing.T, body []byte) {
				if got := fieldsOf(t, body, "timezone"); got["timezone"] != "Europe/Berlin" {
					t.Errorf("timezone %v, want Europe/Berlin", got["timezone"])
				}
			},
		},
		{
			name: "throttle status in no time zone", srv: main, op: getThrottle, path: userPath + "?timezone=Mars/Olympus", token: token, status: 400, requestValid: true,
			check: wantMessage(`timezone: unknown time zone "Mars/Olympus" (want an IANA name such as Europe/Berlin)`),
		},
		{
			name: "throttle status of an unknown app", srv: main, op: getThrottle, path: userPath + "?app=nope", token: token, status: 400, requestValid: true,
			check: wantMessage(`app: unknown app "nope" (configured: default)`),
		},
		{
			name: "throttle reset of an unknown app", srv: main, op: resetThrottle, path: userPath + "?app=nope", token: token, status: 400, requestValid: true,
			check: wantMessage(`app: unknown app "nope" (configured: default)`),
		},
		{
			name: "throttle status in the server's own zone", srv: main, op: getThrottle, path: userPath + "?timezone=Local", token: token, status: 400, requestValid: true,
			check: wantMessage(`timezone: "Local" is the server machine's own zone, meaningless to a client (want an IANA name such as Europe/Berlin)`),
		},
		{
			name: "throttle status with categories and quiet hours", srv: cats, op: getThrottle, path: "/v1/users/u-k/throttle?timezone=America/New_York", token: token, status: 200, requestValid: true,
			check: func(t *testing.T, body []byte) {
				var st wire.ThrottleStatus
				if err := json.Unmarshal(body, &st); err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, c := range st.Categories {
					names = append(names, c.Name)
				}
				if st.Timezone != "America/New_York" || st.QuietHours != "22:00-08:00" || !slices.Equal(names, []string{"marketing", "transactional"}) {
					t.Fatalf("%s: want the zone asked for, the quiet hours 22:00-08:00, categories marketing and transactional", body)
				}
				if m := st.Categories[0]; m.Rules != "2/24h,1/4h@1h quiet=21:00-09:00" || m.QuietHours != "21:00-09:00" || len(m.Entries) != 2 || len(m.Held) == 0 {
					t.Errorf("marketing %+v: want its rules and quiet hours, 2 entries, the second one held", m)
				}
			},
		},
		{name: "throttle status without token", srv: main, op: getThrottle, path: userPath, status: 401},
		{name: "throttle status, no admin", srv: plain, op: getThrottle, path: userPath, token: token, status: 501, requestValid: true},
		{name: "throttle status, redis down", srv: down, op: getThrottle, path: userPath, token: token, status: 503, requestValid: true},
		{name: "throttle reset", srv: main, op: resetThrottle, path: userPath, token: token, status: 200, requestValid: true},
		{name: "throttle reset without token", srv: main, op: resetThrottle, path: userPath, status: 401},
		{name: "throttle reset, no admin", srv: plain, op: resetThrottle, path: userPath, token: token, status: 501, requestValid: true},
		{name: "throttle reset, redis down", srv: down, op: resetThrottle, path: userPath, token: token, status: 503, requestValid: true},
		{name: "put preferences", srv: main, op: putPrefs, path: prefsPath, token: token, body: prefsBody, status: 200, requestValid: true},
		{name: "put preferences, bad quiet hours", srv: main, op: putPrefs, path: prefsPath, token: token, body: `{"quiet_hours": "25:00-07:00"}`, status: 400, requestValid: true,
			wantFields: []string{"quiet_hours"}},
		{name: "put preferences, unknown field", srv: main, op: putPrefs, path: prefsPath, token: token, body: `{"colour": "red"}`, status: 400, wantFields: []string{"colour"}},
		{name: "put preferences, too many opt-outs", srv: main, op: putPrefs, path: prefsPath, token: token, body: manyOptOuts(throttle.MaxOptOuts+1, 3), status: 400, wantFields: []string{"opt_out"}},
		{name: "put preferences without token", srv: main, op: putPrefs, path: prefsPath, body: prefsBody, status: 401},
		{name: "put preferences of an unknown app", srv: main, op: putPrefs, path: prefsPath + "?app=nope", token: token, body: prefsBody, status: 404, requestValid: true,
			check: wantMessage(`app: unknown app "nope" (configured: default)`)},
		{name: "put preferences too large", srv: main, op: putPrefs, path: prefsPath, token: token, body: manyOptOuts(throttle.MaxOptOuts, throttle.MaxCategoryLen), status: 413, requestValid: true},
		{name: "put preferences, no preferences", srv: plain, op: putPrefs, path: prefsPath, token: token, body: prefsBody, status: 501, requestValid: true},
		{name: "put preferences, redis down", srv: down, op: putPrefs, path: prefsPath, token: token, body: prefsBody, status: 503, requestValid: true},
		{name: "get preferences", srv: main, op: getPrefs, path: prefsPath, token: token, status: 200, requestValid: true,
			check: func(t *testing.T, body []byte) {
				if got := fieldsOf(t, body, "opt_out", "timezone"); fmt.Sprint(got["opt_out"]) != "[marketing]" || got["timezone"] != "Europe/Paris" {
					t.Errorf("GET after PUT: %s, want the preferences put", body)
				}
			}},
		{name: "get preferences of none", srv: main, op: getPrefs, path: "/v1/users/u-none/preferences", token: token, status: 200, requestValid: true},
		{name: "delete preferences", srv: main, op: deletePrefs, path: prefsPath, token: token, status: 200, requestValid: true},
		{name: "delete user", srv: main, op: deleteUser, path: "/v1/users/u-c", token: token, status: 200, requestValid: true},
		{name: "getPrefs, no app named among several", srv: two.srv, op: getPrefs, path: prefsPath, token: allToken, status: 400, requestValid: true, check: wantMessagePart("app: required")},
		{name: "getPrefs without token", srv: main, op: getPrefs, path: prefsPath, status: 401},
		{name: "getPrefs of another app", srv: two.srv, op: getPrefs, path: prefsPath + "?app=courier", token: shopToken, status: 403, requestValid: true},
		{name: "getPrefs of an unknown app", srv: main, op: getPrefs, path: prefsPath + "?app=nope", token: token, status: 404, requestValid: true},
		{name: "getPrefs, no preferences", srv: plain, op: getPrefs, path: prefsPath, token: token, status: 501, requestValid: true},
		{name: "getPrefs, redis down", srv: down, op: getPrefs, path: prefsPath, token: token, status: 503, requestValid: true},
		{name: "deletePrefs, no app named among several", srv: two.srv, op: deletePrefs, path: prefsPath, token: allToken, status: 400, requestValid: true, check: wantMessagePart("app: required")},
		{name: "deletePrefs without token", srv: main, op: deletePrefs, path: prefsPath, status: 401},
		{name: "deletePrefs of another app", srv: two.srv, op: deletePrefs, path: prefsPath + "?app=courier", token: shopToken, status: 403, requestValid: true},
		{name: "deletePrefs of an unknown app", srv: main, op: deletePrefs, path: prefsPath + "?app=nope", token: token, status: 404, requestValid: true},
		{name: "deletePrefs, no preferences", srv: plain, op: deletePrefs, path: prefsPath, token: token, status: 501, requestValid: true},
		{name: "deletePrefs, redis down", srv: down, op: deletePrefs, path: prefsPath, token: token, status: 503, requestValid: true},
		{name: "deleteUser, no app named among several", srv: two.srv, op: deleteUser, path: "/v1/users/u-c", token: allToken, status: 400, requestValid: true, check: wantMessagePart("app: required")},
		{name: "deleteUser without token", srv: main, op: deleteUser, path: "/v1/users/u-c", status: 401},
		{name: "deleteUser of another app", srv: two.srv, op: deleteUser, path: "/v1/users/u-c" + "?app=courier", token: shopToken, status: 403, requestValid: true},
		{name: "deleteUser of an unknown app", srv: main, op: deleteUser, path: "/v1/users/u-c" + "?app=nope", token: token, status: 404, requestValid: true},
		{name: "deleteUser, no preferences", srv: plain, op: deleteUser, path: "/v1/users/u-c", token: token, status: 501, requestValid: true},
		{name: "deleteUser, redis down", srv: down, op: deleteUser, path: "/v1/users/u-c", token: token, status: 503, requestValid: true},
		{name: "put preferences of another app", srv: two.srv, op: putPrefs, path: prefsPath + "?app=courier", token: shopToken, body: prefsBody, status: 403, requestValid: true},
		{name: "events", srv: main, op: "GET /v1/events", path: "/v1/events?limit=10", token: token, status: 200, requestValid: true},
		{name: "events oldest first", srv: main, op: "GET /v1/events", path: "/v1/events?after=0-0&type=dropped", token: token, status: 200, requestValid: true},
		{name: "events, limit too large", srv: main, op: "GET /v1/events", path: "/v1/events?limit=5000", token: token, status: 400},
		{name: "events without token", srv: main, op: "GET /v1/events", path: "/v1/events", status: 401},
		{name: "events, redis down", srv: down, op: "GET /v1/events", path: "/v1/events", token: token, status: 503, requestValid: true},
		{name: "webhook", srv: main, op: "GET /v1/webhook", path: "/v1/webhook", token: token, status: 200, requestValid: true},
		{name: "webhook without token", srv: main, op: "GET /v1/webhook", path: "/v1/webhook", status: 401},
		{name: "webhook, redis down", srv: down, op: "GET /v1/webhook", path: "/v1/webhook", token: token, status: 503, requestValid: true},
		{name: "webhook enable", srv: main, op: "POST /v1/webhook:enable", path: "/v1/webhook:enable", token: token, status: 200, requestValid: true},
		{name: "webhook enable without token", srv: main, op: "POST /v1/webhook:enable", path: "/v1/webhook:enable", status: 401},
		{name: "webhook enable, redis down", srv: down, op: "POST /v1/webhook:enable", path: "/v1/webhook:enable", token: token, status: 503, requestValid: true},

		// A token for the app shop only, on a server of courier and shop.
		{name: "submit for another app", srv: two.srv, op: submit, token: shopToken, body: courierJob, status: 403, requestValid: true},
		{
			name: "batch with another app's job", srv: two.srv, op: batch, token: shopToken, body: `{"jobs":[` + courierJob + `]}`, status: 200, requestValid: true,
			check: wantAnswers(wire.BatchAnswer{Status: 403, Error: &wire.ErrorDetail{Message: `app "courier": this token acts for the app shop only`}}),
		},
		{name: "status of another app's job", srv: two.srv, op: status, path: "/v1/notifications/c-1", token: shopToken, status: 403, requestValid: true},
		{name: "cancel of another app's job", srv: two.srv, op: cancel, path: "/v1/notifications/c-1", token: shopToken, status: 403, requestValid: true},
		{name: "recipients of another app's job", srv: two.srv, op: recipients, path: "/v1/notifications/c-1/recipients", token: shopToken, status: 403, requestValid: true},
		{name: "throttle status of another app", srv: two.srv, op: getThrottle, path: "/v1/users/u-1/throttle?app=courier", token: shopToken, status: 403, requestValid: true},
		{name: "throttle reset of another app", srv: two.srv, op: resetThrottle, path: "/v1/users/u-1/throttle?app=courier", token: shopToken, status: 403, requestValid: true},
		{name: "events of another app", srv: two.srv, op: "GET /v1/events", path: "/v1/events?app=courier", token: shopToken, status: 403, requestValid: true},
		{name: "webhook with a token of one app", srv: two.srv, op: "GET /v1/webhook", path: "/v1/webhook", token: shopToken, status: 403, requestValid: true},
		{name: "webhook enable with a token of one app", srv: two.srv, op: "POST /v1/webhook:enable", path: "/v1/webhook:enable", token: shopToken, status: 403, requestValid: true},

		{name: "healthz", srv: main, op: "GET /healthz", status: 200, requestValid: true},
		{name: "readyz", srv: main, op: "GET /readyz", status: 200, requestValid: true},
		{
			name: "readyz, redis down", srv: down, op: "GET /readyz", status: 503, requestValid: true,
			// The probe answers without authentication: it names no
			// address or server text.
			check: func(t *testing.T, body []byte) {
				wantMessage("not ready: task server not running; redis unavailable")(t, body)
				for _, leak := range []string{"127.0.0.1", "dial", "connect", "refused"} {
					if bytes.Contains(body, []byte(leak)) {
						t.Errorf("/readyz body %s shows %q", body, leak)
					}
				}
			},
		},
		{name: "metrics", srv: main, op: "GET /metrics", status: 200, requestValid: true},
		{name: "openapi", srv: main, op: "GET /openapi.yaml", status: 200, requestValid: true},
	}

	hits := map[string][]string{} // operation -> statuses seen
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.before != nil {
				c.before()
			}
			body := checkContract(t, api, c)
			if c.check != nil {
				c.check(t, body)
			}
			hits[c.op] = append(hits[c.op], fmt.Sprint(c.status))
			if c.op == "GET /openapi.yaml" && !bytes.Equal(body, docs.OpenAPI) {
				t.Errorf("GET /openapi.yaml is not docs/openapi.yaml")
			}
		})
	}

	t.Run("every documented status is produced", func(t *testing.T) {
		for op, codes := range api.operations() {
			for _, code := range codes {
				if !slices.Contains(hits[op], code) {
					t.Errorf("%s: no case produces the documented %s", op, code)
				}
			}
		}
	})

	t.Run("wrong method: 405 with Allow", func(t *testing.T) {
		for path := range api.model.Paths.PathItems.KeysFromOldest() {
			documented := api.methods(path)
			concrete := strings.ReplaceAll(path, "{id}", "x")
			for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
				if slices.Contains(documented, method) {
					continue
				}
				resp, body := send(t, main, method, concrete, "", "")
				what := method + " " + concrete
				if resp.StatusCode != http.StatusMethodNotAllowed {
					t.Errorf("%s: %d %s, want 405", what, resp.StatusCode, body)
					continue
				}
				allow := strings.Split(resp.Header.Get("Allow"), ", ")
				slices.Sort(allow)
				if diff := cmp.Diff(documented, allow); diff != "" {
					t.Errorf("%s: Allow (-documented +got):\n%s", what, diff)
				}
				if method != http.MethodHead {
					api.validateError(t, what, body)
				}
			}
		}
	})

	t.Run("unknown path: 404", func(t *testing.T) {
		for _, path := range []string{"/", "/v2/notifications", "/v1/notifications/a/b", "/v1/users/u/throttle/x"} {
			resp, body := send(t, main, http.MethodGet, path, token, "")
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: %d %s, want 404", path, resp.StatusCode, body)
				continue
			}
			api.validateError(t, "GET "+path, body)
		}
	})
}

// checkContract makes c's request, checks its status, validates the
// request and the response against the description, and returns the
// response body.
func checkContract(t *testing.T, api openAPI, c contractCase) []byte {
	t.Helper()
	method, template, _ := strings.Cut(c.op, " ")
	path := c.path
	if path == "" {
		path = template
	}
	resp, body := send(t, c.srv, method, path, c.token, c.body)
	if resp.StatusCode != c.status {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, body, c.status)
	}
	req := newRequest(t, c.srv, method, path, c.token, c.body)
	ok, errs := api.v.ValidateHttpRequest(req)
	switch {
	case c.requestValid && !ok:
		t.Errorf("the request does not conform to the description:%s", describe(errs))
	case !c.requestValid && ok:
		t.Errorf("the description accepts a request the server refuses with %d", c.status)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := api.v.ValidateHttpResponse(newRequest(t, c.srv, method, path, c.token, c.body), resp); !ok {
		t.Errorf("the %d answer %s does not conform to the description:%s", resp.StatusCode, body, describe(errs))
	}
	if c.status >= 400 {
		api.validateError(t, c.op, body) // the same envelope, checked by name
	}
	if c.wantFields != nil {
		var env struct {
			Error struct {
				Problems []wire.Problem `json:"problems"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range env.Error.Problems {
			got = append(got, p.Field)
		}
		if diff := cmp.Diff(c.wantFields, got); diff != "" {
			t.Errorf("problem fields (-want +got):\n%s\nbody: %s", diff, body)
		}
	}
	return body
}

func newRequest(t *testing.T, srv *httptest.Server, method, path, token, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// send makes one request and returns the answer with its body read.
func send(t *testing.T, srv *httptest.Server, method, path, token, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := srv.Client().Do(newRequest(t, srv, method, path, token, body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// withDevice returns a job for one user with one device and an alert,
// with more fields (",\"k\":v") appended.
func withDevice(platform, token, more string) string {
	return `{"recipients":[{"user_id":"u","devices":[{"platform":"` + platform + `","token":"` + token + `"}]}],"alert":{"title":"t"}` + more + `}`
}

// fieldsOf returns the named top-level fields of a JSON object (absent
// ones are nil).
func fieldsOf(t *testing.T, body []byte, names ...string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	out := map[string]any{}
	for _, n := range names {
		out[n] = m[n]
	}
	return out
}

// wantAnswers checks a batch's answers: status, id, duplicate, and for an
// error its message and its problems' fields.
func wantAnswers(want ...wire.BatchAnswer) func(t *testing.T, body []byte) {
	return func(t *testing.T, body []byte) {
		t.Helper()
		var got wire.BatchResults
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		for _, a := range got.Results {
			if a.Error != nil {
				for i := range a.Error.Problems {
					a.Error.Problems[i].Message = "" // the fields are checked, not the wording
				}
			}
		}
		if diff := cmp.Diff(want, got.Results); diff != "" {
			t.Errorf("answers (-want +got):\n%s", diff)
		}
	}
}

// wantMessage checks an error answer's message.
func wantMessage(want string) func(t *testing.T, body []byte) {
	return func(t *testing.T, body []byte) {
		t.Helper()
		var env wire.ErrorBody
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		if env.Error.Message != want {
			t.Errorf("message %q, want %q", env.Error.Message, want)
		}
	}
}

// categoriesWorker returns a Worker (not running) on rdb whose policy has
// quiet hours and two categories, with its limiter under a prefix of its
// own, and user holding two marketing bookings: the second an hour (the
// category's gap) after the first, held.
func categoriesWorker(t *testing.T, rdb redis.UniversalClient, user string) *worker.Worker {
	t.Helper()
	policy, err := throttle.ParsePolicy("5/1m", "1s")
	if err != nil {
		t.Fatal(err)
	}
	if policy.Quiet, err = throttle.ParseQuiet("22:00-08:00"); err != nil {
		t.Fatal(err)
	}
	if policy.Categories, err = throttle.ParseCategories("marketing=2/1d,1/4h@1h quiet=21:00-09:00; transactional=none global=off"); err != nil {
		t.Fatal(err)
	}
	lim, err := throttle.NewRedis(rdb, policy, throttle.Options{Prefix: "hush:contract-categories:"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := []throttle.Request{{User: user, Member: "k-1/0", Category: "marketing"}, {User: user, Member: "k-2/0", Category: "marketing"}}
	if _, err := lim.ReserveBatch(t.Context(), reqs); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(rdb, worker.Options{Limiter: lim, Policy: policy, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// limiterOnly hides every method but Limiter's, as a limiter that cannot
// report or reset a user's state would.
type limiterOnly struct{ worker.Limiter }

// redisDownWorker returns a Worker (not running) whose Redis has stopped.
func redisDownWorker(t *testing.T) *worker.Worker {
	t.Helper()
	srv := redistest.Start(t)
	// Without retries: each request fails at once instead of after
	// go-redis's backoff.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	lim, err := throttle.NewRedis(rdb, throttle.Policy{MinGap: time.Second}, throttle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// With senders for the job's platform the job is valid: its
	// submission reaches Redis.
	w, err := worker.New(rdb, worker.Options{Limiter: lim, Senders: senders(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Down()
	return w
}

// manyOptOuts is a preferences body opting out of n categories of size
// bytes each.
func manyOptOuts(n, size int) string {
	names := make([]string, n)
	for i := range names {
		name := fmt.Sprintf("c%d", i)
		names[i] = `"` + name + strings.Repeat("x", max(size-len(name), 0)) + `"`
	}
	return `{"opt_out": [` + strings.Join(names, ",") + `]}`
}

// wantMessagePart checks that an error answer's message holds part.
func wantMessagePart(part string) func(t *testing.T, body []byte) {
	return func(t *testing.T, body []byte) {
		t.Helper()
		var env wire.ErrorBody
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(env.Error.Message, part) {
			t.Errorf("message %q, want it to hold %q", env.Error.Message, part)
		}
	}
}
