package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a signed request.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every secret's text form.
const SecretPrefix = "whsec_"

// Tolerance is how far a request's timestamp may lie from the receiver's
// clock before Verify refuses it as a replay (or a clock gone wrong).
const Tolerance = 5 * time.Minute

// secretBytes is the size of a secret NewSecret makes: the 256 bits of
// HMAC-SHA256's block-sized key most senders use (24 to 64 bytes are the
// specification's bounds).
const secretBytes = 32

// Secret is one signing key: the bytes behind "whsec_<base64>".
type Secret struct{ key []byte }

// ParseSecret reads "whsec_<standard base64>". The prefix is required, so a
// value pasted from the wrong place (an API token, a VAPID key) is refused
// rather than used as a key nobody else has.
func ParseSecret(s string) (Secret, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return Secret{}, fmt.Errorf("want %s<base64>, got a value without the %s prefix", SecretPrefix, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return Secret{}, fmt.Errorf("the part after %s is not standard base64: %v", SecretPrefix, err)
	}
	if len(key) < 24 || len(key) > 64 {
		return Secret{}, fmt.Errorf("the key after %s is %d bytes, want 24 to 64 (hush webhook secret makes one)", SecretPrefix, len(key))
	}
	return Secret{key: key}, nil
}

// ParseSecrets reads a comma-separated list of secrets, as
// HUSH_WEBHOOK_SECRET holds them during a rotation. An error names the
// entry by its position, never its value.
func ParseSecrets(list string) ([]Secret, error) {
	var out []Secret
	for i, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		sec, err := ParseSecret(s)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i+1, err)
		}
		out = append(out, sec)
	}
	if len(out) == 0 {
		return nil, errors.New("no secret given")
	}
	return out, nil
}

// NewSecret makes a random secret in its text form.
func NewSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// String is the secret's text form, whsec_<base64>.
func (s Secret) String() string {
	return SecretPrefix + base64.StdEncoding.EncodeToString(s.key)
}

// sign is the base64 HMAC-SHA256 of "id.timestamp.body" under s.
func (s Secret) sign(id string, ts int64, body []byte) string {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, ts, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// Signature is the webhook-signature value for body sent as id at at: one
// "v1,<signature>" per secret, separated by spaces.
func Signature(secrets []Secret, id string, at time.Time, body []byte) string {
	var b strings.Builder
	for i, s := range secrets {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(s.sign(id, at.Unix(), body))
	}
	return b.String()
}

// Sign sets the three headers on h for body sent as id at at. The id must
// not contain a '.', which would make "id.timestamp.body" ambiguous.
func Sign(h http.Header, secrets []Secret, id string, at time.Time, body []byte) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(HeaderSignature, Signature(secrets, id, at, body))
}

// Errors Verify wraps, for errors.Is.
var (
	ErrMissingHeaders = errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	ErrBadTimestamp   = errors.New("webhook-timestamp is not whole seconds since 1970")
	ErrTooOld         = errors.New("webhook-timestamp is older than the tolerance")
	ErrTooNew         = errors.New("webhook-timestamp is further ahead than the tolerance")
	ErrNoSignature    = errors.New("no signature matches any secret")
)

// Verify checks a received request: its headers h and its body as read. It
// accepts the request when any v1 signature matches any of secrets and
// the timestamp lies within Tolerance of now. Signatures are compared in
// constant time.
func Verify(secrets []Secret, h http.Header, body []byte, now time.Time) error {
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	switch at := time.Unix(ts, 0); {
	case now.Sub(at) > Tolerance:
		return ErrTooOld
	case at.Sub(now) > Tolerance:
		return ErrTooNew
	}
	for _, s := range secrets {
		want := []byte(s.sign(id, ts, body))
		for _, sig := range strings.Fields(sigs) {
			v, got, ok := strings.Cut(sig, ",")
			if ok && v == "v1" && hmac.Equal([]byte(got), want) {
				return nil
			}
		}
	}
	return ErrNoSignature
}
