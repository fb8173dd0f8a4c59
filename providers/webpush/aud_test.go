package webpush

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
)

// roundTripFunc answers a request without a network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// subscriptionFor is a subscription token with fresh keys at endpoint.
func subscriptionFor(t *testing.T, endpoint string) string {
	t.Helper()
	ua, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	b, err := json.Marshal(map[string]any{"endpoint": endpoint, "keys": map[string]string{
		"p256dh": enc.EncodeToString(ua.PublicKey().Bytes()), "auth": enc.EncodeToString(make([]byte, 16))}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestVAPIDAudIsTheOrigin: the JWT's aud is the endpoint's origin as a
// push service computes it (RFC 8292 §2, RFC 6454): the host lower-cased
// and the default port 443 left out, whatever the endpoint spells.
func TestVAPIDAudIsTheOrigin(t *testing.T) {
	k, _ := GenerateVAPIDKey()
	s, err := New(Config{PrivateKey: k.PrivateKey(), Subject: "mailto:ops@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	var auds []string
	s.client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		tok, _, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Authorization"), "vapid t="), ", k=")
		parts := strings.Split(tok, ".")
		var claims struct {
			Aud string `json:"aud"`
		}
		if len(parts) == 3 {
			cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
			_ = json.Unmarshal(cb, &claims)
		}
		auds = append(auds, claims.Aud)
		return &http.Response{StatusCode: http.StatusCreated, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})
	for _, endpoint := range []string{
		"https://fcm.googleapis.com/fcm/send/x",
		"https://fcm.googleapis.com:443/fcm/send/x",
		"https://FCM.GoogleAPIs.com/fcm/send/x",
		"https://Web.Push.Apple.com:443/x",
	} {
		auds = nil
		content := &payload.Content{Alert: &payload.Alert{Title: "t"}}
		r := s.Send(t.Context(), providers.Push{Platform: payload.WebPush, Token: subscriptionFor(t, endpoint), Content: content})
		want := "https://fcm.googleapis.com"
		if strings.Contains(endpoint, "pple") {
			want = "https://web.push.apple.com"
		}
		if r.Outcome != providers.Delivered || len(auds) != 1 || auds[0] != want {
			t.Errorf("endpoint %s: Send = %+v, aud %q, want delivered with aud %q", endpoint, r, auds, want)
		}
	}
}
