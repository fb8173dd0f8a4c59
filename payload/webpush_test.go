package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rfcSubscription is a subscription with the user agent keys of RFC 8291
// Appendix A.
const rfcSubscription = `{"endpoint":"https://push.example.net/push/JzLQ3raZJfFBR0aqvOMsLrt54w4rJUsV","expirationTime":null,` +
	`"keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}}`

func TestRenderWebPushGolden(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderWebPush(&tc.content)
			if err != nil {
				t.Fatalf("RenderWebPush: %v", err)
			}
			if !json.Valid(got) {
				t.Fatalf("RenderWebPush output is not valid JSON: %s", got)
			}
			checkGolden(t, "webpush_"+tc.name+".golden", got)
		})
	}
}

func TestParseWebPushSubscription(t *testing.T) {
	sub := func(edit func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(rfcSubscription), &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	keys := func(m map[string]any) map[string]any { return m["keys"].(map[string]any) }
	for _, tc := range []struct {
		name, token, field string
	}{
		{"valid", rfcSubscription, ""},
		{"expiration time set", sub(func(m map[string]any) { m["expirationTime"] = 1767225600000 }), ""},
		{"padded keys", sub(func(m map[string]any) { keys(m)["auth"] = "BTBZMqHH6r4Tts7J_aSIgg==" }), ""},
		{"not json", "abc", "subscription"},
		{"unknown field", sub(func(m map[string]any) { m["extra"] = 1 }), "subscription"},
		{"no endpoint", sub(func(m map[string]any) { delete(m, "endpoint") }), "endpoint"},
		{"http endpoint", sub(func(m map[string]any) { m["endpoint"] = "http://push.example.net/x" }), "endpoint"},
		{"no p256dh", sub(func(m map[string]any) { delete(keys(m), "p256dh") }), "keys.p256dh"},
		{"p256dh not base64url", sub(func(m map[string]any) { keys(m)["p256dh"] = "BCVx+r7N" }), "keys.p256dh"},
		{"p256dh compressed", sub(func(m map[string]any) { keys(m)["p256dh"] = "AyVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcx" }), "keys.p256dh"},
		{"p256dh off the curve", sub(func(m map[string]any) {
			keys(m)["p256dh"] = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiX4"
		}), "keys.p256dh"},
		{"no auth", sub(func(m map[string]any) { delete(keys(m), "auth") }), "keys.auth"},
		{"short auth", sub(func(m map[string]any) { keys(m)["auth"] = "BTBZMqHH6r4Tts7J" }), "keys.auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, k, err := ParseWebPushSubscription(tc.token)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("ParseWebPushSubscription: %v", err)
				}
				if len(k.Auth) != WebPushAuthBytes || len(k.P256DH.Bytes()) != WebPushKeyBytes {
					t.Errorf("keys: auth %d bytes, p256dh %d bytes", len(k.Auth), len(k.P256DH.Bytes()))
				}
				return
			}
			fe, ok := errors.AsType[*WebPushFieldError](err)
			if !ok {
				t.Fatalf("err = %v, want a *WebPushFieldError", err)
			}
			if fe.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", fe.Field, tc.field, err)
			}
		})
	}
}

func TestValidateWebPush(t *testing.T) {
	job := func(c Content, token string) Job {
		return Job{Recipients: []Recipient{{UserID: "u", Devices: []Device{{Platform: WebPush, Token: token}}}}, Content: c}
	}
	alert := &Alert{Title: "t"}
	for _, tc := range []struct {
		name string
		job  Job
		want []FieldError
	}{
		{"valid", job(Content{Alert: alert, CollapseKey: "match-17_a"}, rfcSubscription), nil},
		{"bad key names the field", job(Content{Alert: alert}, strings.Replace(rfcSubscription, "BTBZMqHH6r4Tts7J_aSIgg", "BTBZ", 1)),
			[]FieldError{{"recipients[0].devices[0].token", "keys.auth: is 3 bytes, want 16"}}},
		{"topic too long", job(Content{Alert: alert, CollapseKey: strings.Repeat("a", 33)}, rfcSubscription),
			[]FieldError{{"collapse_key", "is sent to webpush devices as the Topic header: want at most 32 of A-Z, a-z, 0-9, - and _"}}},
		{"topic not url-safe base64", job(Content{Alert: alert, CollapseKey: "match:17"}, rfcSubscription),
			[]FieldError{{"collapse_key", "is sent to webpush devices as the Topic header: want at most 32 of A-Z, a-z, 0-9, - and _"}}},
		{"over 4096 bytes once encrypted", job(Content{Alert: &Alert{Body: strings.Repeat("x", 3993-len(`{"notification":{"body":""}}`)+1)}}, rfcSubscription),
			[]FieldError{{"alert", "rendered webpush body (4096 bytes once encrypted) is 3994 bytes, limit 3993"}}},
		{"exactly 4096 bytes once encrypted", job(Content{Alert: &Alert{Body: strings.Repeat("x", 3993-len(`{"notification":{"body":""}}`))}}, rfcSubscription), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []FieldError
			if ve, ok := errors.AsType[*ValidationError](tc.job.Validate(testNow)); ok {
				got = ve.Problems
			} else if err := tc.job.Validate(testNow); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}

func TestWebPushToken(t *testing.T) {
	indented := &bytes.Buffer{}
	if err := json.Indent(indented, []byte(rfcSubscription), "", "  "); err != nil {
		t.Fatal(err)
	}
	got, err := WebPushToken(indented.Bytes())
	if err != nil {
		t.Fatalf("WebPushToken: %v", err)
	}
	if d := cmp.Diff(rfcSubscription, got); d != "" {
		t.Errorf("token (-want +got):\n%s", d)
	}
	if _, err := WebPushToken([]byte(`{"endpoint":"ftp://x"}`)); err == nil {
		t.Error("WebPushToken accepted an ftp endpoint")
	}
}
