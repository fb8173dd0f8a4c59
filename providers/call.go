package providers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// CallTimeout bounds one provider call, from its start to its answer's
// status: every sender's Send and the worker's call use it
// (docs/delivery.md, "Provider outcomes per device", says 30 s).
const CallTimeout = 30 * time.Second

// AnswerReadTimeout bounds reading an error answer's body once its status
// is known; MaxAnswerBody bounds how much of it is read. A success
// answer's body is not read at all.
const (
	AnswerReadTimeout = 500 * time.Millisecond
	MaxAnswerBody     = 16 << 10
)

// successBody stands in for a success answer's body, which is never read:
// an SDK that decodes the body as JSON finds an empty object.
const successBody = "{}"

type sendByKey struct{}

// WithSendBy returns ctx carrying sendBy (Push.SendBy), the latest instant
// the request of a call made under it may be written (zero: no limit). Call
// and Transport enforce it.
func WithSendBy(ctx context.Context, sendBy time.Time) context.Context {
	if sendBy.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, sendByKey{}, sendBy)
}

// Transport is Call as an http.RoundTripper over Base (nil:
// http.DefaultTransport), for SDKs that take an *http.Client.
type Transport struct{ Base http.RoundTripper }

// RoundTrip makes one HTTP exchange with Call.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return Call(base.RoundTrip, req)
}

// Call makes one HTTP exchange with do (an http.Client's Do, or a
// transport's RoundTrip), bounded end to end:
//
//   - When the request's context carries a SendBy (WithSendBy), nothing of
//     the request is written once it passes: the connection phase (DNS,
//     TCP, TLS, waiting for a stream) is cancelled at SendBy, and a request
//     whose headers were not written by then gets no body, so no complete
//     request leaves late. The call then answers an error wrapping
//     ErrNotSent, and only then: once the headers of a request with a body
//     were written in time, whatever follows (a transport's retry of it
//     past SendBy, which is not made or gets no body) answers an error
//     that does not, since the first request may have reached the
//     provider. A request without a body is complete with its headers:
//     Call is for requests with one.
//   - The answer is handed back as soon as its status is known: a 2xx
//     body is not read (it is closed, and successBody stands in for it);
//     another's is read into memory, at most MaxAnswerBody within
//     AnswerReadTimeout, what came by then standing for the whole.
func Call(do func(*http.Request) (*http.Response, error), req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	defer cancel(nil)
	var g *gate
	if sendBy, ok := req.Context().Value(sendByKey{}).(time.Time); ok {
		g = &gate{cancel: cancel}
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn: func(httptrace.GotConnInfo) {
				// Also for a transport's retry on another connection,
				// after the first one's headers were written: that retry
				// is not made either.
				if time.Now().After(sendBy) {
					g.state.CompareAndSwap(gateOpen, gateLate)
					g.cancel(errPastSendBy)
				}
			},
			WroteHeaders: func() {
				if time.Now().After(sendBy) {
					// The first headers, late: no body follows. A
					// retry's, after the first request's in time: its
					// body is stopped too (gateRetryLate).
					if !g.state.CompareAndSwap(gateWritten, gateRetryLate) {
						g.late()
					} else {
						g.cancel(errPastSendBy)
					}
					return
				}
				g.state.CompareAndSwap(gateOpen, gateWritten)
			},
		})
		stop := time.AfterFunc(time.Until(sendBy), g.late)
		defer stop.Stop()
	}
	req = req.Clone(ctx)
	if g != nil && req.Body != nil && req.Body != http.NoBody {
		req.Body = gatedBody{ReadCloser: req.Body, g: g}
		if getBody := req.GetBody; getBody != nil {
			req.GetBody = func() (io.ReadCloser, error) {
				b, err := getBody()
				if err != nil {
					return nil, err
				}
				return gatedBody{ReadCloser: b, g: g}, nil
			}
		}
	}
	resp, err := do(req)
	if err != nil {
		if g != nil && g.state.Load() == gateLate {
			return nil, fmt.Errorf("%w: its SendBy passed before the request was written: %w", ErrNotSent, err)
		}
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader([]byte(successBody)))
		resp.ContentLength = int64(len(successBody))
		return resp, nil
	}
	timer := time.AfterFunc(AnswerReadTimeout, func() { cancel(errSlowAnswer) })
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBody))
	timer.Stop()
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	return resp, nil
}

// errSlowAnswer cuts the read of an answer's body short.
var errSlowAnswer = errors.New("answer body not read within its bound")

// errPastSendBy cancels a request at its SendBy and stops its body. It is
// not ErrNotSent: only Call, knowing the gate, says a request was not sent.
var errPastSendBy = errors.New("past its SendBy")

// A gate says whether a request may still be written. It opens once, for
// good: the request's headers were written before SendBy (gateWritten),
// or SendBy passed first (gateLate), which cancels the request. A
// transport's retry of a written request whose headers leave after SendBy
// closes it again (gateRetryLate).
type gate struct {
	state  atomic.Int32
	cancel context.CancelCauseFunc
}

const (
	gateOpen int32 = iota
	gateWritten
	gateLate
	gateRetryLate
)

// late closes the gate unless the request was written in time.
func (g *gate) late() {
	if g.state.CompareAndSwap(gateOpen, gateLate) || g.state.Load() == gateLate {
		g.cancel(errPastSendBy)
	}
}

// gatedBody is a request body that gives nothing unless its gate says the
// headers were written in time: a request whose headers left late never
// completes.
type gatedBody struct {
	io.ReadCloser
	g *gate
}

func (b gatedBody) Read(p []byte) (int, error) {
	if b.g.state.Load() != gateWritten {
		return 0, errPastSendBy
	}
	return b.ReadCloser.Read(p)
}

// CloseIdleConnections closes Base's idle connections.
func (t Transport) CloseIdleConnections() {
	if c, ok := t.Base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
