package webpush

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// JWTLifetime is how far ahead a VAPID JWT's exp lies; RFC 8292 §2 lets a
// push service refuse more than 24 hours.
const JWTLifetime = 12 * time.Hour

// jwtRenewBefore is how long before its exp a cached JWT is replaced, so
// no push leaves with one about to lapse in transit or on a skewed clock.
const jwtRenewBefore = time.Hour

// VAPIDKey is an application server's key pair (RFC 8292).
type VAPIDKey struct {
	priv *ecdsa.PrivateKey
}

// GenerateVAPIDKey makes a new P-256 key pair.
func GenerateVAPIDKey() (VAPIDKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return VAPIDKey{}, err
	}
	return VAPIDKey{priv: k}, nil
}

// ParseVAPIDKey reads a private key written as base64url of its 32-byte
// scalar (the form web-push's generateVAPIDKeys and PrivateKey write).
func ParseVAPIDKey(s string) (VAPIDKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return VAPIDKey{}, errors.New("not base64url")
	}
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), raw)
	if err != nil {
		return VAPIDKey{}, fmt.Errorf("not a P-256 private key (want the 32-byte scalar): %w", err)
	}
	return VAPIDKey{priv: k}, nil
}

// PrivateKey is the private key as base64url of its 32-byte scalar.
func (k VAPIDKey) PrivateKey() string {
	b, err := k.priv.Bytes()
	if err != nil {
		// A key made by GenerateVAPIDKey or ParseVAPIDKey is on P-256.
		panic("webpush: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// PublicKey is the public key as base64url of its 65-byte uncompressed
// point: the k= of the Authorization header and the applicationServerKey a
// web app passes to pushManager.subscribe.
func (k VAPIDKey) PublicKey() string {
	b, err := k.priv.PublicKey.Bytes()
	if err != nil {
		panic("webpush: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// checkSubject accepts a contact RFC 8292 §2.1 allows: a mailto: or https:
// URI.
func checkSubject(sub string) error {
	u, err := url.Parse(sub)
	switch {
	case sub == "":
		return errors.New("required: a mailto: or https: URI a push service can reach you at")
	case err != nil:
		return fmt.Errorf("%q is not a URI", sub)
	case u.Scheme == "mailto" && u.Opaque != "":
		return nil
	case u.Scheme == "https" && u.Host != "":
		return nil
	}
	return fmt.Errorf("%q is neither a mailto: nor an https: URI", sub)
}

// jwt signs a VAPID JWT for aud (a push service's origin) that expires at
// exp: ES256, the signature r||s of 32 bytes each (RFC 7515 §A.3).
func (k VAPIDKey) jwt(aud, sub string, exp time.Time) (string, error) {
	claims, err := json.Marshal(struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}{aud, exp.Unix(), sub})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(`{"typ":"JWT","alg":"ES256"}`)) + "." + enc.EncodeToString(claims)
	h := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, k.priv, h[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + enc.EncodeToString(sig), nil
}

// vapidSigner hands out the Authorization header per push-service origin,
// signing a new JWT when the cached one nears its exp.
type vapidSigner struct {
	key     VAPIDKey
	subject string
	public  string

	mu    sync.Mutex
	cache map[string]signed
}

// maxCachedOrigins bounds the JWT cache.
const maxCachedOrigins = 1024

type signed struct {
	header string
	exp    time.Time
}

func newVAPIDSigner(key VAPIDKey, subject string) *vapidSigner {
	return &vapidSigner{key: key, subject: subject, public: key.PublicKey(), cache: map[string]signed{}}
}

// authorization is the Authorization header for a push to origin at now.
func (v *vapidSigner) authorization(origin string, now time.Time) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if c, ok := v.cache[origin]; ok && now.Before(c.exp.Add(-jwtRenewBefore)) {
		return c.header, nil
	}
	exp := now.Add(JWTLifetime)
	t, err := v.key.jwt(origin, v.subject, exp)
	if err != nil {
		return "", err
	}
	h := "vapid t=" + t + ", k=" + v.public
	if len(v.cache) >= maxCachedOrigins {
		// UnifiedPush distributors can be many self-hosted origins: the
		// cache is a saving, not a registry.
		clear(v.cache)
	}
	v.cache[origin] = signed{header: h, exp: exp}
	return h, nil
}
