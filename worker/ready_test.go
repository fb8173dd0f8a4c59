package worker

import (
	"net/http"
	"testing"

	"github.com/hushpush/hush/providers"
)

// TestRefusesApp: only app-wide evidence fails readiness; an answer about
// one subscription never does.
func TestRefusesApp(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    providers.Result
		want bool
	}{
		{"apns provider token refused", providers.Result{Outcome: providers.Permanent, StatusCode: http.StatusForbidden, Reason: "InvalidProviderToken", Credential: true}, true},
		{"fcm service account refused", providers.Result{Outcome: providers.Permanent, StatusCode: http.StatusUnauthorized, Reason: "UNAUTHENTICATED", Credential: true}, true},
		{"vapid key cannot sign", providers.Result{Outcome: providers.Permanent, Reason: "vapid", Credential: true}, true},
		{"web push 403 for one subscription", providers.Result{Outcome: providers.TokenInvalid, StatusCode: http.StatusForbidden, KeyRefusedBy: "https://fcm.googleapis.com"}, false},
		{"web push 401 for one subscription", providers.Result{Outcome: providers.TokenInvalid, StatusCode: http.StatusUnauthorized, KeyRefusedBy: "https://push.example.net"}, false},
		{"a refusal about one subscription marked credential", providers.Result{Outcome: providers.TokenInvalid, StatusCode: http.StatusForbidden, Credential: true, KeyRefusedBy: "https://push.example.net"}, false},
		{"throttled", providers.Result{Outcome: providers.Throttled, StatusCode: http.StatusTooManyRequests}, false},
		{"transient", providers.Result{Outcome: providers.Transient, Reason: "timeout"}, false},
		{"delivered", providers.Result{Outcome: providers.Delivered, StatusCode: http.StatusCreated}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := refusesApp(tc.r); got != tc.want {
				t.Errorf("refusesApp = %t, want %t", got, tc.want)
			}
		})
	}
}
