package fake

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"time"
)

// jwtParts splits a compact JWT and decodes its header and claims.
func jwtParts(s string, header, claims any) (signed string, sig []byte, err error) {
	h, rest, ok := strings.Cut(s, ".")
	if !ok {
		return "", nil, errors.New("not a JWT")
	}
	c, sg, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(sg, ".") {
		return "", nil, errors.New("not a JWT")
	}
	if err := decodeSegment(h, header); err != nil {
		return "", nil, err
	}
	if err := decodeSegment(c, claims); err != nil {
		return "", nil, err
	}
	sig, err = base64.RawURLEncoding.DecodeString(sg)
	if err != nil {
		return "", nil, err
	}
	return h + "." + c, sig, nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// apnsJWT checks an APNs provider token: ES256, a key id, the team id as
// issuer, issued within the last hour. It returns the APNs reason to answer
// when the token is not acceptable. When keys is not empty, the signature
// must verify with the key named by kid.
func apnsJWT(bearer string, keys map[string]*ecdsa.PublicKey, verify bool, now time.Time) string {
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var claims struct {
		Iss string `json:"iss"`
		Iat int64  `json:"iat"`
	}
	signed, sig, err := jwtParts(bearer, &header, &claims)
	if err != nil || header.Alg != "ES256" || header.Kid == "" || claims.Iss == "" || len(sig) != 64 {
		return "InvalidProviderToken"
	}
	iat := time.Unix(claims.Iat, 0)
	if iat.Before(now.Add(-time.Hour)) {
		return "ExpiredProviderToken"
	}
	if iat.After(now.Add(time.Minute)) {
		return "InvalidProviderToken"
	}
	if len(keys) == 0 && !verify {
		return ""
	}
	pub, ok := keys[header.Kid]
	if !ok {
		return "InvalidProviderToken"
	}
	digest := sha256.Sum256([]byte(signed))
	r := new(big.Int).SetBytes(sig[:32])
	s := new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, digest[:], r, s) {
		return "InvalidProviderToken"
	}
	return ""
}

// serviceAccountJWT checks the assertion of a service-account token request:
// RS256, an issuer, the token endpoint as audience, a scope, not expired.
func serviceAccountJWT(assertion, audience string, now time.Time) error {
	var header struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Iss   string `json:"iss"`
		Aud   string `json:"aud"`
		Scope string `json:"scope"`
		Exp   int64  `json:"exp"`
	}
	_, sig, err := jwtParts(assertion, &header, &claims)
	switch {
	case err != nil:
		return err
	case header.Alg != "RS256":
		return errors.New("alg is not RS256")
	case claims.Iss == "":
		return errors.New("no issuer")
	case claims.Aud != audience:
		return errors.New("audience is not the token endpoint")
	case claims.Scope == "":
		return errors.New("no scope")
	case claims.Exp < now.Unix():
		return errors.New("expired")
	case len(sig) == 0:
		return errors.New("no signature")
	}
	return nil
}
