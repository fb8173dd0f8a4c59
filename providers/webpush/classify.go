package webpush

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hushpush/hush/providers"
)

// maxReasonRead bounds how much of an error answer's body is read for its
// reason.
const maxReasonRead = 4 << 10

// maxReasonLen bounds the reason text kept from an error answer.
const maxReasonLen = 160

// classify turns a push service's answer into a Result (RFC 8030 §5, RFC
// 8292 §4): 2xx delivered; 404 and 410 the subscription is gone; 429
// throttled; 401 and 403 the VAPID key refused for this subscription,
// which ends it too (token_invalid, KeyRefusedBy naming the origin: a
// subscription is bound to the key it was made with, and any client can
// make a push service answer 403, so it says nothing of the app's key); 413
// and the other 4xx permanent; 5xx and anything else transient. origin is
// the endpoint's origin: a reason names it, never the endpoint, whose path
// is the subscription's secret.
func classify(status int, retryAfterHeader string, body io.Reader, origin string, now time.Time) providers.Result {
	r := providers.Result{StatusCode: status}
	switch {
	case status >= 200 && status < 300:
		r.Outcome = providers.Delivered
		return r
	case status == http.StatusNotFound || status == http.StatusGone:
		r.Outcome = providers.TokenInvalid
		r.Reason = fmt.Sprintf("%d %s at %s", status, http.StatusText(status), origin)
		return r
	case status == http.StatusTooManyRequests:
		r.Outcome = providers.Throttled
		r.Reason = "429 Too Many Requests at " + origin
		r.RetryAfter = retryAfter(retryAfterHeader, now)
		return r
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		r.Outcome, r.KeyRefusedBy = providers.TokenInvalid, origin
		r.Reason = fmt.Sprintf("%d %s at %s: the VAPID key is refused", status, http.StatusText(status), origin)
		if why := answerReason(body); why != "" {
			r.Reason += " (" + why + ")"
		}
		return r
	case status == http.StatusRequestEntityTooLarge || status >= 400 && status < 500:
		r.Outcome = providers.Permanent
	default:
		r.Outcome = providers.Transient
	}
	r.Reason = strconv.Itoa(status) + " " + http.StatusText(status)
	if why := answerReason(body); why != "" {
		r.Reason += ": " + why
	}
	r.Err = fmt.Errorf("webpush: %s answered %s", origin, r.Reason)
	return r
}

// answerReason is the reason an error answer gives: the "message" (or
// "error", "reason") of a JSON body, else its text, printable and short.
func answerReason(body io.Reader) string {
	b, err := io.ReadAll(body)
	if err != nil || len(b) == 0 {
		return ""
	}
	var j map[string]any
	text := string(b)
	if json.Unmarshal(b, &j) == nil {
		text = ""
		for _, k := range []string{"message", "reason", "error"} {
			if s, ok := j[k].(string); ok && s != "" {
				text = s
				break
			}
		}
	}
	text = strings.Join(strings.FieldsFunc(text, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }), " ")
	if len(text) > maxReasonLen {
		text = strings.ToValidUTF8(text[:maxReasonLen], "") + "…"
	}
	return text
}

// classifyError classifies a request that got no answer. The error is
// rewrapped without its *url.Error, which would print the whole endpoint.
func classifyError(ctx context.Context, origin string, err error) providers.Result {
	notSent := errors.Is(err, providers.ErrNotSent)
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	r := providers.Result{Outcome: providers.Transient, Reason: "network", Err: fmt.Errorf("webpush: post to %s: %w", origin, err)}
	switch {
	case notSent:
		// providers.Call's word, kept around the *url.Error's cause.
		r.Reason = "late for its slot"
		r.Err = fmt.Errorf("webpush: post to %s: %w: %w", origin, providers.ErrNotSent, err)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.Reason = "timeout"
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		r.Reason = "canceled"
	}
	return r
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
