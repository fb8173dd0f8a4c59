package providers_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hushpush/hush/providers"
)

// slowConn holds its first read, as a server behind a slow network: the
// client's TLS handshake waits for it.
type slowConn struct {
	net.Conn
	once sync.Once
}

func (c *slowConn) Read(b []byte) (int, error) {
	c.once.Do(func() { time.Sleep(time.Second) })
	return c.Conn.Read(b)
}

type slowListener struct{ net.Listener }

func (l slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &slowConn{Conn: c}, nil
}

// TestTransportNothingAfterSendBy: a request whose connection phase
// outlasts its SendBy is never written, over HTTP/2 with TLS (APNs, FCM,
// Web Push) and HTTP/1 (a slow dial); the call answers ErrNotSent, and the
// server sees only the request made after it.
func TestTransportNothingAfterSendBy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(h http.Handler) (*httptest.Server, http.RoundTripper)
	}{
		{"h2 slow tls", func(h http.Handler) (*httptest.Server, http.RoundTripper) {
			srv := httptest.NewUnstartedServer(h)
			srv.EnableHTTP2 = true
			srv.Listener = slowListener{srv.Listener}
			srv.StartTLS()
			return srv, srv.Client().Transport
		}},
		{"h1 slow dial", func(h http.Handler) (*httptest.Server, http.RoundTripper) {
			srv := httptest.NewServer(h)
			d := &net.Dialer{}
			return srv, &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				time.Sleep(time.Second)
				return d.DialContext(ctx, network, addr)
			}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var got []string
			srv, base := tc.start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = append(got, string(b))
				mu.Unlock()
			}))
			defer srv.Close()
			client := &http.Client{Transport: providers.Transport{Base: base}}
			post := func(ctx context.Context, body string) error {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := client.Do(req)
				if err == nil {
					_ = resp.Body.Close()
				}
				return err
			}
			if err := post(providers.WithSendBy(t.Context(), time.Now().Add(100*time.Millisecond)), "late"); !errors.Is(err, providers.ErrNotSent) {
				t.Fatalf("a request past its SendBy: %v, want ErrNotSent", err)
			}
			if err := post(t.Context(), "later"); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || got[0] != "later" {
				t.Errorf("the server got %q, want only the later request", got)
			}
		})
	}
}

// TestCallNotSentOnlyWhenNothingWasWritten: Call answers ErrNotSent only
// for a request whose headers were not written by its SendBy. A
// transport's retry of a request written in time (after a lost answer, on
// another connection) is stopped at SendBy too, but its call is no "not
// sent": the first request may have reached the provider. The transport
// here is a script of the trace events a real one reports.
func TestCallNotSentOnlyWhenNothingWasWritten(t *testing.T) {
	// past returns once the instant t has passed.
	past := func(t time.Time) {
		for !time.Now().After(t) {
			time.Sleep(time.Until(t))
		}
	}
	tests := []struct {
		name string
		// exchange plays the transport's part, given the request and the
		// SendBy; wroteLate reports whether it could write something
		// after SendBy (read the body, or go on with a retry).
		exchange    func(r *http.Request, sendBy time.Time) (wroteLate bool)
		wantNotSent bool
	}{
		{"headers written after SendBy: not sent", func(r *http.Request, sendBy time.Time) bool {
			tr := httptrace.ContextClientTrace(r.Context())
			tr.GotConn(httptrace.GotConnInfo{})
			past(sendBy)
			tr.WroteHeaders()
			_, err := io.ReadAll(r.Body)
			return err == nil
		}, true},
		{"written in time, retried on another connection past SendBy", func(r *http.Request, sendBy time.Time) bool {
			tr := httptrace.ContextClientTrace(r.Context())
			tr.GotConn(httptrace.GotConnInfo{})
			tr.WroteHeaders()
			if _, err := io.ReadAll(r.Body); err != nil {
				return false
			}
			past(sendBy)
			tr.GotConn(httptrace.GotConnInfo{})
			return r.Context().Err() == nil
		}, false},
		{"written in time, a retry's headers past SendBy", func(r *http.Request, sendBy time.Time) bool {
			tr := httptrace.ContextClientTrace(r.Context())
			tr.GotConn(httptrace.GotConnInfo{})
			tr.WroteHeaders()
			if _, err := io.ReadAll(r.Body); err != nil {
				return false
			}
			body, err := r.GetBody()
			if err != nil {
				return false
			}
			tr.GotConn(httptrace.GotConnInfo{})
			past(sendBy)
			tr.WroteHeaders()
			_, err = io.ReadAll(body)
			return err == nil
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sendBy := time.Now().Add(20 * time.Millisecond)
			req, err := http.NewRequestWithContext(providers.WithSendBy(t.Context(), sendBy), http.MethodPost, "http://push.invalid/", strings.NewReader("push"))
			if err != nil {
				t.Fatal(err)
			}
			var wroteLate bool
			do := func(r *http.Request) (*http.Response, error) {
				wroteLate = tt.exchange(r, sendBy)
				if err := context.Cause(r.Context()); err != nil {
					return nil, err
				}
				return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
			}
			_, err = providers.Call(do, req)
			if err == nil {
				t.Fatal("Call answered a request stopped at its SendBy")
			}
			if got := errors.Is(err, providers.ErrNotSent); got != tt.wantNotSent {
				t.Errorf("Call = %v: ErrNotSent %v, want %v", err, got, tt.wantNotSent)
			}
			if wroteLate {
				t.Error("the transport could write after SendBy")
			}
		})
	}
}
