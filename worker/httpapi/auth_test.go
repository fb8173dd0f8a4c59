package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAuthScheme: the bearer token is checked exactly, and its scheme
// case-insensitively (RFC 7235 §2.1).
func TestAuthScheme(t *testing.T) {
	h := newAuthenticator(Options{Token: "s3cret"}).wrap(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { rw.WriteHeader(http.StatusNoContent) }))
	tests := []struct {
		header string
		want   int
	}{
		{"Bearer s3cret", http.StatusNoContent},
		{"bearer s3cret", http.StatusNoContent},
		{"BEARER s3cret", http.StatusNoContent},
		{"Bearer  s3cret", http.StatusNoContent},
		{"", http.StatusUnauthorized},
		{"Bearer", http.StatusUnauthorized},
		{"Bearer ", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"Bearer s3cret2", http.StatusUnauthorized},
		{"Bearers3cret", http.StatusUnauthorized},
		{"Basic s3cret", http.StatusUnauthorized},
		{"s3cret", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/v1/notifications/j-1", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, req)
			if rr.Code != tt.want {
				t.Errorf("Authorization %q: %d, want %d", tt.header, rr.Code, tt.want)
			}
		})
	}
}
