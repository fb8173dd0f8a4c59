package webpush

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
)

// Config configures the Web Push sender: the app's VAPID key pair and
// contact.
type Config struct {
	// PrivateKey is the VAPID private key, base64url of its 32-byte scalar
	// (hush webpush keys prints one).
	PrivateKey string
	// PublicKey, when set, must be PrivateKey's public key: it is what the
	// web app subscribed with, and a mismatch is refused by every push
	// service.
	PublicKey string
	// Subject is the contact a push service can reach the sender at: a
	// mailto: or https: URI (the JWT's sub).
	Subject string
	// CAFile, when set, is a PEM bundle trusted besides the system roots
	// (a push service behind a private CA, or a local fake).
	CAFile string
	// Egress is the policy for subscriptions' endpoints, checked by
	// CheckToken at submit and by Send at every dial.
	Egress Egress
	// MaxConns caps the open connections across every push service;
	// zero: MaxConnsDefault.
	MaxConns int
	// IdleTimeout is how long an idle connection stays open; zero:
	// IdleTimeoutDefault.
	IdleTimeout time.Duration
}

// DefaultTTL is the TTL of a push without an expiry: RFC 8030 leaves the
// longest to the push service, hush asks for its own longest ttl.
const DefaultTTL = payload.MaxTTL

// Sender sends pushes to Web Push services. It is safe for concurrent use;
// make one per app.
type Sender struct {
	client *http.Client
	egress *EgressPolicy
	pool   *connPool
	vapid  *vapidSigner
	now    func() time.Time
}

// New checks cfg and builds the sender; it connects to nothing. Errors name
// the configuration key at fault; one about a single field is a
// *FieldError.
func New(cfg Config) (*Sender, error) {
	if cfg.PrivateKey == "" {
		return nil, fieldErr("private_key", errors.New("required (hush webpush keys makes a pair)"))
	}
	key, err := ParseVAPIDKey(cfg.PrivateKey)
	if err != nil {
		return nil, fieldErr("private_key", err)
	}
	if cfg.PublicKey != "" && strings.TrimRight(cfg.PublicKey, "=") != key.PublicKey() {
		return nil, fieldErr("public_key", errors.New("is not the private key's public key"))
	}
	if err := checkSubject(cfg.Subject); err != nil {
		return nil, fieldErr("subject", err)
	}
	egress, err := NewEgressPolicy(cfg.Egress)
	if err != nil {
		return nil, fieldErr("origins", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = true
	pool := newConnPool(cmp.Or(cfg.MaxConns, MaxConnsDefault), egress.dialer().DialContext)
	pool.closeIdle = tr.CloseIdleConnections
	tr.DialContext = pool.DialContext
	tr.IdleConnTimeout = cmp.Or(cfg.IdleTimeout, IdleTimeoutDefault)
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fieldErr("ca_file", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fieldErr("ca_file", errors.New("holds no PEM certificate"))
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	return &Sender{
		client: &http.Client{Transport: tr, CheckRedirect: noRedirect},
		egress: egress,
		pool:   pool,
		vapid:  newVAPIDSigner(key, cfg.Subject),
		now:    time.Now,
	}, nil
}

// noRedirect hands a redirect back as the answer: a push service answers
// a push, it does not move it, and a JWT's aud is for one origin.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// PublicKey is the VAPID public key in applicationServerKey form.
func (s *Sender) PublicKey() string { return s.vapid.public }

// Close closes the idle connections.
func (s *Sender) Close() { s.client.CloseIdleConnections() }

// OpenConns is the number of connections open to push services now.
func (s *Sender) OpenConns() int { return s.pool.open() }

// CheckToken reports the egress policy's objection to a webpush device
// token's endpoint (an *EgressError), or nil: what submit refuses beyond
// payload.Validate.
func (s *Sender) CheckToken(token string) error { return s.egress.CheckToken(token) }

// FieldError is a Config field New cannot use. Field names it as an apps
// file does ("private_key"); its message names the environment key
// (HUSH_WEBPUSH_PRIVATE_KEY).
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string {
	return "webpush: HUSH_WEBPUSH_" + strings.ToUpper(e.Field) + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field string, err error) error { return &FieldError{Field: field, Err: err} }

// Send encrypts p for its subscription, posts it to the subscription's
// endpoint and classifies the answer.
func (s *Sender) Send(ctx context.Context, p providers.Push) providers.Result {
	if p.Content == nil {
		return providers.Result{Outcome: providers.Permanent, Reason: "no content", Err: errors.New("webpush: push has no content")}
	}
	sub, keys, err := payload.ParseWebPushSubscription(p.Token)
	if err != nil {
		// Validated at submit: a token that fails here is dead to us.
		return providers.Result{Outcome: providers.TokenInvalid, Reason: "subscription: " + err.Error()}
	}
	origin, err := s.egress.CheckEndpoint(sub.Endpoint)
	if err != nil {
		return providers.Result{Outcome: providers.TokenInvalid, Reason: err.Error()}
	}
	body, err := payload.RenderWebPush(p.Content)
	if err != nil {
		return providers.Result{Outcome: providers.Permanent, Reason: "payload", Err: fmt.Errorf("webpush: %w", err)}
	}
	sealed, err := seal(body, keys)
	if err != nil {
		return providers.Result{Outcome: providers.Permanent, Reason: "encrypt", Err: fmt.Errorf("webpush: %w", err)}
	}
	now := s.now()
	auth, err := s.vapid.authorization(origin, now)
	if err != nil {
		return providers.Result{Outcome: providers.Permanent, Reason: "vapid", Credential: true, Err: fmt.Errorf("webpush: vapid jwt: %w", err)}
	}
	ctx, cancel := context.WithTimeout(providers.WithSendBy(ctx, p.SendBy), providers.CallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Endpoint, bytes.NewReader(sealed))
	if err != nil {
		return providers.Result{Outcome: providers.TokenInvalid, Reason: "subscription: endpoint"}
	}
	setHeaders(req.Header, p, now)
	req.Header.Set("Authorization", auth)
	if !p.SendBy.IsZero() && s.now().After(p.SendBy) {
		return providers.Result{Outcome: providers.Transient, Reason: "late for its slot", Err: fmt.Errorf("webpush: %w", providers.ErrNotSent)}
	}
	// The call is bounded end to end (providers.Call): nothing leaves
	// after SendBy, and the answer is back once its status is.
	resp, err := providers.Call(s.client.Do, req)
	if ee, ok := refused(err); ok {
		// The endpoint's name resolved to an address the policy refuses.
		return providers.Result{Outcome: providers.TokenInvalid, Reason: ee.Error()}
	}
	if err != nil {
		return classifyError(ctx, origin, err)
	}
	defer resp.Body.Close()
	return classify(resp.StatusCode, resp.Header.Get("Retry-After"), io.LimitReader(resp.Body, maxReasonRead), origin, s.now())
}

// seal encrypts body for a subscription with a fresh key and salt.
func seal(body []byte, keys payload.WebPushKeys) ([]byte, error) {
	as, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	return encrypt(body, keys.P256DH, keys.Auth, as, salt)
}

// setHeaders sets the RFC 8030 and RFC 8188 headers of p's request.
func setHeaders(h http.Header, p providers.Push, now time.Time) {
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Encoding", "aes128gcm")
	h.Set("TTL", strconv.FormatInt(int64(ttl(p.Expiry, now)/time.Second), 10))
	h.Set("Urgency", urgency(p.Content))
	if p.Content.CollapseKey != "" {
		h.Set("Topic", p.Content.CollapseKey)
	}
}

// ttl is how long the push service may keep the push: until expiry,
// rounded up to a second, or DefaultTTL without one.
func ttl(expiry, now time.Time) time.Duration {
	if expiry.IsZero() {
		return DefaultTTL
	}
	d := expiry.Sub(now)
	if d <= 0 {
		return 0
	}
	return (d + time.Second - 1).Truncate(time.Second)
}

// urgency maps the job's priority to RFC 8030 §5.3: an urgent job is
// "high", a silent normal one "low" (a background sync may wait for the
// device to wake), any other "normal".
func urgency(c *payload.Content) string {
	switch {
	case c.Urgent():
		return "high"
	case c.Silent:
		return "low"
	}
	return "normal"
}
