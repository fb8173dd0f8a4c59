package apns

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"

	"github.com/hushpush/hush/providers"
	"github.com/sideshow/apns2"
)

// reasonOutcome classifies an APNs reason (docs/delivery.md, "Provider
// outcomes per device"). known is false for a reason apns2 does not list;
// credential is true for the reasons that mean our key, token or
// certificate is wrong.
func reasonOutcome(reason string) (outcome providers.Outcome, credential, known bool) {
	switch reason {
	case apns2.ReasonBadDeviceToken, // 400
		apns2.ReasonDeviceTokenNotForTopic, // 400
		apns2.ReasonMissingDeviceToken,     // 400: an empty token is as dead as a bad one
		apns2.ReasonUnregistered,           // 410
		apns2.ReasonExpiredToken:           // 410
		return providers.TokenInvalid, false, true
	case apns2.ReasonTooManyRequests, // 429: too many pushes to one device
		apns2.ReasonTooManyProviderTokenUpdates: // 429: a later send will do
		return providers.Throttled, false, true
	case apns2.ReasonInternalServerError, // 500
		apns2.ReasonServiceUnavailable, // 503
		apns2.ReasonShutdown,           // 503
		apns2.ReasonIdleTimeout:        // 400: Apple closed an idle connection; a new one will do
		return providers.Transient, false, true
	case apns2.ReasonBadCertificate, // 403
		apns2.ReasonBadCertificateEnvironment, // 403
		apns2.ReasonExpiredProviderToken,      // 403
		apns2.ReasonForbidden,                 // 403
		apns2.ReasonInvalidProviderToken,      // 403
		apns2.ReasonMissingProviderToken:      // 403
		return providers.Permanent, true, true
	case apns2.ReasonBadCollapseID, // 400
		apns2.ReasonBadExpirationDate, // 400
		apns2.ReasonBadMessageID,      // 400
		apns2.ReasonBadPriority,       // 400
		apns2.ReasonBadTopic,          // 400
		apns2.ReasonDuplicateHeaders,  // 400
		apns2.ReasonInvalidPushType,   // 400
		apns2.ReasonMissingTopic,      // 400
		apns2.ReasonPayloadEmpty,      // 400
		apns2.ReasonTopicDisallowed,   // 400
		apns2.ReasonBadPath,           // 404
		apns2.ReasonMethodNotAllowed,  // 405
		apns2.ReasonPayloadTooLarge:   // 413
		return providers.Permanent, false, true
	}
	return providers.Transient, false, false
}

// statusOutcome classifies an answer whose reason is unknown by its status.
func statusOutcome(status int) (outcome providers.Outcome, credential bool) {
	switch {
	case status == http.StatusGone:
		return providers.TokenInvalid, false
	case status == http.StatusTooManyRequests:
		return providers.Throttled, false
	case status == http.StatusForbidden:
		return providers.Permanent, true
	case status >= 400 && status < 500:
		return providers.Permanent, false
	}
	return providers.Transient, false
}

// classify turns apns2's answer into a Result, right where apns2 returns it.
// apns2 reports a rejection in res with a nil err; err means no answer.
// apns2 does not expose response headers, so Throttled has no RetryAfter.
func classify(res *apns2.Response, err error) providers.Result {
	if err != nil {
		return classifyErr(err)
	}
	if res.StatusCode == http.StatusOK {
		return providers.Result{Outcome: providers.Delivered, StatusCode: http.StatusOK}
	}
	r := providers.Result{Reason: res.Reason, StatusCode: res.StatusCode}
	var known bool
	r.Outcome, r.Credential, known = reasonOutcome(res.Reason)
	if !known {
		r.Outcome, r.Credential = statusOutcome(res.StatusCode)
	}
	if r.Reason == "" {
		r.Reason = strconv.Itoa(res.StatusCode)
	}
	if r.Outcome == providers.Transient || r.Outcome == providers.Permanent {
		r.Err = &Error{StatusCode: res.StatusCode, Reason: res.Reason}
	}
	return r
}

// classifyErr classifies a send that got no answer: a deadline or a
// cancellation, a TLS verification failure (the endpoint or its CA is
// misconfigured: permanent and a credential problem, so /readyz shows it),
// else a network error. All but TLS are transient.
func classifyErr(err error) providers.Result {
	r := providers.Result{Outcome: providers.Transient, Reason: "network", Err: err}
	var verr *tls.CertificateVerificationError
	var nerr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		r.Reason = "timeout"
	case errors.Is(err, context.Canceled):
		r.Reason = "canceled"
	case errors.As(err, &verr):
		r.Outcome, r.Reason, r.Credential = providers.Permanent, "tls", true
	}
	return r
}

// Error is an APNs rejection, kept in Result.Err for transient and permanent
// outcomes.
type Error struct {
	StatusCode int
	Reason     string
}

func (e *Error) Error() string {
	return "apns: " + strconv.Itoa(e.StatusCode) + " " + e.Reason
}
