package webpush_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/providers/webpush"
)

// startFake starts a fake push service and a sender with a new VAPID key
// that trusts the fake's certificate.
func startFake(tb testing.TB) (*fake.WebPush, *webpush.Sender, webpush.VAPIDKey) {
	tb.Helper()
	f, err := fake.StartWebPush()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(f.Close)
	ca, err := f.WriteCA(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		tb.Fatal(err)
	}
	s, err := webpush.New(webpush.Config{PrivateKey: key.PrivateKey(), PublicKey: key.PublicKey(), Subject: "mailto:ops@example.com", CAFile: ca, Egress: testEgress})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return f, s, key
}

func subscribe(tb testing.TB, f *fake.WebPush, key string) string {
	tb.Helper()
	tok, err := f.Subscribe(key)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

func alertPush(token string) providers.Push {
	return providers.Push{
		ID: "job/u/0", Platform: payload.WebPush, Token: token,
		Content: &payload.Content{Alert: &payload.Alert{Title: "Score", Body: "2:1"}, Priority: payload.PriorityHigh, CollapseKey: "match-17"},
	}
}

func TestSendDelivered(t *testing.T) {
	f, s, key := startFake(t)
	tok := subscribe(t, f, key.PublicKey())
	p := alertPush(tok)
	p.Expiry = time.Now().Add(90 * time.Minute)
	r := s.Send(t.Context(), p)
	if r.Outcome != providers.Delivered || r.StatusCode != http.StatusCreated {
		t.Fatalf("Send = %+v, want delivered with 201", r)
	}
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("fake saw %d pushes, want 1", len(reqs))
	}
	want, err := payload.RenderWebPush(p.Content)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(reqs[0].Body)); d != "" {
		t.Errorf("decrypted body (-want +got):\n%s", d)
	}
	h := reqs[0].Header
	if got := h.Get("TTL"); got != "5400" {
		t.Errorf("TTL = %q, want 5400", got)
	}
	if got := h.Get("Urgency"); got != "high" {
		t.Errorf("Urgency = %q, want high", got)
	}
	if got := h.Get("Topic"); got != "match-17" {
		t.Errorf("Topic = %q, want match-17", got)
	}
	if !reqs[0].Pushed() {
		t.Error("the fake does not count the 201 as pushed")
	}
}

func TestSendOutcomes(t *testing.T) {
	f, s, _ := startFake(t)
	origin := f.URL
	for _, tc := range []struct {
		name       string
		answer     fake.Answer
		outcome    providers.Outcome
		status     int
		retryAfter time.Duration
		credential bool
		reason     string
	}{
		{"gone", fake.Unregistered(), providers.TokenInvalid, 410, 0, false, "410 Gone at " + origin},
		{"not found", fake.BadToken(), providers.TokenInvalid, 404, 0, false, "404 Not Found at " + origin},
		{"throttled", fake.TooMany(7 * time.Second), providers.Throttled, 429, 7 * time.Second, false, "429 Too Many Requests at " + origin},
		{"too large", fake.Status(413), providers.Permanent, 413, 0, false, "413 Request Entity Too Large: Request Entity Too Large"},
		{"bad request", fake.Status(400), providers.Permanent, 400, 0, false, "400 Bad Request: Bad Request"},
		{"unavailable", fake.Status(503), providers.Transient, 503, 0, false, "503 Service Unavailable: Service Unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := subscribe(t, f, "")
			f.Script(tok, tc.answer)
			r := s.Send(t.Context(), alertPush(tok))
			got := []any{r.Outcome, r.StatusCode, r.RetryAfter, r.Credential, r.Reason}
			want := []any{tc.outcome, tc.status, tc.retryAfter, tc.credential, tc.reason}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("outcome, status, retry-after, credential, reason (-want +got):\n%s", d)
			}
			if strings.Contains(r.Reason, "/push/") || r.Err != nil && strings.Contains(r.Err.Error(), "/push/") {
				t.Errorf("the result shows the endpoint: %q, %v", r.Reason, r.Err)
			}
		})
	}
}

// TestSendCredentialRefused: a subscription made for another
// applicationServerKey refuses the push (403): that subscription is over
// (token_invalid), and its answer is no evidence about the app's key
// (Credential false, KeyRefusedBy naming the origin).
func TestSendCredentialRefused(t *testing.T) {
	f, s, _ := startFake(t)
	other, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	r := s.Send(t.Context(), alertPush(subscribe(t, f, other.PublicKey())))
	if r.Outcome != providers.TokenInvalid || r.Credential || r.KeyRefusedBy != f.URL || r.StatusCode != http.StatusForbidden {
		t.Fatalf("Send = %+v, want token_invalid 403 refused by %s, not an app-wide credential failure", r, f.URL)
	}
	if !strings.Contains(r.Reason, "applicationServerKey") {
		t.Errorf("reason %q does not carry the push service's message", r.Reason)
	}
}

func TestSendNetworkError(t *testing.T) {
	f, s, _ := startFake(t)
	tok := subscribe(t, f, "")
	f.Close()
	r := s.Send(t.Context(), alertPush(tok))
	if r.Outcome != providers.Transient || r.Reason != "network" {
		t.Fatalf("Send = %+v, want transient network", r)
	}
	if strings.Contains(r.Err.Error(), "/push/") {
		t.Errorf("error shows the whole endpoint: %v", r.Err)
	}
}

func TestSendLateForSlot(t *testing.T) {
	f, s, _ := startFake(t)
	p := alertPush(subscribe(t, f, ""))
	p.SendBy = time.Now().Add(-time.Second)
	r := s.Send(t.Context(), p)
	if r.Outcome != providers.Transient || !errors.Is(r.Err, providers.ErrNotSent) {
		t.Fatalf("Send = %+v, want transient ErrNotSent", r)
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("fake saw %d pushes, want none", n)
	}
}

func TestSendBadSubscriptionIsTokenInvalid(t *testing.T) {
	_, s, _ := startFake(t)
	r := s.Send(t.Context(), alertPush(`{"endpoint":"https://push.example.net/x","keys":{"p256dh":"AAAA","auth":"AAAA"}}`))
	if r.Outcome != providers.TokenInvalid || !strings.Contains(r.Reason, "keys.p256dh") {
		t.Fatalf("Send = %+v, want token_invalid naming keys.p256dh", r)
	}
}

// TestSendPoolsHTTP2: pushes to one origin share one HTTP/2 connection.
func TestSendPoolsHTTP2(t *testing.T) {
	var mu sync.Mutex
	protos := map[int]int{}
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos[r.ProtoMajor]++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	f, err := fake.StartWebPush() // only for a subscription's keys
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.WriteFile(ca, pemOf(srv), 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := webpush.GenerateVAPIDKey()
	s, err := webpush.New(webpush.Config{PrivateKey: key.PrivateKey(), Subject: "https://example.com/contact", CAFile: ca, Egress: testEgress})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tok := strings.Replace(subscribe(t, f, ""), f.URL, srv.URL, 1)
	// One push first opens the connection; the rest share it.
	if r := s.Send(t.Context(), alertPush(tok)); r.Outcome != providers.Delivered {
		t.Fatalf("Send = %+v", r)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if r := s.Send(context.Background(), alertPush(tok)); r.Outcome != providers.Delivered {
				t.Errorf("Send = %+v", r)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if d := cmp.Diff(map[int]int{2: 21}, protos); d != "" || conns != 1 {
		t.Errorf("requests by HTTP major version (-want +got):\n%s\nconnections: %d, want 1", d, conns)
	}
}

func pemOf(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// testEgress lets a sender reach the local fakes on 127.0.0.1.
var testEgress = webpush.Egress{Origins: []string{webpush.OriginsPublic}, PrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
