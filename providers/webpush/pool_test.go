package webpush

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
)

// liveConns counts the connections a sender's dial below its pool has
// open, and the most ever open at once.
type liveConns struct {
	live, peak atomic.Int64
}

// wrap makes s's pool dial through l.
func (l *liveConns) wrap(s *Sender) {
	inner := s.pool.dial
	s.pool.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := inner(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		n := l.live.Add(1)
		for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
		}
		return &countedConn{Conn: c, closed: sync.OnceFunc(func() { l.live.Add(-1) })}, nil
	}
}

type countedConn struct {
	net.Conn
	closed func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.closed()
	return err
}

// startOrigins starts n HTTP/2 TLS push services, each its own origin,
// answering 201; ca is the file of the certificate they share.
func startOrigins(t *testing.T, n int, handler http.HandlerFunc) (urls []string, ca string) {
	t.Helper()
	var cert []byte
	for range n {
		srv := httptest.NewUnstartedServer(handler)
		srv.EnableHTTP2 = true
		srv.StartTLS()
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
		cert = srv.Certificate().Raw
	}
	ca = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert}), 0o600); err != nil {
		t.Fatal(err)
	}
	return urls, ca
}

func loopbackEgress() Egress {
	return Egress{Origins: []string{OriginsPublic}, PrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
}

// TestConnCapHoldsAcrossOrigins: 300 origins pushed to once each never
// have more than MaxConnsDefault connections open, and every push is
// delivered: a dial at the cap closes the idle connections and waits for
// a free one.
func TestConnCapHoldsAcrossOrigins(t *testing.T) {
	const origins = 300
	urls, ca := startOrigins(t, origins, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
	k, _ := GenerateVAPIDKey()
	s, err := New(Config{PrivateKey: k.PrivateKey(), Subject: "mailto:ops@example.com", CAFile: ca, Egress: loopbackEgress()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var conns liveConns
	conns.wrap(s)
	var delivered atomic.Int64
	tokens := make(chan string, origins)
	for _, u := range urls {
		tokens <- subscriptionFor(t, u+"/push/x")
	}
	close(tokens)
	// 16 senders at a time: each origin's connection stays open after its
	// push, so the open ones pass the cap long before the last origin.
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for tok := range tokens {
				r := s.Send(context.Background(), providers.Push{Platform: payload.WebPush, Token: tok, Content: &payload.Content{Alert: &payload.Alert{Title: "t"}}})
				if r.Outcome == providers.Delivered {
					delivered.Add(1)
				} else {
					t.Errorf("Send = %+v", r)
				}
			}
		})
	}
	wg.Wait()
	if p := conns.peak.Load(); p > MaxConnsDefault || p == 0 {
		t.Errorf("%d connections open at once, want 1 to %d", p, MaxConnsDefault)
	}
	if n := delivered.Load(); n != origins {
		t.Errorf("%d of %d pushes delivered", n, origins)
	}
	if open, live := s.OpenConns(), conns.live.Load(); int64(open) != live {
		t.Errorf("OpenConns = %d, %d connections open", open, live)
	}
	t.Logf("%d origins: at most %d connections open at once (cap %d)", origins, conns.peak.Load(), MaxConnsDefault)
}

// TestIdleConnsClose: an HTTP/2 connection with no request in flight is
// closed after IdleTimeout, and OpenConns counts it no more.
func TestIdleConnsClose(t *testing.T) {
	var proto atomic.Int64
	urls, ca := startOrigins(t, 1, func(w http.ResponseWriter, r *http.Request) {
		proto.Store(int64(r.ProtoMajor))
		w.WriteHeader(http.StatusCreated)
	})
	k, _ := GenerateVAPIDKey()
	s, err := New(Config{PrivateKey: k.PrivateKey(), Subject: "mailto:ops@example.com", CAFile: ca, Egress: loopbackEgress(),
		IdleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var conns liveConns
	conns.wrap(s)
	r := s.Send(t.Context(), providers.Push{Platform: payload.WebPush, Token: subscriptionFor(t, urls[0]+"/push/x"), Content: &payload.Content{Alert: &payload.Alert{Title: "t"}}})
	if r.Outcome != providers.Delivered || proto.Load() != 2 {
		t.Fatalf("Send = %+v over HTTP/%d, want delivered over HTTP/2", r, proto.Load())
	}
	if conns.peak.Load() != 1 {
		t.Fatalf("%d connections opened, want 1", conns.peak.Load())
	}
	// The bound is a guard against a connection that never closes, many
	// times the idle life.
	testkit.WaitFor(t, 20*time.Second, "the idle HTTP/2 connection closed", func() bool { return conns.live.Load() == 0 })
	testkit.WaitFor(t, 20*time.Second, "OpenConns 0", func() bool { return s.OpenConns() == 0 })
}
