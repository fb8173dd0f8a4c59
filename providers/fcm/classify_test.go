//lint:file-ignore SA1019 the table covers every messaging helper, deprecated aliases included.

package fcm

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"firebase.google.com/go/v4/messaging"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/fake"
)

// helpers is every exported Is* function of firebase messaging.
var helpers = map[string]func(error) bool{
	"IsInternal":                       messaging.IsInternal,
	"IsInvalidAPNSCredentials":         messaging.IsInvalidAPNSCredentials,
	"IsThirdPartyAuthError":            messaging.IsThirdPartyAuthError,
	"IsInvalidArgument":                messaging.IsInvalidArgument,
	"IsMessageRateExceeded":            messaging.IsMessageRateExceeded,
	"IsQuotaExceeded":                  messaging.IsQuotaExceeded,
	"IsMismatchedCredential":           messaging.IsMismatchedCredential,
	"IsSenderIDMismatch":               messaging.IsSenderIDMismatch,
	"IsRegistrationTokenNotRegistered": messaging.IsRegistrationTokenNotRegistered,
	"IsUnregistered":                   messaging.IsUnregistered,
	"IsServerUnavailable":              messaging.IsServerUnavailable,
	"IsUnavailable":                    messaging.IsUnavailable,
	"IsTooManyTopics":                  messaging.IsTooManyTopics,
	"IsUnknown":                        messaging.IsUnknown,
}

// alwaysFalse are the deprecated helpers the SDK hard-wires to false.
var alwaysFalse = map[string]bool{"IsTooManyTopics": true, "IsUnknown": true}

// classifyCases: an FCM answer, the helpers that recognise the SDK's error
// for it, and the classification. A 503 carries a Retry-After beyond the
// SDK's 2-minute cap so that the SDK answers at once instead of retrying.
var classifyCases = []struct {
	name    string
	answer  fake.Answer
	helpers []string
	want    providers.Result
}{
	{"UNREGISTERED", fake.Unregistered(), []string{"IsUnregistered", "IsRegistrationTokenNotRegistered"},
		providers.Result{Outcome: providers.TokenInvalid, Reason: "UNREGISTERED", StatusCode: 404}},
	{"SENDER_ID_MISMATCH", fake.Status(403), []string{"IsSenderIDMismatch", "IsMismatchedCredential"},
		providers.Result{Outcome: providers.TokenInvalid, Reason: "SENDER_ID_MISMATCH", StatusCode: 403}},
	{"INVALID_ARGUMENT, bad token", fake.BadToken(), []string{"IsInvalidArgument"},
		providers.Result{Outcome: providers.TokenInvalid, Reason: "INVALID_ARGUMENT: registration token", StatusCode: 400}},
	{"INVALID_ARGUMENT, token message only",
		fake.FCMError(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token"),
		[]string{"IsInvalidArgument"},
		providers.Result{Outcome: providers.TokenInvalid, Reason: "INVALID_ARGUMENT: registration token", StatusCode: 400}},
	{"INVALID_ARGUMENT, bad payload",
		fake.FCMError(400, "INVALID_ARGUMENT", `Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration)`),
		[]string{"IsInvalidArgument"},
		providers.Result{Outcome: providers.Permanent, Reason: "INVALID_ARGUMENT", StatusCode: 400}},
	{"QUOTA_EXCEEDED", fake.TooMany(30 * time.Second), []string{"IsQuotaExceeded", "IsMessageRateExceeded"},
		providers.Result{Outcome: providers.Throttled, Reason: "QUOTA_EXCEEDED", StatusCode: 429, RetryAfter: 30 * time.Second}},
	{"QUOTA_EXCEEDED without Retry-After", fake.FCMError(429, "QUOTA_EXCEEDED", ""), []string{"IsQuotaExceeded", "IsMessageRateExceeded"},
		providers.Result{Outcome: providers.Throttled, Reason: "QUOTA_EXCEEDED", StatusCode: 429}},
	{"UNAVAILABLE", fake.Status(503).WithRetryAfter(5 * time.Minute), []string{"IsUnavailable", "IsServerUnavailable"},
		providers.Result{Outcome: providers.Transient, Reason: "UNAVAILABLE", StatusCode: 503, RetryAfter: 5 * time.Minute}},
	{"INTERNAL", fake.Status(500), []string{"IsInternal"},
		providers.Result{Outcome: providers.Transient, Reason: "INTERNAL", StatusCode: 500}},
	{"THIRD_PARTY_AUTH_ERROR", fake.Status(401), []string{"IsThirdPartyAuthError", "IsInvalidAPNSCredentials"},
		providers.Result{Outcome: providers.Permanent, Reason: "THIRD_PARTY_AUTH_ERROR", StatusCode: 401, Credential: true}},
	{"APNS_AUTH_ERROR", fake.FCMError(401, "APNS_AUTH_ERROR", ""), []string{"IsThirdPartyAuthError", "IsInvalidAPNSCredentials"},
		providers.Result{Outcome: providers.Permanent, Reason: "THIRD_PARTY_AUTH_ERROR", StatusCode: 401, Credential: true}},
	// No FcmError detail: the platform status decides.
	{"UNAUTHENTICATED", fake.FCMError(401, "", "Request had invalid authentication credentials."), nil,
		providers.Result{Outcome: providers.Permanent, Reason: "UNAUTHENTICATED", StatusCode: 401, Credential: true}},
	{"PERMISSION_DENIED", fake.FCMError(403, "", "Permission 'cloudmessaging.messages.create' denied"), nil,
		providers.Result{Outcome: providers.Permanent, Reason: "PERMISSION_DENIED", StatusCode: 403, Credential: true}},
	{"NOT_FOUND (project)", fake.FCMError(404, "", ""), nil,
		providers.Result{Outcome: providers.Permanent, Reason: "NOT_FOUND", StatusCode: 404}},
	{"RESOURCE_EXHAUSTED", fake.FCMError(429, "", "").WithRetryAfter(7 * time.Second), nil,
		providers.Result{Outcome: providers.Throttled, Reason: "RESOURCE_EXHAUSTED", StatusCode: 429, RetryAfter: 7 * time.Second}},
	{"502", fake.FCMError(502, "", ""), nil,
		providers.Result{Outcome: providers.Transient, Reason: "502", StatusCode: 502}},
	{"409", fake.FCMError(409, "", ""), nil,
		providers.Result{Outcome: providers.Permanent, Reason: "409", StatusCode: 409}},
}

// TestEveryHelperClassified sends through the real SDK to the fake: the
// SDK's raw error must satisfy exactly the listed helpers, and Send must
// classify it as wanted.
func TestEveryHelperClassified(t *testing.T) {
	f, s := startFake(t)
	covered := map[string]bool{}
	for _, tc := range classifyCases {
		t.Run(tc.name, func(t *testing.T) {
			tok := "tok-" + strings.ReplaceAll(tc.name, " ", "-")
			f.Script(tok, tc.answer)

			// The raw SDK error, as Send sees it before classifying.
			if _, err := s.tokens.Token(); err != nil {
				t.Fatal(err)
			}
			_, err := s.client.Send(context.Background(), &messaging.Message{Token: tok})
			if err == nil {
				t.Fatal("SDK Send succeeded")
			}
			want := map[string]bool{}
			for _, h := range tc.helpers {
				want[h] = true
				covered[h] = true
			}
			for name, is := range helpers {
				if got := is(err); got != want[name] {
					t.Errorf("messaging.%s(err) = %v, want %v (err: %v)", name, got, want[name], err)
				}
			}

			got := s.Send(context.Background(), alertPush(tok))
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(providers.Result{}, "Err")); diff != "" {
				t.Errorf("Send (-want +got):\n%s", diff)
			}
			wantErr := tc.want.Outcome == providers.Transient || tc.want.Outcome == providers.Permanent
			if (got.Err != nil) != wantErr {
				t.Errorf("Err = %v for %v", got.Err, got.Outcome)
			}
		})
	}
	for name := range helpers {
		if !covered[name] && !alwaysFalse[name] {
			t.Errorf("messaging.%s is true for no case in classifyCases", name)
		}
	}
}

// TestHelpersComplete parses firebase messaging's source and fails when it
// exports an Is* helper that the helpers table does not list.
func TestHelpersComplete(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "firebase.google.com/go/v4").Output()
	if err != nil {
		t.Fatalf("go list firebase: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "messaging")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range parsed.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if ok && fd.Recv == nil && fd.Name.IsExported() && strings.HasPrefix(fd.Name.Name, "Is") {
				found = append(found, fd.Name.Name)
			}
		}
	}
	for _, name := range found {
		if helpers[name] == nil {
			t.Errorf("messaging.%s is not in the helpers table", name)
		}
	}
	if len(found) != len(helpers) {
		t.Errorf("messaging exports %d Is* helpers, the table lists %d", len(found), len(helpers))
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name, header string
		want         time.Duration
	}{
		{"absent", "", 0},
		{"seconds", "120", 2 * time.Minute},
		{"HTTP date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"date in the past", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"garbage", "soon", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.header, now); got != tt.want {
				t.Errorf("retryAfter(%q) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}
