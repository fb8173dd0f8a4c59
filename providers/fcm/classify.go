package fcm

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"firebase.google.com/go/v4/errorutils"
	"firebase.google.com/go/v4/messaging"
	"github.com/hushpush/hush/providers"
	"golang.org/x/oauth2"
)

// classify turns the SDK's answer into a Result. It must see the error
// exactly as messaging.Client.Send returned it: the messaging helpers use a
// type assertion. ctx is the send's (bounded) context.
func classify(ctx context.Context, err error, now time.Time) providers.Result {
	if err == nil {
		return providers.Result{Outcome: providers.Delivered, StatusCode: http.StatusOK}
	}
	resp := errorutils.HTTPResponse(err)
	r := providers.Result{Outcome: providers.Transient, Err: err}
	if resp == nil {
		// No HTTP answer: the context ended (also during the SDK's own
		// retry wait), or the network failed.
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(ctx.Err(), context.DeadlineExceeded), errorutils.IsDeadlineExceeded(err):
			r.Reason = "timeout"
		case errors.Is(err, context.Canceled), errors.Is(ctx.Err(), context.Canceled), errorutils.IsCancelled(err):
			r.Reason = "canceled"
		default:
			r.Reason = "network"
		}
		return r
	}
	r.StatusCode = resp.StatusCode
	switch {
	case messaging.IsUnregistered(err):
		r.Outcome, r.Reason = providers.TokenInvalid, "UNREGISTERED"
	case messaging.IsSenderIDMismatch(err):
		r.Outcome, r.Reason = providers.TokenInvalid, "SENDER_ID_MISMATCH"
	case messaging.IsInvalidArgument(err):
		r.Outcome, r.Reason = providers.Permanent, "INVALID_ARGUMENT"
		if tokenArgument(resp) {
			r.Outcome, r.Reason = providers.TokenInvalid, "INVALID_ARGUMENT: registration token"
		}
	case messaging.IsQuotaExceeded(err):
		r.Outcome, r.Reason = providers.Throttled, "QUOTA_EXCEEDED"
		r.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
	case messaging.IsUnavailable(err):
		r.Reason = "UNAVAILABLE"
	case messaging.IsInternal(err):
		r.Reason = "INTERNAL"
	case messaging.IsThirdPartyAuthError(err):
		r.Outcome, r.Reason, r.Credential = providers.Permanent, "THIRD_PARTY_AUTH_ERROR", true
	// No FCM errorCode: fall back on the platform status.
	case errorutils.IsUnauthenticated(err):
		r.Outcome, r.Reason, r.Credential = providers.Permanent, "UNAUTHENTICATED", true
	case errorutils.IsPermissionDenied(err):
		r.Outcome, r.Reason, r.Credential = providers.Permanent, "PERMISSION_DENIED", true
	case errorutils.IsResourceExhausted(err):
		r.Outcome, r.Reason = providers.Throttled, "RESOURCE_EXHAUSTED"
		r.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
	case errorutils.IsNotFound(err):
		r.Outcome, r.Reason = providers.Permanent, "NOT_FOUND" // the project or endpoint, not the token
	case errorutils.IsInvalidArgument(err):
		r.Outcome, r.Reason = providers.Permanent, "INVALID_ARGUMENT"
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		r.Outcome, r.Reason = providers.Permanent, strconv.Itoa(resp.StatusCode)
	default:
		r.Reason = strconv.Itoa(resp.StatusCode)
	}
	if r.Outcome == providers.TokenInvalid || r.Outcome == providers.Throttled {
		r.Err = nil
	}
	return r
}

// invalidTokenMessage is what FCM answers for a malformed registration token
// (INVALID_ARGUMENT is also the answer to a bad payload).
const invalidTokenMessage = "The registration token is not a valid FCM registration token"

// tokenArgument reports whether an INVALID_ARGUMENT answer is about the
// registration token: a google.rpc.BadRequest field violation on
// message.token, or FCM's invalid-token message.
func tokenArgument(resp *http.Response) bool {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Details []struct {
				Type            string `json:"@type"`
				FieldViolations []struct {
					Field string `json:"field"`
				} `json:"fieldViolations"`
			} `json:"details"`
		} `json:"error"`
	}
	if resp.Body == nil || json.NewDecoder(resp.Body).Decode(&body) != nil {
		return false
	}
	if body.Error.Message == invalidTokenMessage {
		return true
	}
	for _, d := range body.Error.Details {
		if d.Type != "type.googleapis.com/google.rpc.BadRequest" {
			continue
		}
		for _, v := range d.FieldViolations {
			if v.Field == "message.token" {
				return true
			}
		}
	}
	return false
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// classifyToken classifies a failure to get an access token from the
// service account's token_uri: the endpoint refusing our key (4xx but 429)
// is a credential problem; 429, 5xx and the network are transient.
func classifyToken(err error) providers.Result {
	r := providers.Result{Outcome: providers.Transient, Reason: "oauth: network", Err: err}
	var rerr *oauth2.RetrieveError
	var nerr net.Error
	switch {
	case errors.As(err, &rerr) && rerr.Response != nil:
		r.StatusCode = rerr.Response.StatusCode
		r.Reason = "oauth: " + strconv.Itoa(r.StatusCode)
		if code := oauthErrorCode(rerr); code != "" {
			r.Reason = "oauth: " + code
		}
		if r.StatusCode >= 400 && r.StatusCode < 500 && r.StatusCode != http.StatusTooManyRequests {
			r.Outcome, r.Credential = providers.Permanent, true
		}
	case errors.As(err, &nerr) && nerr.Timeout():
		r.Reason = "oauth: timeout"
	}
	return r
}

// oauthErrorCode is RFC 6749's "error" of a token endpoint answer
// ("invalid_grant"); x/oauth2's jwt flow leaves RetrieveError.ErrorCode empty.
func oauthErrorCode(rerr *oauth2.RetrieveError) string {
	if rerr.ErrorCode != "" {
		return rerr.ErrorCode
	}
	var body struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(rerr.Body, &body) != nil {
		return ""
	}
	return body.Error
}
