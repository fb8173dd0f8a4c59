package fake

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// WebPush is a fake Web Push service (RFC 8030): an HTTP/2 TLS server on
// 127.0.0.1 whose subscriptions (Subscribe) receive at
// POST /push/<id>.
//
// A push must carry a VAPID Authorization header (RFC 8292) whose ES256 JWT
// verifies with its k= key and names the fake's origin as aud, an exp in
// the future and at most 24 hours ahead, and a mailto: or https: sub;
// else it is answered 401 and only counted. A subscription made for an
// applicationServerKey takes pushes signed with that key only (403
// otherwise), as browsers' push services do. The body must decrypt with
// the subscription's keys (RFC 8291); else 400.
//
// Requests record the subscription JSON as Token and the decrypted
// plaintext as Body. Answers: OK is 201, Unregistered 410, BadToken 404,
// TooMany 429, Status(code) code.
type WebPush struct {
	// URL is the base URL, e.g. "https://127.0.0.1:41236": the first
	// origin's when it serves several (URLs).
	URL string
	// URLs are the base URLs of every origin it serves, URL first.
	URLs []string

	srvs []*httptest.Server
	rec  *recorder

	mu   sync.Mutex
	subs map[string]*webPushSub // by path id
	made int                    // subscriptions made, to spread them over URLs
	now  func() time.Time
}

// WebPushOptions make a fake Web Push service hostile in the ways a
// subscriber-chosen origin can be.
type WebPushOptions struct {
	// DialDelay holds every new connection this long before the server
	// reads from it: the client's TCP connect completes (the kernel
	// accepts it), but its TLS handshake waits, as behind a slow network.
	DialDelay time.Duration
	// TLSDelay holds the server's first TLS write (its ServerHello) this
	// long on every new connection: a slow TLS handshake.
	TLSDelay time.Duration
	// Origins, when above 1, serves the same subscriptions on that many
	// listeners, each its own origin (its own port); Subscribe spreads
	// subscriptions over them.
	Origins int
}

type webPushSub struct {
	token  string
	ua     *ecdh.PrivateKey
	auth   []byte
	appKey string // the applicationServerKey it was made for, "" for any
}

// StartWebPush starts a fake Web Push service. Every subscription answers
// OK until scripted.
func StartWebPush() (*WebPush, error) { return StartWebPushWith(WebPushOptions{}) }

// StartWebPushWith starts a fake Web Push service with o's delays and
// origins. Every subscription answers OK until scripted.
func StartWebPushWith(o WebPushOptions) (*WebPush, error) {
	f := &WebPush{rec: newRecorder(), subs: map[string]*webPushSub{}, now: time.Now}
	for range max(o.Origins, 1) {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
		srv.EnableHTTP2 = true
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		if o.DialDelay > 0 || o.TLSDelay > 0 {
			srv.Listener = slowListener{Listener: srv.Listener, read: o.DialDelay, write: o.TLSDelay}
		}
		srv.StartTLS()
		f.srvs = append(f.srvs, srv)
		f.URLs = append(f.URLs, srv.URL)
	}
	f.URL = f.URLs[0]
	return f, nil
}

// Close shuts the servers down.
func (f *WebPush) Close() {
	for _, srv := range f.srvs {
		srv.Close()
	}
}

// CAPEM is the PEM of the servers' self-signed certificate (every origin
// has the same), the CA to trust.
func (f *WebPush) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srvs[0].Certificate().Raw})
}

// WriteCA writes CAPEM to dir/webpush-ca.pem and returns the path, for
// HUSH_WEBPUSH_CA_FILE and NODE_EXTRA_CA_CERTS.
func (f *WebPush) WriteCA(dir string) (string, error) {
	path := filepath.Join(dir, "webpush-ca.pem")
	return path, os.WriteFile(path, f.CAPEM(), 0o600)
}

// Subscribe makes a subscription as a browser would for
// applicationServerKey (base64url; "" accepts any key) and returns its
// PushSubscription JSON, the webpush device token.
func (f *WebPush) Subscribe(applicationServerKey string) (string, error) {
	ua, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	id := rand.Text()
	enc := base64.RawURLEncoding
	f.mu.Lock()
	base := f.URLs[f.made%len(f.URLs)]
	f.made++
	f.mu.Unlock()
	b, err := json.Marshal(map[string]any{
		"endpoint":       base + "/push/" + id,
		"expirationTime": nil,
		"keys":           map[string]string{"p256dh": enc.EncodeToString(ua.PublicKey().Bytes()), "auth": enc.EncodeToString(auth)},
	})
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs[id] = &webPushSub{token: string(b), ua: ua, auth: auth, appKey: strings.TrimRight(applicationServerKey, "=")}
	return string(b), nil
}

// Script sets the answers for a subscription (its token), in order; the
// last one repeats. An empty token sets the default.
func (f *WebPush) Script(token string, answers ...Answer) { f.rec.script(token, answers) }

// Requests returns a copy of the accepted pushes, in arrival order.
func (f *WebPush) Requests() []Request { return f.rec.requests() }

// Counts returns how many pushes were accepted and how many were rejected
// for their VAPID authorization.
func (f *WebPush) Counts() (accepted, rejected int) { return f.rec.counts() }

// Reset forgets the recorded requests and the counts (scripts stay).
func (f *WebPush) Reset() { f.rec.reset() }

func (f *WebPush) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	id, ok := strings.CutPrefix(r.URL.Path, "/push/")
	if !ok || r.Method != http.MethodPost {
		http.Error(w, "not a push resource", http.StatusNotFound)
		return
	}
	f.mu.Lock()
	sub := f.subs[id]
	f.mu.Unlock()
	if sub == nil {
		http.Error(w, "no such subscription", http.StatusGone)
		return
	}
	key, err := checkVAPID(r.Header.Get("Authorization"), "https://"+r.Host, f.now())
	if err != nil {
		f.rec.reject()
		writeWebPushError(w, http.StatusUnauthorized, "vapid: "+err.Error())
		return
	}
	if sub.appKey != "" && key != sub.appKey {
		f.rec.reject()
		writeWebPushError(w, http.StatusForbidden, "the VAPID key is not the subscription's applicationServerKey")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if r.Header.Get("Content-Encoding") != "aes128gcm" {
		writeWebPushError(w, http.StatusBadRequest, "Content-Encoding must be aes128gcm")
		return
	}
	if len(body) > 4096 {
		writeWebPushError(w, http.StatusRequestEntityTooLarge, "payload larger than 4096 bytes")
		return
	}
	plain, err := DecryptWebPush(body, sub.ua, sub.auth)
	if err != nil {
		writeWebPushError(w, http.StatusBadRequest, "body does not decrypt: "+err.Error())
		return
	}
	a, tk := f.rec.take(Request{Token: sub.token, Path: r.URL.Path, Header: r.Header, Body: plain, At: at}, webPushStatus)
	if !a.begin(w, r) {
		return
	}
	// Answered once begun: a client that left during the latency got
	// nothing, one that hangs up after the status has its answer.
	defer f.rec.answered(tk, w, r)
	status := webPushStatus(a)
	if status == http.StatusCreated {
		w.Header().Set("Location", "https://"+r.Host+"/message/"+rand.Text())
		w.WriteHeader(status)
		a.writeBody(w, r, nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	a.writeBody(w, r, webPushError(status, http.StatusText(status)))
}

func webPushStatus(a Answer) int {
	switch a.kind {
	case kindOK:
		return http.StatusCreated
	case kindUnregistered:
		return http.StatusGone
	case kindBadToken:
		return http.StatusNotFound
	case kindTooMany:
		return http.StatusTooManyRequests
	}
	return a.status
}

// writeWebPushError answers in the JSON shape Mozilla's autopush uses.
func writeWebPushError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(webPushError(status, msg))
}

func webPushError(status int, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"code": status, "error": http.StatusText(status), "message": msg})
	return b
}

// slowListener holds each accepted connection's first read and first
// write (WebPushOptions.DialDelay, TLSDelay).
type slowListener struct {
	net.Listener
	read, write time.Duration
}

func (l slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &slowConn{Conn: c, read: l.read, write: l.write}, nil
}

// slowConn sleeps before its first Read and its first Write. The server
// reads and writes a connection from its own goroutine, so only that
// connection waits.
type slowConn struct {
	net.Conn
	read, write         time.Duration
	readOnce, writeOnce sync.Once
}

func (c *slowConn) Read(b []byte) (int, error) {
	c.readOnce.Do(func() { time.Sleep(c.read) })
	return c.Conn.Read(b)
}

func (c *slowConn) Write(b []byte) (int, error) {
	c.writeOnce.Do(func() { time.Sleep(c.write) })
	return c.Conn.Write(b)
}

// checkVAPID checks a "vapid t=<JWT>, k=<key>" header for a push to origin
// and returns k.
func checkVAPID(h, origin string, now time.Time) (string, error) {
	rest, ok := strings.CutPrefix(h, "vapid ")
	if !ok {
		return "", errors.New(`no "vapid" Authorization`)
	}
	var t, k string
	for p := range strings.SplitSeq(rest, ",") {
		name, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		switch name {
		case "t":
			t = v
		case "k":
			k = strings.TrimRight(v, "=")
		}
	}
	raw, err := base64.RawURLEncoding.DecodeString(k)
	if err != nil {
		return "", errors.New("k is not base64url")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return "", errors.New("k is not an uncompressed P-256 key")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	signed, sig, err := jwtParts(t, &header, &claims)
	switch {
	case err != nil:
		return "", err
	case header.Alg != "ES256" || len(sig) != 64:
		return "", errors.New("not an ES256 JWT")
	case claims.Aud != origin:
		return "", errors.New("aud is not the push service's origin")
	case claims.Exp <= now.Unix():
		return "", errors.New("expired")
	case claims.Exp > now.Add(24*time.Hour).Unix():
		return "", errors.New("exp more than 24 hours ahead")
	case !strings.HasPrefix(claims.Sub, "mailto:") && !strings.HasPrefix(claims.Sub, "https:"):
		return "", errors.New("sub is not a mailto: or https: URI")
	}
	digest := sha256.Sum256([]byte(signed))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", errors.New("bad signature")
	}
	return k, nil
}
