package apns

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/sideshow/apns2"
	"github.com/sideshow/apns2/token"
)

// Config configures the APNs sender. Set either the token-auth fields
// (KeyFile, KeyID, TeamID) or the certificate-auth fields (CertFile,
// CertPassword).
type Config struct {
	KeyFile, KeyID, TeamID string // token auth (.p8)
	CertFile, CertPassword string // certificate auth (.p12), alternative
	Topic                  string
	Production             bool   // false: sandbox host
	Endpoint               string // overrides the host, e.g. "https://127.0.0.1:4443"
	CAFile                 string // PEM; trust it (in addition to system roots) for Endpoint
}

// Sender sends pushes to APNs. It is safe for concurrent use; make one per
// process.
type Sender struct {
	client *apns2.Client
	topic  string
}

// New builds the sender and checks its credentials can be loaded and used
// to sign. It does not connect: the first Send does. Errors name the
// configuration key at fault; one about a single field is a *FieldError.
func New(cfg Config) (*Sender, error) {
	if cfg.Topic == "" {
		return nil, fieldErr("topic", errors.New("required (the app's bundle id)"))
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	var client *apns2.Client
	switch {
	case cfg.KeyFile != "" && cfg.CertFile != "":
		return nil, errors.New("apns: HUSH_APNS_KEY_FILE and HUSH_APNS_CERT_FILE: set one, not both")
	case cfg.KeyFile != "":
		tok, err := loadToken(cfg)
		if err != nil {
			return nil, err
		}
		client = apns2.NewTokenClient(tok)
	case cfg.CertFile != "":
		cert, err := loadP12(cfg.CertFile, cfg.CertPassword)
		if err != nil {
			return nil, err
		}
		client = apns2.NewClient(cert)
		tlsCfg.Certificates = []tls.Certificate{cert}
	default:
		return nil, errors.New("apns: HUSH_APNS_KEY_FILE or HUSH_APNS_CERT_FILE: one is required")
	}
	client.Host = apns2.HostDevelopment
	if cfg.Production {
		client.Host = apns2.HostProduction
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fieldErr("endpoint", fmt.Errorf("%q is not an https:// URL", cfg.Endpoint))
		}
		client.Host = u.Scheme + "://" + u.Host
	}
	if cfg.CAFile != "" {
		pool, err := caPool(cfg.CAFile)
		if err != nil {
			return nil, fieldErr("ca_file", err)
		}
		tlsCfg.RootCAs = pool
	}
	// Every exchange is bounded end to end (providers.Transport): nothing
	// leaves after the push's SendBy, and the answer is back once its
	// status is.
	client.HTTPClient = &http.Client{Transport: providers.Transport{Base: transport(tlsCfg)}, Timeout: providers.CallTimeout}
	return &Sender{client: client, topic: cfg.Topic}, nil
}

// FieldError is a Config field New cannot use. Field names it as an apps
// file does ("key_file"); its message names the environment key
// (HUSH_APNS_KEY_FILE), so a caller that read the field from elsewhere
// names it its own way from Field and Err.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string {
	return "apns: HUSH_APNS_" + strings.ToUpper(e.Field) + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field string, err error) error { return &FieldError{Field: field, Err: err} }

func loadToken(cfg Config) (*token.Token, error) {
	switch {
	case cfg.KeyID == "":
		return nil, fieldErr("key_id", errors.New("required with HUSH_APNS_KEY_FILE"))
	case cfg.TeamID == "":
		return nil, fieldErr("team_id", errors.New("required with HUSH_APNS_KEY_FILE"))
	}
	key, err := token.AuthKeyFromFile(cfg.KeyFile)
	if err != nil {
		return nil, fieldErr("key_file", err)
	}
	tok := &token.Token{AuthKey: key, KeyID: cfg.KeyID, TeamID: cfg.TeamID}
	// apns2 ignores signing errors when it refreshes the token; sign once
	// here so a bad key fails at start.
	if _, err := tok.Generate(); err != nil {
		return nil, fieldErr("key_file", fmt.Errorf("sign a provider token: %w", err))
	}
	return tok, nil
}

// caPool is the system roots plus the certificates in file.
func caPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate found", file)
	}
	return pool, nil
}

// transport is an HTTP/2-only transport with health-check pings, like
// apns2's, built on net/http rather than the deprecated x/net/http2 one.
func transport(tlsCfg *tls.Config) *http.Transport {
	var protocols http.Protocols
	protocols.SetHTTP2(true)
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: 20 * time.Second,
		IdleConnTimeout:     0, // keep the connection: Apple wants it long-lived
		Protocols:           &protocols,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: apns2.ReadIdleTimeout,
			PingTimeout:     15 * time.Second,
		},
	}
}

// Send sends p to APNs and classifies the answer. It never returns a nil
// error for a non-delivery: Result.Err explains Transient and Permanent.
func (s *Sender) Send(ctx context.Context, p providers.Push) providers.Result {
	if p.Content == nil {
		return providers.Result{Outcome: providers.Permanent, Reason: "no content", Err: errors.New("apns: push has no content")}
	}
	body, err := payload.RenderAPNs(p.Content)
	if err != nil {
		return providers.Result{Outcome: providers.Permanent, Reason: "payload", Err: fmt.Errorf("apns: %w", err)}
	}
	n := &apns2.Notification{
		ApnsID:      apnsID(p.ID),
		CollapseID:  p.Content.CollapseKey,
		DeviceToken: p.Token,
		Topic:       s.topic,
		Expiration:  p.Expiry,
		Priority:    p.Content.APNsPriority(),
		PushType:    apns2.EPushType(p.Content.APNsPushType()),
		Payload:     body,
	}
	if !p.SendBy.IsZero() && time.Now().After(p.SendBy) {
		return providers.Result{Outcome: providers.Transient, Reason: "late for its slot", Err: fmt.Errorf("apns: %w", providers.ErrNotSent)}
	}
	res, err := s.client.PushWithContext(providers.WithSendBy(ctx, p.SendBy), n)
	if errors.Is(err, providers.ErrNotSent) {
		return providers.Result{Outcome: providers.Transient, Reason: "late for its slot", Err: fmt.Errorf("apns: %w", providers.ErrNotSent)}
	}
	r := classify(res, err)
	if r.Err != nil && err != nil {
		r.Err = fmt.Errorf("apns: %w", err)
	}
	// The transport's errors carry the request URL, which ends in the
	// device token: logs may show only its ends.
	r.Err = providers.RedactToken(r.Err, p.Token)
	return r
}

// Warm opens the connection to APNs now (TCP, TLS and HTTP/2 set-up), so
// that the first pushes of a burst do not wait on it and reach APNs late for
// their slots. It asks for "/", which APNs answers with 404 BadPath without
// effect; any HTTP answer means the connection is up and kept for Send.
func (s *Sender) Warm(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.client.Host+"/", nil)
	if err != nil {
		return fmt.Errorf("apns: connect: %w", err)
	}
	res, err := s.client.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("apns: connect: %w", err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return nil
}

// Close closes the idle connections.
func (s *Sender) Close() { s.client.CloseIdleConnections() }

// apnsID derives the apns-id from the push id: a version 5 (SHA-1) UUID in
// the URL namespace of "hush:push:<id>". The same push gets the same apns-id
// on every retry.
func apnsID(id string) string {
	if id == "" {
		return ""
	}
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("hush:push:"+id)).String()
}
