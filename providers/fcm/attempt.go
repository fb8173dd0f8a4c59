package fcm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hushpush/hush/providers"
)

// The firebase SDK retries network errors and 503 answers up to four times
// over several seconds (honouring Retry-After), with no option to turn it
// off. A retry after hush's slot check would reach FCM seconds after the
// push's limiter slot, next to the user's next push, so Send makes exactly
// one HTTP attempt: oneAttempt, the transport under the SDK, lets the first
// attempt of a Send through (unless it would leave after Push.SendBy) and
// answers anything the SDK would retry with a 503 whose Retry-After is
// beyond the SDK's two-minute cap, which the SDK never retries. The
// attempt itself is bounded end to end (providers.Call): no request leaves
// after SendBy, and the answer's body is read within its own bound. The real
// answer is kept in the Send's attempt and classified by Send.

// stopRetryAfter is a Retry-After (seconds) beyond the SDK's MaxDelay of two
// minutes: the SDK does not retry such an answer.
const stopRetryAfter = "86400"

type attemptKey struct{}

// attempt is one Send's record of its HTTP attempt. The SDK makes its
// attempts one after another on the Send's goroutine.
type attempt struct {
	sendBy time.Time
	calls  int
	// late: the attempt would have left after sendBy; nothing was sent.
	late bool
	// netErr is the network error of the attempt (no HTTP answer).
	netErr error
	// retryAfter is the real Retry-After of a 503 whose header was replaced.
	retryAfter string
	rewrote    bool
}

func withAttempt(ctx context.Context, a *attempt) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

// oneAttempt is the SDK's transport: see above.
type oneAttempt struct{ base http.RoundTripper }

func (t oneAttempt) RoundTrip(req *http.Request) (*http.Response, error) {
	a, _ := req.Context().Value(attemptKey{}).(*attempt)
	if a == nil {
		return t.base.RoundTrip(req)
	}
	a.calls++
	if a.calls > 1 {
		return stopAnswer(req), nil // not reached: the answer before stopped the SDK
	}
	if !a.sendBy.IsZero() && time.Now().After(a.sendBy) {
		a.late = true
		return stopAnswer(req), nil
	}
	// Bounded end to end (providers.Call): nothing leaves after SendBy,
	// and the answer is back once its status is.
	resp, err := providers.Call(t.base.RoundTrip, req)
	switch {
	case errors.Is(err, providers.ErrNotSent):
		a.late = true
		return stopAnswer(req), nil
	case err != nil:
		a.netErr = err
		return stopAnswer(req), nil
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		a.retryAfter, a.rewrote = resp.Header.Get("Retry-After"), true
		resp.Header.Set("Retry-After", stopRetryAfter)
	}
	return resp, nil
}

// stopAnswer is an answer the SDK neither retries nor mistakes for a
// delivery; Send reports the attempt's real outcome instead.
func stopAnswer(req *http.Request) *http.Response {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	body := `{"error":{"code":503,"message":"hush: the request was not retried","status":"UNAVAILABLE"}}`
	return &http.Response{
		Status:     "503 Service Unavailable",
		StatusCode: http.StatusServiceUnavailable,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}, "Retry-After": {stopRetryAfter}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
