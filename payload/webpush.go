package payload

import (
	"bytes"
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Web Push sizes (RFC 8291, RFC 8188, RFC 8030).
const (
	// WebPushKeyBytes is the length of keys.p256dh, an uncompressed P-256
	// point.
	WebPushKeyBytes = 65
	// WebPushAuthBytes is the length of keys.auth, the auth secret.
	WebPushAuthBytes = 16
	// WebPushOverhead is what aes128gcm encryption adds to a body sent as
	// one record: the header (16-byte salt, 4-byte record size, 1-byte key
	// id length, 65-byte key id), the padding delimiter and the 16-byte
	// AEAD tag.
	WebPushOverhead = 16 + 4 + 1 + WebPushKeyBytes + 1 + 16
	// MaxWebPushBytes is the largest encrypted body a push service must
	// accept (RFC 8291 §4).
	MaxWebPushBytes = 4096
	// MaxWebPushTopicLen bounds the Topic header collapse_key becomes
	// (RFC 8030 §5.4).
	MaxWebPushTopicLen = 32
)

// WebPushSubscription is a browser's PushSubscription as JSON.stringify
// writes it. A webpush device's token is this JSON.
type WebPushSubscription struct {
	Endpoint string `json:"endpoint"`
	// ExpirationTime is accepted and not used: the push service answers
	// 404 or 410 once the subscription is gone.
	ExpirationTime *float64 `json:"expirationTime"`
	Keys           struct {
		P256DH string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// WebPushKeys are a subscription's decoded keys.
type WebPushKeys struct {
	// P256DH is the user agent's public key, 65 bytes uncompressed.
	P256DH *ecdh.PublicKey
	// Auth is the 16-byte auth secret.
	Auth []byte
}

// WebPushFieldError is a problem with one field of a subscription: Field
// is its path in the subscription JSON ("keys.p256dh").
type WebPushFieldError struct {
	Field   string
	Message string
}

func (e *WebPushFieldError) Error() string { return e.Field + ": " + e.Message }

// ParseWebPushSubscription decodes and checks a webpush device token: an
// https endpoint and base64url keys of the right lengths, the p256dh key a
// point on P-256. A problem is a *WebPushFieldError naming the field.
func ParseWebPushSubscription(token string) (WebPushSubscription, WebPushKeys, error) {
	var s WebPushSubscription
	dec := json.NewDecoder(strings.NewReader(token))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, WebPushKeys{}, &WebPushFieldError{Field: "subscription",
			Message: "is not PushSubscription JSON ({\"endpoint\":..,\"keys\":{\"p256dh\":..,\"auth\":..}}): " + err.Error()}
	}
	if dec.More() {
		return s, WebPushKeys{}, &WebPushFieldError{Field: "subscription", Message: "has data after the JSON object"}
	}
	u, err := url.Parse(s.Endpoint)
	switch {
	case s.Endpoint == "":
		return s, WebPushKeys{}, &WebPushFieldError{Field: "endpoint", Message: "is required"}
	case err != nil || u.Scheme != "https" || u.Host == "":
		return s, WebPushKeys{}, &WebPushFieldError{Field: "endpoint", Message: "must be an https URL"}
	case u.User != nil:
		return s, WebPushKeys{}, &WebPushFieldError{Field: "endpoint", Message: "must not carry userinfo (user:password@)"}
	}
	raw, err := decodeB64URL(s.Keys.P256DH)
	switch {
	case s.Keys.P256DH == "":
		return s, WebPushKeys{}, &WebPushFieldError{Field: "keys.p256dh", Message: "is required"}
	case err != nil:
		return s, WebPushKeys{}, &WebPushFieldError{Field: "keys.p256dh", Message: "is not base64url"}
	case len(raw) != WebPushKeyBytes || raw[0] != 4:
		return s, WebPushKeys{}, &WebPushFieldError{Field: "keys.p256dh",
			Message: fmt.Sprintf("is %d bytes, want a %d-byte uncompressed P-256 point", len(raw), WebPushKeyBytes)}
	}
	pub, err := ecdh.P256().NewPublicKey(raw)
	if err != nil {
		return s, WebPushKeys{}, &WebPushFieldError{Field: "keys.p256dh", Message: "is not a point on P-256"}
	}
	auth, err := decodeB64URL(s.Keys.Auth)
	switch {
	case s.Keys.Auth == "":
		return s, WebPushKeys{}, &WebPushFieldError{Field: "keys.auth", Message: "is required"}
	case err != nil:
		return s, WebPushKeys{}, &WebPushFieldError{Field: "keys.auth", Message: "is not base64url"}
	case len(auth) != WebPushAuthBytes:
		return s, WebPushKeys{}, &WebPushFieldError{Field: "keys.auth",
			Message: fmt.Sprintf("is %d bytes, want %d", len(auth), WebPushAuthBytes)}
	}
	return s, WebPushKeys{P256DH: pub, Auth: auth}, nil
}

// decodeB64URL decodes base64url with or without padding, as browsers and
// libraries write it either way.
func decodeB64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// ValidWebPushTopic reports whether t can be a Topic header: at most 32
// characters of the URL-safe base64 alphabet (RFC 8030 §5.4).
func ValidWebPushTopic(t string) bool {
	if len(t) > MaxWebPushTopicLen {
		return false
	}
	for _, r := range t {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// ErrWebPushTopic is wrapped by RenderWebPush when the collapse key cannot
// be a Topic header.
var ErrWebPushTopic = errors.New("collapse_key cannot be a Web Push Topic")

// WebPushBody is the JSON a service worker reads from a push event
// (event.data.json()). Notification is absent for a silent push.
type WebPushBody struct {
	Notification *WebPushNotification `json:"notification,omitempty"`
	Data         map[string]string    `json:"data,omitempty"`
}

// WebPushNotification holds showNotification's arguments: Title is its
// title, the rest its options (tag groups notifications as
// collapse_key does; app_badge is for navigator.setAppBadge).
type WebPushNotification struct {
	Title    string `json:"title,omitempty"`
	Body     string `json:"body,omitempty"`
	Image    string `json:"image,omitempty"`
	Tag      string `json:"tag,omitempty"`
	AppBadge *int   `json:"app_badge,omitempty"`
}

// RenderWebPush renders the body a service worker reads for c, before
// encryption:
//
//	{"notification":{"title":..,"body":..,"image":..,"tag":..,"app_badge":..},
//	 "data":{..}}
//
// tag is the collapse key, else the alert's thread id. The encrypted body
// (len + WebPushOverhead) must not exceed MaxWebPushBytes.
func RenderWebPush(c *Content) ([]byte, error) {
	b, err := renderWebPush(c)
	if err != nil {
		return nil, err
	}
	if limit := platforms[WebPush].maxBytes; len(b) > limit {
		return nil, fmt.Errorf("webpush body is %d bytes, limit %d (%d once encrypted): %w",
			len(b), limit, MaxWebPushBytes, ErrPayloadTooLarge)
	}
	return b, nil
}

func renderWebPush(c *Content) ([]byte, error) {
	body := WebPushBody{Data: c.Data}
	if !c.Silent && c.Alert != nil {
		a := c.Alert
		n := &WebPushNotification{Title: a.Title, Body: a.Body, Image: a.Image, Tag: c.CollapseKey, AppBadge: a.Badge}
		if n.Tag == "" {
			n.Tag = a.ThreadID
		}
		body.Notification = n
	}
	b, err := marshalCompact(body)
	if err != nil {
		return nil, fmt.Errorf("render webpush body: %w", err)
	}
	return b, nil
}

func webPushTokenProblem(t string) string {
	if _, _, err := ParseWebPushSubscription(t); err != nil {
		return err.Error()
	}
	return ""
}

// webPushContentProblem checks what a webpush device needs of the job
// beyond its payload size: a collapse key that can be a Topic header.
func webPushContentProblem(c *Content) (field, msg string) {
	if !ValidWebPushTopic(c.CollapseKey) {
		return "collapse_key", fmt.Sprintf("is sent to webpush devices as the Topic header: want at most %d of A-Z, a-z, 0-9, - and _", MaxWebPushTopicLen)
	}
	return "", ""
}

func webPushDataKeyProblem(*Content, string) string { return "" }

// compactJSON is a subscription written without insignificant space, for
// callers that read one from a file.
func compactJSON(b []byte) (string, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// WebPushToken is the device token for a subscription read as JSON (a
// PushSubscription file): the JSON without insignificant space, checked.
func WebPushToken(subscriptionJSON []byte) (string, error) {
	t, err := compactJSON(bytes.TrimSpace(subscriptionJSON))
	if err != nil {
		return "", &WebPushFieldError{Field: "subscription", Message: "is not JSON: " + err.Error()}
	}
	if _, _, err := ParseWebPushSubscription(t); err != nil {
		return "", err
	}
	return t, nil
}
