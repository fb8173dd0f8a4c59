package webpush

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
)

func TestVAPIDKeyRoundTrip(t *testing.T) {
	k, err := GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseVAPIDKey(k.PrivateKey())
	if err != nil {
		t.Fatalf("ParseVAPIDKey: %v", err)
	}
	if again.PublicKey() != k.PublicKey() {
		t.Error("the parsed key has another public key")
	}
	if n := len(k.PublicKey()); n != 87 {
		t.Errorf("public key is %d characters, want 87 (65 bytes base64url)", n)
	}
	if _, err := ParseVAPIDKey("not base64!"); err == nil {
		t.Error("ParseVAPIDKey accepted garbage")
	}
}

func TestAuthorization(t *testing.T) {
	k, _ := GenerateVAPIDKey()
	v := newVAPIDSigner(k, "mailto:ops@example.com")
	now := time.Unix(1_800_000_000, 0)
	const origin = "https://fcm.googleapis.com"
	h, err := v.authorization(origin, now)
	if err != nil {
		t.Fatal(err)
	}
	tok, key, ok := strings.Cut(strings.TrimPrefix(h, "vapid t="), ", k=")
	if !ok || !strings.HasPrefix(h, "vapid t=") || key != k.PublicKey() {
		t.Fatalf("header %q is not vapid t=..., k=<public key>", h)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("JWT has %d parts", len(parts))
	}
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if err := json.Unmarshal(cb, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.Aud != origin || claims.Sub != "mailto:ops@example.com" || claims.Exp != now.Add(JWTLifetime).Unix() {
		t.Errorf("claims = %+v", claims)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	d := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(&k.priv.PublicKey, d[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Error("signature does not verify")
	}
	// Reused within its life, renewed an hour before exp, and per origin.
	if again, _ := v.authorization(origin, now.Add(JWTLifetime-jwtRenewBefore-time.Second)); again != h {
		t.Error("a fresh JWT was signed while the cached one had more than an hour left")
	}
	if again, _ := v.authorization(origin, now.Add(JWTLifetime-jwtRenewBefore)); again == h {
		t.Error("the cached JWT was reused within an hour of its exp")
	}
	if other, _ := v.authorization("https://web.push.apple.com", now); other == h {
		t.Error("two origins share one JWT")
	}
}

func TestNewChecksConfig(t *testing.T) {
	k, _ := GenerateVAPIDKey()
	other, _ := GenerateVAPIDKey()
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no key", Config{Subject: "mailto:a@b.c"}, "private_key"},
		{"bad key", Config{PrivateKey: "xyz", Subject: "mailto:a@b.c"}, "private_key"},
		{"public key of another", Config{PrivateKey: k.PrivateKey(), PublicKey: other.PublicKey(), Subject: "mailto:a@b.c"}, "public_key"},
		{"no subject", Config{PrivateKey: k.PrivateKey()}, "subject"},
		{"http subject", Config{PrivateKey: k.PrivateKey(), Subject: "http://example.com"}, "subject"},
		{"missing ca", Config{PrivateKey: k.PrivateKey(), Subject: "mailto:a@b.c", CAFile: "/nonexistent/ca.pem"}, "ca_file"},
		{"ok", Config{PrivateKey: k.PrivateKey(), PublicKey: k.PublicKey(), Subject: "https://example.com/contact"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			var field string
			if fe, ok := err.(*FieldError); ok {
				field = fe.Field
			} else if err != nil {
				t.Fatalf("New: %v is not a *FieldError", err)
			}
			if field != tc.field {
				t.Errorf("field = %q, want %q (%v)", field, tc.field, err)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name                string
		c                   payload.Content
		expiry              time.Time
		ttl, urgency, topic string
	}{
		{"normal", payload.Content{Alert: &payload.Alert{Title: "t"}}, now.Add(1500 * time.Millisecond), "2", "normal", ""},
		{"critical", payload.Content{Alert: &payload.Alert{Title: "t"}, Priority: payload.PriorityCritical, CollapseKey: "k"}, time.Time{}, "2419200", "high", "k"},
		{"silent", payload.Content{Silent: true}, now.Add(-time.Second), "0", "low", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			setHeaders(h, pushOf(&tc.c, tc.expiry), now)
			got := []string{h.Get("TTL"), h.Get("Urgency"), h.Get("Topic"), h.Get("Content-Encoding")}
			want := []string{tc.ttl, tc.urgency, tc.topic, "aes128gcm"}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("TTL|Urgency|Topic|Content-Encoding = %v, want %v", got, want)
			}
		})
	}
}
