package webpush

import (
	"crypto/ecdh"
	"encoding/base64"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return b
}

// RFC 8291 Appendix A.
const (
	rfcPlaintext = "When I grow up, I want to be a watermelon"
	rfcASPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
	rfcUAPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
	rfcUAPublic  = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
	rfcAuth      = "BTBZMqHH6r4Tts7J_aSIgg"
	rfcSalt      = "DGv6ra1nlYgDCS1FRnbzlw"
	rfcBody      = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
)

func TestEncryptRFC8291AppendixA(t *testing.T) {
	as, err := ecdh.P256().NewPrivateKey(b64(t, rfcASPrivate))
	if err != nil {
		t.Fatal(err)
	}
	ua, err := ecdh.P256().NewPublicKey(b64(t, rfcUAPublic))
	if err != nil {
		t.Fatal(err)
	}
	got, err := encrypt([]byte(rfcPlaintext), ua, b64(t, rfcAuth), as, b64(t, rfcSalt))
	if err != nil {
		t.Fatalf("encrypt: %v", err)
	}
	if d := cmp.Diff(rfcBody, base64.RawURLEncoding.EncodeToString(got)); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
}

// RFC 8188 §3.1: one record, no key id, rs 4096.
func TestEncryptRecordRFC8188Section31(t *testing.T) {
	const want = "I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg"
	got, err := encryptRecord([]byte("I am the walrus"), b64(t, "yqdlZ-tYemfogSmv7Ws5PQ"), b64(t, "I1BsxtFttlv3u_Oo94xnmw"), nil)
	if err != nil {
		t.Fatalf("encryptRecord: %v", err)
	}
	if d := cmp.Diff(want, base64.RawURLEncoding.EncodeToString(got)); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
}
