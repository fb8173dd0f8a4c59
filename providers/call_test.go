package providers_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
