package fake

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"
)

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 8291 Appendix A, read from the user agent's side.
func TestDecryptWebPushRFC8291(t *testing.T) {
	const body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
	ua, err := ecdh.P256().NewPrivateKey(b64(t, "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"))
	if err != nil {
		t.Fatal(err)
	}
	auth := b64(t, "BTBZMqHH6r4Tts7J_aSIgg")
	got, err := DecryptWebPush(b64(t, body), ua, auth)
	if err != nil {
		t.Fatalf("DecryptWebPush: %v", err)
	}
	if want := "When I grow up, I want to be a watermelon"; string(got) != want {
		t.Errorf("plaintext = %q, want %q", got, want)
	}
	flipped := b64(t, body)
	flipped[len(flipped)-1] ^= 1
	if _, err := DecryptWebPush(flipped, ua, auth); err == nil {
		t.Error("DecryptWebPush accepted a body with a flipped bit")
	}
}

func TestCheckVAPID(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Unix(1_800_000_000, 0)
	const origin = "https://127.0.0.1:4443"
	enc := base64.RawURLEncoding
	pubOf := func(k *ecdsa.PrivateKey) string {
		b, _ := k.PublicKey.Bytes()
		return enc.EncodeToString(b)
	}
	header := func(signer *ecdsa.PrivateKey, k, aud, sub string, exp time.Time) string {
		claims, _ := json.Marshal(map[string]any{"aud": aud, "exp": exp.Unix(), "sub": sub})
		signing := enc.EncodeToString([]byte(`{"typ":"JWT","alg":"ES256"}`)) + "." + enc.EncodeToString(claims)
		h := sha256.Sum256([]byte(signing))
		r, s, err := ecdsa.Sign(rand.Reader, signer, h[:])
		if err != nil {
			t.Fatal(err)
		}
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		return "vapid t=" + signing + "." + enc.EncodeToString(sig) + ", k=" + k
	}
	hour := now.Add(time.Hour)
	for _, tc := range []struct {
		name, header string
		ok           bool
	}{
		{"valid", header(key, pubOf(key), origin, "mailto:ops@example.com", hour), true},
		{"https sub", header(key, pubOf(key), origin, "https://example.com/c", hour), true},
		{"signed by another key", header(other, pubOf(key), origin, "mailto:ops@example.com", hour), false},
		{"another origin", header(key, pubOf(key), "https://push.example.net", "mailto:ops@example.com", hour), false},
		{"expired", header(key, pubOf(key), origin, "mailto:ops@example.com", now.Add(-time.Second)), false},
		{"more than 24 hours", header(key, pubOf(key), origin, "mailto:ops@example.com", now.Add(25*time.Hour)), false},
		{"no contact", header(key, pubOf(key), origin, "ops@example.com", hour), false},
		{"bearer", "Bearer abc", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := checkVAPID(tc.header, origin, now)
			if (err == nil) != tc.ok {
				t.Fatalf("checkVAPID err = %v, want ok %v", err, tc.ok)
			}
			if tc.ok && k != pubOf(key) {
				t.Errorf("key = %q, want the signer's", k)
			}
		})
	}
}
