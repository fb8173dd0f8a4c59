package fake

import (
	"crypto/ecdsa"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// APNs is a fake APNs: an HTTP/2 TLS server on 127.0.0.1 serving
// POST /3/device/<token>.
//
// A request is authenticated by a client certificate (certificate auth) or by
// an "authorization: bearer <JWT>" header whose JWT has the APNs shape (ES256,
// kid, iss, iat within the hour; signature checked when keys were trusted with
// TrustKey). Other requests get 403 with the APNs reason and are only counted.
type APNs struct {
	// URL is the base URL, e.g. "https://127.0.0.1:41234" (HUSH_APNS_ENDPOINT).
	URL string

	srv *httptest.Server
	rec *recorder

	mu      sync.Mutex
	keys    map[string]*ecdsa.PublicKey
	verify  bool                // a key was forgotten: signatures are checked even with none trusted
	bearers map[string]struct{} // bearers already checked and accepted
	conns   int                 // connections accepted
}

// StartAPNs starts a fake APNs. Every token answers OK until scripted.
func StartAPNs() (*APNs, error) {
	f := &APNs{rec: newRecorder(), bearers: make(map[string]struct{})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1000}
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			f.mu.Lock()
			f.conns++
			f.mu.Unlock()
		}
	}
	srv.StartTLS()
	f.srv = srv
	f.URL = srv.URL
	return f, nil
}

// Close shuts the server down.
func (f *APNs) Close() { f.srv.Close() }

// Connections is how many TCP connections the fake has accepted.
func (f *APNs) Connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

// CAPEM is the PEM of the server's self-signed certificate, the CA to trust.
func (f *APNs) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
}

// WriteCA writes CAPEM to dir/apns-ca.pem and returns the path, for
// HUSH_APNS_CA_FILE.
func (f *APNs) WriteCA(dir string) (string, error) {
	path := filepath.Join(dir, "apns-ca.pem")
	return path, os.WriteFile(path, f.CAPEM(), 0o600)
}

// TrustKey makes the fake verify JWT signatures: once a key is trusted, only
// tokens signed by a trusted key id are accepted.
func (f *APNs) TrustKey(keyID string, pub *ecdsa.PublicKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys == nil {
		f.keys = make(map[string]*ecdsa.PublicKey)
	}
	f.keys[keyID] = pub
	clear(f.bearers)
}

// ForgetKey stops trusting keyID (a rotated key): tokens it signed are
// refused from then on (403 InvalidProviderToken), even when no trusted key
// is left. Requests of a topic keep being told apart by their apns-topic
// header (Request.Header).
func (f *APNs) ForgetKey(keyID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.keys, keyID)
	if f.keys == nil {
		f.keys = make(map[string]*ecdsa.PublicKey)
	}
	f.verify = true
	clear(f.bearers)
}

// Script sets the answers for token, in order; the last one repeats. An empty
// token sets the default for tokens without a script.
func (f *APNs) Script(token string, answers ...Answer) { f.rec.script(token, answers) }

// Requests returns a copy of the accepted requests, in arrival order.
func (f *APNs) Requests() []Request { return f.rec.requests() }

// Counts returns how many requests were accepted and how many were rejected
// for authentication.
func (f *APNs) Counts() (accepted, rejected int) { return f.rec.counts() }

// Record switches the keeping of requests on (the default) or off (for
// benchmarks: only counted).
func (f *APNs) Record(on bool) { f.rec.setRecording(on) }

// Reset forgets the recorded requests and the counts (scripts stay).
func (f *APNs) Reset() { f.rec.reset() }

func (f *APNs) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	token, ok := strings.CutPrefix(r.URL.Path, "/3/device/")
	switch {
	case !ok:
		writeAPNsError(w, http.StatusNotFound, "BadPath", time.Time{})
		return
	case r.Method != http.MethodPost:
		writeAPNsError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", time.Time{})
		return
	}
	if reason := f.authenticate(r, at); reason != "" {
		f.rec.reject()
		writeAPNsError(w, http.StatusForbidden, reason, time.Time{})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	a, tk := f.rec.take(Request{Token: token, Path: r.URL.Path, Header: r.Header, Body: body, At: at}, apnsStatus)
	if !a.begin(w, r) {
		return
	}
	// Answered once begun: a client that left during the latency got
	// nothing, one that hangs up after the status has its answer.
	defer f.rec.answered(tk, w, r)
	status, reason := apnsRender(a)
	if status == http.StatusOK {
		id := r.Header.Get("apns-id")
		if id == "" {
			id = fmt.Sprintf("00000000-0000-4000-8000-%012x", uint64(at.UnixNano())&0xffffffffffff)
		}
		w.Header().Set("apns-id", id)
		w.WriteHeader(http.StatusOK)
		a.writeBody(w, r, nil)
		return
	}
	var ts time.Time
	if status == http.StatusGone {
		ts = at
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	a.writeBody(w, r, apnsError(reason, ts))
}

// authenticate returns "" when r carries a client certificate or an
// acceptable provider token, else the APNs reason.
func (f *APNs) authenticate(r *http.Request, now time.Time) string {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return ""
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "MissingProviderToken"
	}
	scheme, bearer, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "InvalidProviderToken"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.bearers[bearer]; ok {
		return ""
	}
	if reason := apnsJWT(bearer, f.keys, f.verify, now); reason != "" {
		return reason
	}
	f.bearers[bearer] = struct{}{}
	return ""
}

func apnsStatus(a Answer) int {
	status, _ := apnsRender(a)
	return status
}

// apnsRender maps an answer to the APNs status and reason.
func apnsRender(a Answer) (int, string) {
	switch a.kind {
	case kindOK:
		return http.StatusOK, ""
	case kindUnregistered:
		return http.StatusGone, "Unregistered"
	case kindBadToken:
		return http.StatusBadRequest, "BadDeviceToken"
	case kindTooMany:
		return http.StatusTooManyRequests, "TooManyRequests"
	case kindAPNs:
		return a.status, a.reason
	}
	return a.status, apnsReasonFor(a.status)
}

func apnsReasonFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadMessageId"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusNotFound:
		return "BadPath"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowed"
	case http.StatusGone:
		return "Unregistered"
	case http.StatusRequestEntityTooLarge:
		return "PayloadTooLarge"
	case http.StatusTooManyRequests:
		return "TooManyRequests"
	case http.StatusInternalServerError:
		return "InternalServerError"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	}
	return ""
}

func writeAPNsError(w http.ResponseWriter, status int, reason string, ts time.Time) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(apnsError(reason, ts))
}

// apnsError is an APNs error answer's JSON body.
func apnsError(reason string, ts time.Time) []byte {
	body := `{"reason":"` + reason + `"`
	if !ts.IsZero() {
		body += `,"timestamp":` + strconv.FormatInt(ts.UnixMilli(), 10)
	}
	return []byte(body + "}")
}
