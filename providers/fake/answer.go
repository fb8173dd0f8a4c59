package fake

import (
	"bytes"
	"net/http"
	"strconv"
	"time"
)

type kind int

const (
	kindOK kind = iota
	kindUnregistered
	kindBadToken
	kindTooMany
	kindStatus
	kindAPNs
	kindFCM
)

// Answer is one scripted answer of a fake server. Build it with the
// constructors (OK, Unregistered, BadToken, TooMany, Status, APNsReason,
// FCMError); each fake renders it in its provider's wire format.
type Answer struct {
	kind       kind
	status     int
	reason     string // APNs reason or FCM errorCode
	message    string // FCM error.message
	retryAfter time.Duration
	latency    time.Duration
	// retryAfterRaw, when set, is the Retry-After header as written.
	retryAfterRaw string
	// bodySize pads the answer's body to this many bytes; endless keeps
	// writing after it until the client goes away.
	bodySize int
	endless  bool
}

// OK answers 200: delivered.
func OK() Answer { return Answer{kind: kindOK, status: http.StatusOK} }

// Unregistered answers that the token is no longer valid: APNs 410
// Unregistered with a timestamp, FCM 404 NOT_FOUND / UNREGISTERED.
func Unregistered() Answer { return Answer{kind: kindUnregistered} }

// BadToken answers that the token is malformed: APNs 400 BadDeviceToken, FCM
// 400 INVALID_ARGUMENT "The registration token is not a valid FCM
// registration token" with a field violation on message.token.
func BadToken() Answer { return Answer{kind: kindBadToken} }

// TooMany answers 429 (APNs TooManyRequests, FCM RESOURCE_EXHAUSTED /
// QUOTA_EXCEEDED) with a Retry-After header in whole seconds when retryAfter
// is positive.
func TooMany(retryAfter time.Duration) Answer {
	return Answer{kind: kindTooMany, status: http.StatusTooManyRequests, retryAfter: retryAfter}
}

// Status answers the HTTP status code with the provider's usual reason for it
// (APNs: 403 Forbidden, 404 BadPath, 413 PayloadTooLarge, 500
// InternalServerError, 503 ServiceUnavailable, ...; FCM: 401
// THIRD_PARTY_AUTH_ERROR, 403 SENDER_ID_MISMATCH, 500 INTERNAL, 503
// UNAVAILABLE, ...).
func Status(code int) Answer { return Answer{kind: kindStatus, status: code} }

// APNsReason answers an APNs error with the given status and reason (one of
// the apns2.Reason* values). The fake FCM treats it as Status(status).
func APNsReason(status int, reason string) Answer {
	return Answer{kind: kindAPNs, status: status, reason: reason}
}

// FCMError answers an FCM error: the HTTP status, the FcmError errorCode
// (empty: no FcmError detail) and the error message (empty: a default). The
// fake APNs treats it as Status(status).
func FCMError(status int, errorCode, message string) Answer {
	return Answer{kind: kindFCM, status: status, reason: errorCode, message: message}
}

// WithLatency returns a copy of a that is answered after d.
func (a Answer) WithLatency(d time.Duration) Answer {
	a.latency = d
	return a
}

// WithRetryAfter returns a copy of a that carries a Retry-After header (whole
// seconds, rounded up).
func (a Answer) WithRetryAfter(d time.Duration) Answer {
	a.retryAfter = d
	return a
}

// WithRetryAfterHeader returns a copy of a whose Retry-After header is v as
// written, whatever it holds ("315360000", an HTTP date, "soon").
func (a Answer) WithRetryAfterHeader(v string) Answer {
	a.retryAfterRaw = v
	return a
}

// WithBodySize returns a copy of a whose body is padded with spaces (after
// its JSON, which stays valid) to n bytes.
func (a Answer) WithBodySize(n int) Answer {
	a.bodySize = n
	return a
}

// WithEndlessBody returns a copy of a whose body never ends: after the
// answer's own body the fake keeps trickling spaces (64 bytes every 10 ms)
// until the client goes away.
func (a Answer) WithEndlessBody() Answer {
	a.endless = true
	return a
}

// writeBody writes the answer's body b, padded to bodySize and, when
// endless, followed by spaces until the client goes away. The status and
// headers are written first, so the client knows the status at once.
func (a Answer) writeBody(w http.ResponseWriter, r *http.Request, b []byte) {
	_, _ = w.Write(b)
	if pad := a.bodySize - len(b); pad > 0 {
		_, _ = w.Write(bytes.Repeat([]byte{' '}, pad))
	}
	if !a.endless {
		return
	}
	rc := http.NewResponseController(w)
	chunk := bytes.Repeat([]byte{' '}, 64)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := w.Write(chunk); err != nil || rc.Flush() != nil {
			return
		}
		select {
		case <-tick.C:
		case <-r.Context().Done():
			return
		}
	}
}

// begin plays the answer's scripted latency and sets its Retry-After
// header; it reports false when the client went away meanwhile (nothing is
// to be written then).
func (a Answer) begin(w http.ResponseWriter, r *http.Request) bool {
	if a.latency > 0 {
		t := time.NewTimer(a.latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return false
		}
	}
	if a.retryAfterRaw != "" {
		w.Header().Set("Retry-After", a.retryAfterRaw)
	} else if v := a.retryAfterHeader(); v != "" {
		w.Header().Set("Retry-After", v)
	}
	return true
}

// retryAfterHeader is the Retry-After header value, "" when none.
func (a Answer) retryAfterHeader() string {
	if a.retryAfter <= 0 {
		return ""
	}
	return strconv.FormatInt(int64((a.retryAfter+time.Second-1)/time.Second), 10)
}
