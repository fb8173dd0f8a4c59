package providers

import (
	"errors"
	"strconv"
	"time"

	"github.com/hushpush/hush/payload"
)

// Outcome classifies a provider's answer for one device.
type Outcome int

const (
	// Delivered: the provider accepted the notification.
	Delivered Outcome = iota
	// TokenInvalid: the token is dead (unregistered, bad, wrong topic or
	// sender); never retried.
	TokenInvalid
	// Throttled: the provider asked us to slow down; retry after RetryAfter
	// (or backoff when 0). Not a failure.
	Throttled
	// Transient: 5xx, network, timeout; retried with backoff.
	Transient
	// Permanent: the request cannot succeed as sent (payload too large, bad
	// topic, refused credentials). The worker archives it at once, except a
	// credential failure (Result.Credential), which it retries like a
	// transient one, since a rotated key heals it.
	Permanent
)

// Push is one notification to one device.
type Push struct {
	// ID identifies this push (job, recipient, device); stable across retries.
	// The APNs sender derives the apns-id UUID from it.
	ID       string
	Platform payload.Platform
	Token    string
	Content  *payload.Content
	// Expiry is when the provider should stop trying (zero: provider default).
	Expiry time.Time
	// UserID is the recipient the push is for (logs only; not sent).
	UserID string
	// SendBy is the latest instant the request may leave for the provider
	// (zero: no limit). A sender that would call the provider after it
	// does not, and answers a Transient Result whose Err wraps ErrNotSent.
	SendBy time.Time
}

// ErrNotSent is wrapped by the Err of a Result for a push that never left
// for the provider (it was late for Push.SendBy, or the sender gave up
// before calling): the caller may book it again, and it is no attempt.
var ErrNotSent = errors.New("not sent")

// Result is a classified provider answer.
type Result struct {
	Outcome Outcome
	// Reason is the provider's reason (APNs "Unregistered", FCM
	// "UNREGISTERED", "timeout", ...), empty when delivered.
	Reason string
	// RetryAfter is set on Throttled when the provider said how long to wait.
	RetryAfter time.Duration
	// StatusCode is the HTTP status, 0 when there was no answer.
	StatusCode int
	// Credential is true when the provider refused the app's credentials
	// for the whole app (APNs, FCM): app-wide evidence, which fails
	// /readyz.
	Credential bool
	// KeyRefusedBy is the origin of a push service that refused the app's
	// key for this one subscription (Web Push 401 or 403; the outcome is
	// TokenInvalid). One origin's refusal says nothing of the app: the
	// worker counts the distinct origins refusing the same key.
	KeyRefusedBy string
	// Err is the underlying error for Transient and Permanent, if any.
	Err error
}

// String names the outcome as logs and metrics label it: "delivered",
// "token_invalid", "throttled", "transient", "permanent".
func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case TokenInvalid:
		return "token_invalid"
	case Throttled:
		return "throttled"
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}
