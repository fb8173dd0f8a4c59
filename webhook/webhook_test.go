package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/testkit"
)

// The Standard Webhooks libraries' own test vector
// (libraries/go/webhook_test.go, TestWebhookSign).
const (
	vecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecTS     = 1614265330
	vecBody   = `{"test": 2432232314}`
	vecSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustSecret(t *testing.T, s string) Secret {
	t.Helper()
	sec, err := ParseSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

func TestSignatureMatchesTheSpecificationsVector(t *testing.T) {
	got := Signature([]Secret{mustSecret(t, vecSecret)}, vecID, time.Unix(vecTS, 0), []byte(vecBody))
	if got != vecSig {
		t.Errorf("signature %q, want the specification's %q", got, vecSig)
	}
}

func TestVerify(t *testing.T) {
	old := mustSecret(t, vecSecret)
	fresh, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	newer := mustSecret(t, fresh)
	now := time.Unix(vecTS, 0)
	body := []byte(vecBody)
	signed := func(secrets ...Secret) http.Header {
		h := http.Header{}
		Sign(h, secrets, vecID, now, body)
		return h
	}
	for _, tc := range []struct {
		name    string
		h       http.Header
		body    []byte
		now     time.Time
		secrets []Secret
		want    error
	}{
		{"signed with the receiver's secret", signed(old), body, now, []Secret{old}, nil},
		{"sender mid-rotation signs with both", signed(old, newer), body, now, []Secret{newer}, nil},
		{"receiver mid-rotation knows both", signed(newer), body, now, []Secret{old, newer}, nil},
		{"another secret", signed(newer), body, now, []Secret{old}, ErrNoSignature},
		{"body changed", signed(old), []byte(`{"test": 2432232315}`), now, []Secret{old}, ErrNoSignature},
		{"id changed", func() http.Header { h := signed(old); h.Set(HeaderID, "msg_other"); return h }(), body, now, []Secret{old}, ErrNoSignature},
		{"timestamp changed", func() http.Header { h := signed(old); h.Set(HeaderTimestamp, strconv.Itoa(vecTS+1)); return h }(), body, now, []Secret{old}, ErrNoSignature},
		{"unknown version only", func() http.Header {
			h := signed(old)
			h.Set(HeaderSignature, strings.Replace(h.Get(HeaderSignature), "v1,", "v2,", 1))
			return h
		}(), body, now, []Secret{old}, ErrNoSignature},
		{"replayed after the tolerance", signed(old), body, now.Add(Tolerance + time.Second), []Secret{old}, ErrTooOld},
		{"from beyond the tolerance ahead", signed(old), body, now.Add(-Tolerance - time.Second), []Secret{old}, ErrTooNew},
		{"within the tolerance", signed(old), body, now.Add(Tolerance), []Secret{old}, nil},
		{"no signature header", func() http.Header { h := signed(old); h.Del(HeaderSignature); return h }(), body, now, []Secret{old}, ErrMissingHeaders},
		{"timestamp not a number", func() http.Header { h := signed(old); h.Set(HeaderTimestamp, "1614265330.5"); return h }(), body, now, []Secret{old}, ErrBadTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(tc.secrets, tc.h, tc.body, tc.now); !errors.Is(err, tc.want) {
				t.Errorf("Verify: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseSecrets(t *testing.T) {
	fresh, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if got := mustSecret(t, fresh).String(); got != fresh {
		t.Errorf("String of %q is %q", fresh, got)
	}
	list, err := ParseSecrets(vecSecret + ", " + fresh)
	if err != nil || len(list) != 2 {
		t.Fatalf("ParseSecrets of two: %v, %d secrets", err, len(list))
	}
	for _, tc := range []struct{ in, want string }{
		{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "secret 1: want whsec_<base64>"},
		{vecSecret + ",whsec_***", "secret 2: the part after whsec_ is not standard base64"},
		{"whsec_c2hvcnQ=", "secret 1: the key after whsec_ is 5 bytes, want 24 to 64"},
		{" , ", "no secret given"},
	} {
		_, err := ParseSecrets(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSecrets(%q): %v, want %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(tc.in, "MfKQ") && strings.Contains(err.Error(), "MfKQ") {
			t.Errorf("ParseSecrets(%q): the error shows the secret: %v", tc.in, err)
		}
	}
}

// TestImportsOnlyStdlib: the package needs nothing beyond the standard
// library, as doc.go promises a backend that verifies with it.
func TestImportsOnlyStdlib(t *testing.T) {
	testkit.OnlyImports(t, "github.com/hushpush/hush/webhook")
}
