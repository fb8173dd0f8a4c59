package fake_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hushpush/hush/providers/fake"
)

func startFCM(t *testing.T) *fake.FCM {
	t.Helper()
	f, err := fake.StartFCM()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// TestFCMRejectsUnauthenticated checks a send without an issued access
// token gets FCM's 401 body and is counted, not recorded.
func TestFCMRejectsUnauthenticated(t *testing.T) {
	f := startFCM(t)
	for _, auth := range []string{"", "Bearer made-up"} {
		req, err := http.NewRequest(http.MethodPost, f.Endpoint()+"/projects/p/messages:send",
			strings.NewReader(`{"message":{"token":"tok"}}`))
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Code   int    `json:"code"`
				Status string `json:"status"`
			} `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 401 || body.Error.Code != 401 || body.Error.Status != "UNAUTHENTICATED" {
			t.Errorf("auth %q: answer %d %+v, want 401 UNAUTHENTICATED", auth, resp.StatusCode, body)
		}
	}
	accepted, rejected := f.Counts()
	if accepted != 0 || rejected != 2 || len(f.Requests()) != 0 {
		t.Errorf("accepted, rejected, recorded = %d, %d, %d; want 0, 2, 0", accepted, rejected, len(f.Requests()))
	}
}

func TestFCMTokenEndpointRejectsBadAssertions(t *testing.T) {
	f := startFCM(t)
	tests := []struct {
		name string
		form url.Values
	}{
		{"no assertion", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}}},
		{"not a JWT", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {"abc"}}},
		{"wrong grant", url.Values{"grant_type": {"client_credentials"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.PostForm(f.TokenURL(), tt.form)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 {
				t.Errorf("status = %d, want 400", resp.StatusCode)
			}
			var got map[string]string
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff("invalid_grant", got["error"]); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
	if n := f.TokenRequests(); n != 0 {
		t.Errorf("issued %d tokens, want 0", n)
	}
}
