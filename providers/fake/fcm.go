package fake

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FCM is a fake Firebase Cloud Messaging: a plain HTTP server with the HTTP
// v1 send endpoint (POST /v1/projects/<project>/messages:send) and an OAuth 2
// token endpoint (POST /token) for service-account JWT assertions.
//
// A send must carry "Authorization: Bearer <token>" with an access token the
// token endpoint issued; other sends get 401 UNAUTHENTICATED and are only
// counted.
type FCM struct {
	// URL is the base URL, e.g. "http://127.0.0.1:41235".
	URL string

	srv *httptest.Server
	rec *recorder

	mu           sync.Mutex
	issued       map[string]struct{}
	tokenCount   int
	rejectTokens bool
	next         int64
}

// StartFCM starts a fake FCM. Every token answers OK until scripted.
func StartFCM() (*FCM, error) {
	f := &FCM{rec: newRecorder(), issued: make(map[string]struct{})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	f.srv = srv
	f.URL = srv.URL
	return f, nil
}

// Close shuts the server down.
func (f *FCM) Close() { f.srv.Close() }

// Endpoint is the messaging endpoint, URL + "/v1" (HUSH_FCM_ENDPOINT).
func (f *FCM) Endpoint() string { return f.URL + "/v1" }

// TokenURL is the OAuth 2 token endpoint, for a service account's token_uri.
func (f *FCM) TokenURL() string { return f.URL + "/token" }

// Script sets the answers for token, in order; the last one repeats. An empty
// token sets the default for tokens without a script.
func (f *FCM) Script(token string, answers ...Answer) { f.rec.script(token, answers) }

// Requests returns a copy of the accepted sends, in arrival order.
func (f *FCM) Requests() []Request { return f.rec.requests() }

// Counts returns how many sends were accepted and how many were rejected for
// authentication.
func (f *FCM) Counts() (accepted, rejected int) { return f.rec.counts() }

// TokenRequests returns how many access tokens the token endpoint issued.
func (f *FCM) TokenRequests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenCount
}

// RejectTokens makes the token endpoint answer 400 invalid_grant, as Google
// does for a revoked or unknown service-account key.
func (f *FCM) RejectTokens(reject bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rejectTokens = reject
}

// Record switches the keeping of requests on (the default) or off (for
// benchmarks: only counted).
func (f *FCM) Record(on bool) { f.rec.setRecording(on) }

// Reset forgets the recorded requests and the counts (scripts stay).
func (f *FCM) Reset() { f.rec.reset() }

func (f *FCM) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	if r.Method != http.MethodPost {
		writeFCMError(w, http.StatusMethodNotAllowed, "", "method not allowed", false)
		return
	}
	if r.URL.Path == "/token" {
		f.serveToken(w, r, at)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/projects/")
	project, ok2 := strings.CutSuffix(rest, "/messages:send")
	if !ok || !ok2 || project == "" || strings.Contains(project, "/") {
		writeFCMError(w, http.StatusNotFound, "", "The requested URL was not found on this server.", false)
		return
	}
	if !f.authenticated(r) {
		f.rec.reject()
		writeFCMError(w, http.StatusUnauthorized, "", "Request had invalid authentication credentials. "+
			"Expected OAuth 2 access token, login cookie or other valid authentication credential.", false)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req struct {
		Message struct {
			Token string `json:"token"`
		} `json:"message"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Message.Token == "" {
		writeFCMError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Request contains an invalid argument.", false)
		return
	}
	a, tk := f.rec.take(Request{Token: req.Message.Token, Path: r.URL.Path, Header: r.Header, Body: body, At: at}, fcmStatus)
	if !a.begin(w, r) {
		return
	}
	// Answered once begun: a client that left during the latency got
	// nothing, one that hangs up after the status has its answer.
	defer f.rec.answered(tk, w, r)
	status, code, msg, tokenField := fcmRender(a)
	if status == http.StatusOK {
		f.mu.Lock()
		f.next++
		n := f.next
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(http.StatusOK)
		a.writeBody(w, r, []byte(`{"name":"projects/`+project+`/messages/`+strconv.FormatInt(n, 10)+`"}`))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	a.writeBody(w, r, fcmErrorBody(status, code, msg, tokenField))
}

func (f *FCM) authenticated(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok = f.issued[tok]
	return ok
}

// serveToken is the OAuth 2 token endpoint for the JWT bearer grant.
func (f *FCM) serveToken(w http.ResponseWriter, r *http.Request, now time.Time) {
	w.Header().Set("Content-Type", "application/json")
	if err := r.ParseForm(); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_request"}`)
		return
	}
	f.mu.Lock()
	reject := f.rejectTokens
	f.mu.Unlock()
	if reject || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" ||
		serviceAccountJWT(r.PostForm.Get("assertion"), "http://"+r.Host+"/token", now) != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
		return
	}
	f.mu.Lock()
	f.tokenCount++
	tok := "ya29.fake-" + strconv.Itoa(f.tokenCount) + "-" + strconv.FormatInt(now.UnixNano(), 36)
	f.issued[tok] = struct{}{}
	f.mu.Unlock()
	_, _ = io.WriteString(w, `{"access_token":"`+tok+`","token_type":"Bearer","expires_in":3600}`)
}

func fcmStatus(a Answer) int {
	status, _, _, _ := fcmRender(a)
	return status
}

// fcmRender maps an answer to the HTTP status, the FcmError errorCode, the
// message, and whether to add a field violation on message.token.
func fcmRender(a Answer) (status int, code, msg string, tokenField bool) {
	switch a.kind {
	case kindOK:
		return http.StatusOK, "", "", false
	case kindUnregistered:
		return http.StatusNotFound, "UNREGISTERED", "Requested entity was not found.", false
	case kindBadToken:
		return http.StatusBadRequest, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", true
	case kindFCM:
		msg = a.message
		if msg == "" {
			_, _, msg = fcmDefaults(a.status)
		}
		return a.status, a.reason, msg, false
	}
	if a.kind == kindTooMany {
		a.status = http.StatusTooManyRequests
	}
	_, code, msg = fcmDefaults(a.status)
	return a.status, code, msg, false
}

// fcmDefaults is FCM's usual canonical status, errorCode and message for an
// HTTP status.
func fcmDefaults(status int) (canonical, code, msg string) {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Request contains an invalid argument."
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR", "Auth error from APNS or Web Push Service"
	case http.StatusForbidden:
		return "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch"
	case http.StatusNotFound:
		return "NOT_FOUND", "UNREGISTERED", "Requested entity was not found."
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded for quota metric 'Send requests'."
	case http.StatusInternalServerError:
		return "INTERNAL", "INTERNAL", "Internal error encountered."
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE", "UNAVAILABLE", "The service is currently unavailable."
	}
	return "UNKNOWN", "", http.StatusText(status)
}

// fcmError is the Google API error body FCM answers with.
type fcmError struct {
	Error struct {
		Code    int              `json:"code"`
		Message string           `json:"message"`
		Status  string           `json:"status"`
		Details []map[string]any `json:"details,omitempty"`
	} `json:"error"`
}

func writeFCMError(w http.ResponseWriter, status int, code, msg string, tokenField bool) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(fcmErrorBody(status, code, msg, tokenField))
}

// fcmErrorBody is an FCM error answer's JSON body.
func fcmErrorBody(status int, code, msg string, tokenField bool) []byte {
	var e fcmError
	e.Error.Code = status
	e.Error.Message = msg
	e.Error.Status, _, _ = fcmDefaults(status)
	if code != "" {
		e.Error.Details = append(e.Error.Details, map[string]any{
			"@type":     "type.googleapis.com/google.firebase.fcm.v1.FcmError",
			"errorCode": code,
		})
	}
	if tokenField {
		e.Error.Details = append(e.Error.Details, map[string]any{
			"@type": "type.googleapis.com/google.rpc.BadRequest",
			"fieldViolations": []map[string]string{{
				"field":       "message.token",
				"description": "Invalid registration token",
			}},
		})
	}
	b, _ := json.Marshal(e)
	return b
}
