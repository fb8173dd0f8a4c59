package fcm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/messaging"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"
)

// Config configures the FCM sender.
type Config struct {
	// CredentialsFile is a service-account JSON; its token_uri is honoured.
	CredentialsFile string
	// ProjectID is the Firebase project; empty: the JSON's project_id.
	ProjectID string
	// Endpoint overrides the messaging endpoint, e.g. "http://127.0.0.1:9999/v1".
	Endpoint string
}

// tokenTimeout bounds one access-token request to the token endpoint.
const tokenTimeout = 10 * time.Second

// The OAuth scopes the access token is requested for.
const (
	scopeMessaging = "https://www.googleapis.com/auth/firebase.messaging"
	scopeCloud     = "https://www.googleapis.com/auth/cloud-platform"
)

// Sender sends pushes to FCM. It is safe for concurrent use; make one per
// process.
type Sender struct {
	client  *messaging.Client
	tokens  oauth2.TokenSource
	now     func() time.Time
	project string
}

// Project is the Firebase project the sender sends for: Config.ProjectID,
// else the credentials file's project_id.
func (s *Sender) Project() string { return s.project }

// New builds the sender from a service-account JSON. It does not fetch a
// token or connect: Warm or the first Send does. Errors name the configuration key
// at fault; one about a single field is a *FieldError.
func New(ctx context.Context, cfg Config) (*Sender, error) {
	if cfg.CredentialsFile == "" {
		return nil, fieldErr("credentials_file", errors.New("required"))
	}
	data, err := os.ReadFile(cfg.CredentialsFile)
	if err != nil {
		return nil, fieldErr("credentials_file", err)
	}
	if err := checkServiceAccount(data); err != nil {
		return nil, fieldErr("credentials_file", fmt.Errorf("%q %w", cfg.CredentialsFile, err))
	}
	jwtCfg, err := google.JWTConfigFromJSON(data, scopeMessaging, scopeCloud)
	if err != nil {
		return nil, fieldErr("credentials_file", err)
	}
	if cfg.ProjectID == "" {
		var sa struct {
			ProjectID string `json:"project_id"`
		}
		if err := json.Unmarshal(data, &sa); err != nil || sa.ProjectID == "" {
			return nil, fieldErr("project_id", errors.New("required (the credentials file names no project_id)"))
		}
		cfg.ProjectID = sa.ProjectID
	}
	opts := []option.ClientOption{}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fieldErr("endpoint", fmt.Errorf("%q is not an http(s):// URL", cfg.Endpoint))
		}
		opts = append(opts, option.WithEndpoint(cfg.Endpoint))
	}

	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 256
	// The token source outlives New's ctx; it only carries the HTTP client
	// used to reach the token endpoint.
	tokenCtx := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient,
		&http.Client{Transport: base, Timeout: tokenTimeout})
	tokens := jwtCfg.TokenSource(tokenCtx)
	hc := &http.Client{Transport: oneAttempt{base: &oauth2.Transport{Source: tokens, Base: base}}}

	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: cfg.ProjectID}, append(opts, option.WithHTTPClient(hc))...)
	if err != nil {
		return nil, fmt.Errorf("fcm: %w", err)
	}
	client, err := app.Messaging(ctx)
	if err != nil {
		return nil, fmt.Errorf("fcm: %w", err)
	}
	return &Sender{client: client, tokens: tokens, now: time.Now, project: cfg.ProjectID}, nil
}

// wantServiceAccount says what a credentials file must be.
const wantServiceAccount = `want a Firebase service-account key: the JSON file of Project settings > Service accounts > Generate new private key, with "type": "service_account", "client_email" and "private_key"`

// checkServiceAccount says what is wrong with data as a service-account
// key, in an operator's words; the JSON decoder's own ("invalid character
// '-' in numeric literal", for a PEM key) is kept as the cause.
func checkServiceAccount(data []byte) error {
	var sa struct {
		Type        string `json:"type"`
		ClientEmail string `json:"client_email"`
		PrivateKey  string `json:"private_key"`
	}
	if err := json.Unmarshal(data, &sa); err != nil {
		return fmt.Errorf("is not a JSON object (%w): %s", err, wantServiceAccount)
	}
	switch {
	case sa.Type != "service_account":
		return fmt.Errorf("has \"type\": %q: %s", sa.Type, wantServiceAccount)
	case sa.ClientEmail == "" || sa.PrivateKey == "":
		return fmt.Errorf("has no client_email or no private_key: %s", wantServiceAccount)
	}
	return nil
}

// FieldError is a Config field New cannot use. Field names it as an apps
// file does ("credentials_file"); its message names the environment key
// (HUSH_FCM_CREDENTIALS_FILE), so a caller that read the field from
// elsewhere names it its own way from Field and Err.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string {
	return "fcm: HUSH_FCM_" + strings.ToUpper(e.Field) + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field string, err error) error { return &FieldError{Field: field, Err: err} }

// Warm fetches the access token now, so that the first pushes of a burst do
// not all queue behind one token request (late for their limiter slots), and
// a rejected service account shows when the process starts. The token is
// cached and refreshed as it nears expiry; a failure is classified like a
// Send's (Credential for a rejected key).
func (s *Sender) Warm() providers.Result {
	if _, err := s.tokens.Token(); err != nil {
		r := classifyToken(err)
		r.Err = fmt.Errorf("fcm: access token: %w", err)
		return r
	}
	return providers.Result{Outcome: providers.Delivered}
}

// Send sends p to FCM and classifies the answer.
func (s *Sender) Send(ctx context.Context, p providers.Push) providers.Result {
	if p.Content == nil {
		return providers.Result{Outcome: providers.Permanent, Reason: "no content", Err: errors.New("fcm: push has no content")}
	}
	rendered, err := payload.RenderFCM(p.Content)
	if err != nil {
		return providers.Result{Outcome: providers.Permanent, Reason: "payload", Err: fmt.Errorf("fcm: %w", err)}
	}
	now := s.now()
	msg, err := message(rendered, p.Token, p.Expiry, now)
	if err != nil {
		return providers.Result{Outcome: providers.Permanent, Reason: "payload", Err: fmt.Errorf("fcm: %w", err)}
	}
	// Get the access token first (cached until it nears expiry): the SDK
	// would flatten a token endpoint failure into an opaque transport error
	// and retry it four times.
	if _, err := s.tokens.Token(); err != nil {
		r := classifyToken(err)
		r.Err = fmt.Errorf("fcm: access token: %w", err)
		return r
	}
	ctx, cancel := context.WithTimeout(providers.WithSendBy(ctx, p.SendBy), providers.CallTimeout)
	defer cancel()
	a := &attempt{sendBy: p.SendBy}
	_, err = s.client.Send(withAttempt(ctx, a), msg)
	switch {
	case a.late:
		return providers.Result{Outcome: providers.Transient, Reason: "late for its slot", Err: fmt.Errorf("fcm: %w", providers.ErrNotSent)}
	case a.netErr != nil:
		err = a.netErr // the real cause, not the stop answer
	}
	r := classify(ctx, err, now)
	if a.rewrote {
		r.RetryAfter = retryAfter(a.retryAfter, now)
	}
	if r.Err != nil {
		// An answer may quote the message, token included: logs may show
		// only its ends.
		r.Err = providers.RedactToken(fmt.Errorf("fcm: %w", r.Err), p.Token)
	}
	return r
}
