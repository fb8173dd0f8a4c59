package webpush_test

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/webpush"
)

// The interop tests run npm's http_ece 1.2.1 and web-push 3.6.7, installed
// in testdata/interop (npm ci; .ci/run does it). Without node or the
// packages they skip, and fail under CI=true.
const interopDir = "testdata/interop"

func node(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(interopDir, "node_modules", "web-push"))
		if err == nil {
			_, err = os.Stat(filepath.Join(interopDir, "node_modules", "http_ece"))
		}
	}
	if err != nil {
		if testkit.InCI() {
			t.Fatalf("CI=true but node or the interop packages are missing (run npm ci in providers/webpush/%s): %v", interopDir, err)
		}
		t.Skipf("skipping interop: %v (npm ci in providers/webpush/%s)", err, interopDir)
	}
	return bin
}

// runNode runs script in the interop directory with in as standard input.
func runNode(t *testing.T, bin, script string, in any, env ...string) []byte {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, script)
	cmd.Dir = interopDir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// TestInteropHTTPECEDecrypts: http_ece reads what hush sends.
func TestInteropHTTPECEDecrypts(t *testing.T) {
	bin := node(t)
	ua, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	bodies := make(chan []byte, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pemOf(srv), 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := webpush.GenerateVAPIDKey()
	s, err := webpush.New(webpush.Config{PrivateKey: key.PrivateKey(), Subject: "mailto:ops@example.com", CAFile: ca, Egress: testEgress})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	enc := base64.RawURLEncoding
	tok, _ := json.Marshal(map[string]any{"endpoint": srv.URL + "/push/1",
		"keys": map[string]string{"p256dh": enc.EncodeToString(ua.PublicKey().Bytes()), "auth": enc.EncodeToString(auth)}})
	p := alertPush(string(tok))
	p.Content.Data = map[string]string{"order": "4711", "note": "ünïcödé <&>"}
	if r := s.Send(t.Context(), p); r.Outcome != providers.Delivered {
		t.Fatalf("Send = %+v", r)
	}
	want, _ := payload.RenderWebPush(p.Content)
	got := runNode(t, bin, "decrypt.js", map[string]string{
		"body": enc.EncodeToString(<-bodies), "uaPrivate": enc.EncodeToString(ua.Bytes()), "auth": enc.EncodeToString(auth)})
	if string(got) != string(want) {
		t.Errorf("http_ece decrypted %q, want %q", got, want)
	}
}

// TestInteropWebPushSends: web-push's subscriptions handling, encryption
// and VAPID are what the fake push service accepts and decrypts, so the
// fake checks hush against an independent implementation.
func TestInteropWebPushSends(t *testing.T) {
	bin := node(t)
	f, _, _ := startFake(t)
	ca, err := f.WriteCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// web-push makes the key pair; the subscription is bound to it.
	var keys struct {
		Vapid struct{ PublicKey, PrivateKey string } `json:"vapid"`
	}
	if err := json.Unmarshal(runNode(t, bin, "send.js", map[string]any{}), &keys); err != nil {
		t.Fatal(err)
	}
	tok := subscribe(t, f, keys.Vapid.PublicKey)
	var sub any
	_ = json.Unmarshal([]byte(tok), &sub)
	const body = `{"notification":{"title":"from web-push"}}`
	out := runNode(t, bin, "send.js", map[string]any{"subscription": sub, "payload": body, "subject": "mailto:ops@example.com",
		"vapid": map[string]string{"publicKey": keys.Vapid.PublicKey, "privateKey": keys.Vapid.PrivateKey}}, "NODE_EXTRA_CA_CERTS="+ca)
	var res struct {
		Status int    `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Status != http.StatusCreated {
		t.Fatalf("web-push send: %s (%v)", out, err)
	}
	reqs := f.Requests()
	if len(reqs) != 1 || string(reqs[0].Body) != body {
		t.Fatalf("the fake decrypted %d pushes, want 1 with %q: %+v", len(reqs), body, reqs)
	}

	// hush takes web-push's key pair as its own and sends to the same
	// subscription: the fake accepts its JWT for that key.
	s, err := webpush.New(webpush.Config{PrivateKey: keys.Vapid.PrivateKey, PublicKey: keys.Vapid.PublicKey, Subject: "mailto:ops@example.com", CAFile: ca, Egress: testEgress})
	if err != nil {
		t.Fatalf("hush refuses web-push's VAPID keys: %v", err)
	}
	defer s.Close()
	if r := s.Send(t.Context(), alertPush(tok)); r.Outcome != providers.Delivered {
		t.Fatalf("hush Send with web-push's keys = %+v", r)
	}
	if !strings.Contains(string(f.Requests()[1].Body), `"title":"Score"`) {
		t.Errorf("the fake decrypted %q from hush", f.Requests()[1].Body)
	}
}
