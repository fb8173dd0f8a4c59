package httpapi

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/webpush"
	"github.com/hushpush/hush/worker"
)

// webPushToken is a subscription with fresh keys at endpoint.
func webPushToken(t *testing.T, endpoint string) string {
	t.Helper()
	ua, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	b, err := json.Marshal(map[string]any{"endpoint": endpoint, "keys": map[string]string{
		"p256dh": enc.EncodeToString(ua.PublicKey().Bytes()), "auth": enc.EncodeToString(make([]byte, 16))}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAPISubmitRefusesEndpointsTheEgressPolicyRefuses: with the default
// egress policy, a job whose fourth recipient has a Web Push endpoint that
// is not a browser vendor's push service on 443 (an address that is not
// public unicast in any spelling, another scheme, userinfo, another port
// or host) is answered 400 naming that device's token and the rule, and
// is not stored; a vendor's endpoint is accepted.
func TestAPISubmitRefusesEndpointsTheEgressPolicyRefuses(t *testing.T) {
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := webpush.New(webpush.Config{PrivateKey: key.PrivateKey(), Subject: "mailto:ops@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	e := newEnv(t, envOptions{noRun: true, senders: map[payload.Platform]worker.Sender{payload.WebPush: s}})
	srv := e.server()
	body := func(id, endpoint string) string {
		var rs []string
		for i := range 3 {
			rs = append(rs, `{"user_id":"u-`+strconv.Itoa(i)+`","devices":[{"platform":"apns","token":"`+apnsToken(id+strconv.Itoa(i))+`"}]}`)
		}
		tok, _ := json.Marshal(webPushToken(t, endpoint))
		rs = append(rs, `{"user_id":"u-3","devices":[{"platform":"webpush","token":`+string(tok)+`}]}`)
		return `{"id":"` + id + `","recipients":[` + strings.Join(rs, ",") + `],"alert":{"title":"hi"}}`
	}
	for i, tc := range []struct{ name, endpoint, rule string }{
		{"loopback", "https://127.0.0.1/internal/admin", "is loopback"},
		{"loopback with port", "https://127.0.0.1:8443/x", "is loopback"},
		{"ipv6 loopback", "https://[::1]/x", "is loopback"},
		{"this network", "https://0.0.0.0/x", "0.0.0.0/8"},
		{"rfc 1918", "https://10.1.2.3/x", "RFC 1918"},
		{"rfc 1918 192.168", "https://192.168.0.10/x", "RFC 1918"},
		{"cgnat", "https://100.100.0.1/x", "CGNAT"},
		{"metadata", "https://169.254.169.254/latest/meta-data", "link-local"},
		{"unique local", "https://[fc00::5]/x", "fc00::/7"},
		{"ipv6 link-local", "https://[fe80::1]/x", "link-local"},
		{"mapped private", "https://[::ffff:192.168.1.1]/x", "RFC 1918"},
		{"multicast", "https://239.1.1.1/x", "multicast"},
		{"integer", "https://2130706433/x", "numeric form"},
		{"hex", "https://0x7f.1/x", "numeric form"},
		{"http", "http://fcm.googleapis.com/fcm/send/x", "https"},
		{"userinfo", "https://admin:pw@fcm.googleapis.com/fcm/send/x", "userinfo"},
		{"other port", "https://fcm.googleapis.com:8443/fcm/send/x", "has port 8443"},
		{"in-cluster name", "https://redis.default.svc.cluster.local/x", "not an allowed push-service origin"},
		{"other host", "https://push.example.net/x", "not an allowed push-service origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "egress-" + strconv.Itoa(i)
			got := call(t, srv, http.MethodPost, "/v1/notifications", "", body(id, tc.endpoint))
			if got.Status != http.StatusBadRequest {
				t.Fatalf("status %d (%v), want 400", got.Status, got.Body)
			}
			env, _ := got.Body["error"].(map[string]any)
			problems, _ := env["problems"].([]any)
			var found bool
			for _, p := range problems {
				m, _ := p.(map[string]any)
				msg, _ := m["message"].(string)
				if m["field"] == "recipients[3].devices[0].token" && strings.Contains(msg, "endpoint") && strings.Contains(msg, tc.rule) {
					found = true
				}
			}
			if !found {
				t.Errorf("problems %v, want recipients[3].devices[0].token: endpoint ... %s", problems, tc.rule)
			}
			if st := call(t, srv, http.MethodGet, "/v1/notifications/"+id, "", ""); st.Status != http.StatusNotFound {
				t.Errorf("the refused job: status %d, want 404", st.Status)
			}
		})
	}
	if got := call(t, srv, http.MethodPost, "/v1/notifications", "", body("egress-ok", "https://fcm.googleapis.com/fcm/send/x")); got.Status != http.StatusAccepted {
		t.Errorf("a vendor's endpoint: status %d (%v), want 202", got.Status, got.Body)
	}
}
