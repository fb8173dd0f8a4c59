package apns_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/fake"
	"github.com/sideshow/apns2"
)

// reasonCases lists every apns2.Reason* constant with the status APNs
// answers it with and the outcome hush must classify it into.
var reasonCases = []struct {
	reason     string
	status     int
	want       providers.Outcome
	credential bool
}{
	{apns2.ReasonBadCollapseID, 400, providers.Permanent, false},
	{apns2.ReasonBadDeviceToken, 400, providers.TokenInvalid, false},
	{apns2.ReasonBadExpirationDate, 400, providers.Permanent, false},
	{apns2.ReasonBadMessageID, 400, providers.Permanent, false},
	{apns2.ReasonBadPriority, 400, providers.Permanent, false},
	{apns2.ReasonBadTopic, 400, providers.Permanent, false},
	{apns2.ReasonDeviceTokenNotForTopic, 400, providers.TokenInvalid, false},
	{apns2.ReasonDuplicateHeaders, 400, providers.Permanent, false},
	{apns2.ReasonIdleTimeout, 400, providers.Transient, false},
	{apns2.ReasonInvalidPushType, 400, providers.Permanent, false},
	{apns2.ReasonMissingDeviceToken, 400, providers.TokenInvalid, false},
	{apns2.ReasonMissingTopic, 400, providers.Permanent, false},
	{apns2.ReasonPayloadEmpty, 400, providers.Permanent, false},
	{apns2.ReasonTopicDisallowed, 400, providers.Permanent, false},
	{apns2.ReasonBadCertificate, 403, providers.Permanent, true},
	{apns2.ReasonBadCertificateEnvironment, 403, providers.Permanent, true},
	{apns2.ReasonExpiredProviderToken, 403, providers.Permanent, true},
	{apns2.ReasonForbidden, 403, providers.Permanent, true},
	{apns2.ReasonInvalidProviderToken, 403, providers.Permanent, true},
	{apns2.ReasonMissingProviderToken, 403, providers.Permanent, true},
	{apns2.ReasonBadPath, 404, providers.Permanent, false},
	{apns2.ReasonMethodNotAllowed, 405, providers.Permanent, false},
	{apns2.ReasonExpiredToken, 410, providers.TokenInvalid, false},
	{apns2.ReasonUnregistered, 410, providers.TokenInvalid, false},
	{apns2.ReasonPayloadTooLarge, 413, providers.Permanent, false},
	{apns2.ReasonTooManyProviderTokenUpdates, 429, providers.Throttled, false},
	{apns2.ReasonTooManyRequests, 429, providers.Throttled, false},
	{apns2.ReasonInternalServerError, 500, providers.Transient, false},
	{apns2.ReasonServiceUnavailable, 503, providers.Transient, false},
	{apns2.ReasonShutdown, 503, providers.Transient, false},
}

func alertPush(token string) providers.Push {
	return providers.Push{
		ID: "job/u/" + token, Platform: payload.APNs, Token: token,
		Content: &payload.Content{Alert: &payload.Alert{Title: "t", Body: "b"}},
	}
}

// ignoreErr compares Results without Err; tests check Err separately.
var ignoreErr = cmpopts.IgnoreFields(providers.Result{}, "Err")

// TestEveryReasonClassified sends through the real apns2 client to the fake
// answering each reason, and checks the classification.
func TestEveryReasonClassified(t *testing.T) {
	f, s := startFake(t)
	for _, tc := range reasonCases {
		t.Run(tc.reason, func(t *testing.T) {
			tok := "tok-" + tc.reason
			f.Script(tok, fake.APNsReason(tc.status, tc.reason))
			got := s.Send(context.Background(), alertPush(tok))
			want := providers.Result{Outcome: tc.want, Reason: tc.reason, StatusCode: tc.status, Credential: tc.credential}
			if diff := cmp.Diff(want, got, ignoreErr); diff != "" {
				t.Errorf("Send (-want +got):\n%s", diff)
			}
			wantErr := tc.want == providers.Transient || tc.want == providers.Permanent
			var aerr *apns.Error
			if wantErr != errors.As(got.Err, &aerr) {
				t.Errorf("Err = %v; want an *apns.Error: %v", got.Err, wantErr)
			}
		})
	}
}

// TestReasonCasesComplete parses apns2's response.go and fails when a
// Reason* constant has no row in reasonCases (a new apns2 version).
func TestReasonCasesComplete(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/sideshow/apns2").Output()
	if err != nil {
		t.Fatalf("go list apns2: %v", err)
	}
	file := filepath.Join(strings.TrimSpace(string(out)), "response.go")
	parsed, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, tc := range reasonCases {
		listed[tc.reason] = true
	}
	var found int
	for _, decl := range parsed.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Reason") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Errorf("%s: not a string literal", name.Name)
					continue
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				found++
				if !listed[value] {
					t.Errorf("apns2.%s (%q) has no row in reasonCases", name.Name, value)
				}
			}
		}
	}
	if found != len(reasonCases) {
		t.Errorf("response.go has %d Reason constants, reasonCases %d rows", found, len(reasonCases))
	}
}

func TestSendOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		answers []fake.Answer
		ctx     time.Duration // send deadline, 0: none
		want    providers.Result
	}{
		{"delivered", []fake.Answer{fake.OK()}, 0, providers.Result{Outcome: providers.Delivered, StatusCode: 200}},
		{"unregistered", []fake.Answer{fake.Unregistered()}, 0,
			providers.Result{Outcome: providers.TokenInvalid, Reason: "Unregistered", StatusCode: 410}},
		{"bad device token", []fake.Answer{fake.BadToken()}, 0,
			providers.Result{Outcome: providers.TokenInvalid, Reason: "BadDeviceToken", StatusCode: 400}},
		{"too many requests, no Retry-After from apns2", []fake.Answer{fake.TooMany(30 * time.Second)}, 0,
			providers.Result{Outcome: providers.Throttled, Reason: "TooManyRequests", StatusCode: 429}},
		{"500", []fake.Answer{fake.Status(500)}, 0,
			providers.Result{Outcome: providers.Transient, Reason: "InternalServerError", StatusCode: 500}},
		{"503", []fake.Answer{fake.Status(503)}, 0,
			providers.Result{Outcome: providers.Transient, Reason: "ServiceUnavailable", StatusCode: 503}},
		{"unknown reason, 400", []fake.Answer{fake.APNsReason(400, "SomethingNew")}, 0,
			providers.Result{Outcome: providers.Permanent, Reason: "SomethingNew", StatusCode: 400}},
		{"unknown reason, 502", []fake.Answer{fake.APNsReason(502, "")}, 0,
			providers.Result{Outcome: providers.Transient, Reason: "502", StatusCode: 502}},
		{"slower than the deadline", []fake.Answer{fake.OK().WithLatency(2 * time.Second)}, 100 * time.Millisecond,
			providers.Result{Outcome: providers.Transient, Reason: "timeout"}},
		{"503 twice then delivered: first answer", []fake.Answer{fake.Status(503), fake.Status(503), fake.OK()}, 0,
			providers.Result{Outcome: providers.Transient, Reason: "ServiceUnavailable", StatusCode: 503}},
	}
	f, s := startFake(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := "tok-" + strings.ReplaceAll(tt.name, " ", "-")
			f.Script(tok, tt.answers...)
			ctx := context.Background()
			if tt.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctx)
				defer cancel()
			}
			got := s.Send(ctx, alertPush(tok))
			if diff := cmp.Diff(tt.want, got, ignoreErr); diff != "" {
				t.Errorf("Send (-want +got):\n%s", diff)
			}
			if (got.Err != nil) != (tt.want.Outcome == providers.Transient || tt.want.Outcome == providers.Permanent) {
				t.Errorf("Err = %v for outcome %v", got.Err, got.Outcome)
			}
		})
	}
}

// TestScriptedSequence checks a retry sees the next scripted answer: two
// 503s, then delivered.
func TestScriptedSequence(t *testing.T) {
	f, s := startFake(t)
	f.Script("flaky", fake.Status(503), fake.Status(503), fake.OK())
	var got []providers.Outcome
	for range 4 {
		got = append(got, s.Send(context.Background(), alertPush("flaky")).Outcome)
	}
	want := []providers.Outcome{providers.Transient, providers.Transient, providers.Delivered, providers.Delivered}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}
