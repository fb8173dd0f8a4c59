package webpush_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/webpush"
)

// TestEgressPolicyEndpoints: each endpoint form a subscriber could use to
// reach something other than a push service is refused with the rule that
// refuses it, and an allowed endpoint gives the origin a push service
// computes for the VAPID aud.
func TestEgressPolicyEndpoints(t *testing.T) {
	def, err := webpush.NewEgressPolicy(webpush.Egress{})
	if err != nil {
		t.Fatal(err)
	}
	public, err := webpush.NewEgressPolicy(webpush.Egress{Origins: []string{"public"}})
	if err != nil {
		t.Fatal(err)
	}
	listed, err := webpush.NewEgressPolicy(webpush.Egress{Origins: []string{"push.example.net:8443", "*.up.example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		policy   *webpush.EgressPolicy
		endpoint string
		rule     string // "" : allowed
		origin   string
	}{
		{"fcm", def, "https://fcm.googleapis.com/fcm/send/x", "", "https://fcm.googleapis.com"},
		{"mozilla wildcard", def, "https://updates-autopush.push.services.mozilla.com/wpush/v2/x", "", "https://updates-autopush.push.services.mozilla.com"},
		{"windows", def, "https://wns2-par02p.notify.windows.com/w/?token=x", "", "https://wns2-par02p.notify.windows.com"},
		{"apple", def, "https://web.push.apple.com/x", "", "https://web.push.apple.com"},
		{"upper case and :443", def, "https://FCM.GoogleAPIs.com:443/fcm/send/x", "", "https://fcm.googleapis.com"},
		{"not listed", def, "https://push.example.net/x", "is not an allowed push-service origin", ""},
		{"wildcard is not the domain itself", def, "https://notify.windows.com/x", "is not an allowed push-service origin", ""},
		{"http", public, "http://push.example.net/x", "must be an https URL", ""},
		{"userinfo", public, "https://user:pw@push.example.net/x", "must not carry userinfo", ""},
		{"loopback", public, "https://127.0.0.1/x", "is loopback", ""},
		{"ipv6 loopback", public, "https://[::1]/x", "is loopback", ""},
		{"this network", public, "https://0.0.0.0/x", "0.0.0.0/8", ""},
		{"this network 0.1.2.3", public, "https://0.1.2.3/x", "0.0.0.0/8", ""},
		{"rfc 1918 10/8", public, "https://10.0.0.7/x", "is private (RFC 1918)", ""},
		{"rfc 1918 172.16/12", public, "https://172.20.1.1/x", "is private (RFC 1918)", ""},
		{"rfc 1918 192.168/16", public, "https://192.168.1.1/x", "is private (RFC 1918)", ""},
		{"cgnat", public, "https://100.64.0.1/x", "CGNAT", ""},
		{"metadata", public, "https://169.254.169.254/latest/meta-data", "is link-local", ""},
		{"unique local", public, "https://[fd00::1]/x", "is unique local (fc00::/7)", ""},
		{"ipv6 link-local", public, "https://[fe80::1]/x", "is link-local", ""},
		{"mapped private", public, "https://[::ffff:10.0.0.1]/x", "is private (RFC 1918)", ""},
		{"mapped loopback", public, "https://[::ffff:127.0.0.1]/x", "is loopback", ""},
		{"nat64 of loopback", public, "https://[64:ff9b::7f00:1]/x", "embeds 127.0.0.1", ""},
		{"multicast", public, "https://224.0.0.1/x", "is multicast", ""},
		{"ipv6 multicast", public, "https://[ff02::1]/x", "is multicast", ""},
		{"broadcast", public, "https://255.255.255.255/x", "is not unicast", ""},
		{"integer", public, "https://2130706433/x", "numeric form", ""},
		{"hex", public, "https://0x7f.1/x", "numeric form", ""},
		{"short dotted", public, "https://127.1/x", "numeric form", ""},
		{"octal", public, "https://0177.0.0.1/x", "numeric form", ""},
		{"percent-encoded", public, "https://127.0.0.%31/x", "is not a URL", ""},
		{"public literal", public, "https://8.8.8.8/x", "", "https://8.8.8.8"},
		{"public any port", public, "https://ntfy.example.org:8443/up/x", "", "https://ntfy.example.org:8443"},
		{"port not listed", def, "https://fcm.googleapis.com:8443/x", "has port 8443", ""},
		{"listed host:port", listed, "https://push.example.net:8443/x", "", "https://push.example.net:8443"},
		{"listed host, other port", listed, "https://push.example.net/x", "is not an allowed push-service origin", ""},
		{"listed wildcard", listed, "https://a.up.example.org/x", "", "https://a.up.example.org"},
		{"listed wildcard, other port", listed, "https://a.up.example.org:444/x", "has port 444", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin, err := tc.policy.CheckEndpoint(tc.endpoint)
			switch {
			case tc.rule == "" && err != nil:
				t.Fatalf("CheckEndpoint(%s) = %v, want allowed", tc.endpoint, err)
			case tc.rule == "" && origin != tc.origin:
				t.Errorf("CheckEndpoint(%s) origin = %s, want %s", tc.endpoint, origin, tc.origin)
			case tc.rule != "" && (err == nil || !strings.Contains(err.Error(), tc.rule)):
				t.Errorf("CheckEndpoint(%s) = %v, want refused: %s", tc.endpoint, err, tc.rule)
			case tc.rule != "" && strings.Contains(err.Error(), "/x"):
				t.Errorf("CheckEndpoint(%s) = %v: names the endpoint's path", tc.endpoint, err)
			}
		})
	}
}

// TestEgressPrivateNetworksAllowLiterals: a prefix of PrivateNetworks lets
// its addresses through, and only those.
func TestEgressPrivateNetworksAllowLiterals(t *testing.T) {
	p, err := webpush.NewEgressPolicy(webpush.Egress{Origins: []string{"public"}, PrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CheckEndpoint("https://127.0.0.1:8443/x"); err != nil {
		t.Errorf("127.0.0.1 with 127.0.0.0/8 allowed: %v", err)
	}
	if _, err := p.CheckEndpoint("https://10.0.0.1/x"); err == nil {
		t.Errorf("10.0.0.1 with only 127.0.0.0/8 allowed: not refused")
	}
}

// TestEgressOriginsRefusesBadEntries: an origin entry that is a URL, has a
// bad port or a wildcard in the middle is refused.
func TestEgressOriginsRefusesBadEntries(t *testing.T) {
	for _, o := range []string{"https://fcm.googleapis.com", "push.example.net:0", "push.example.net:x", "a.*.example.net", "*", "*.", ",", "push example"} {
		if _, err := webpush.NewEgressPolicy(webpush.Egress{Origins: []string{o}}); err == nil {
			t.Errorf("NewEgressPolicy(Origins %q): want an error", o)
		}
	}
}

// countingServer is an HTTPS server that counts the connections it
// accepts and the requests it is sent.
type countingServer struct {
	*httptest.Server
	conns, requests atomic.Int64
	ca              string
}

func startCounting(t *testing.T) *countingServer {
	t.Helper()
	c := &countingServer{}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c.requests.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	c.EnableHTTP2 = true
	c.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.conns.Add(1)
		}
	}
	c.StartTLS()
	t.Cleanup(c.Close)
	c.ca = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(c.ca, pemOf(c.Server), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSendRefusesANameResolvingToLoopback: an endpoint whose host is a
// name allowed by Origins but resolving to a loopback address (as an
// in-cluster name or a rebinding DNS answer resolves to a private one) is
// refused at dial: token_invalid with the rule, and the service behind it
// never sees a connection.
func TestSendRefusesANameResolvingToLoopback(t *testing.T) {
	srv := startCounting(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	f, _, _ := startFake(t) // only for a subscription's keys
	key, _ := webpush.GenerateVAPIDKey()
	s, err := webpush.New(webpush.Config{PrivateKey: key.PrivateKey(), Subject: "mailto:ops@example.com", CAFile: srv.ca,
		Egress: webpush.Egress{Origins: []string{"localhost:" + port}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tok := strings.Replace(subscribe(t, f, ""), f.URL, "https://localhost:"+port, 1)
	if err := s.CheckToken(tok); err != nil {
		t.Fatalf("CheckToken: %v, want nil: the name is allowed, its addresses are judged at dial", err)
	}
	r := s.Send(t.Context(), alertPush(tok))
	if r.Outcome != providers.TokenInvalid || !strings.Contains(r.Reason, "127.0.0.1 is loopback") || strings.Contains(r.Reason, "/push/") {
		t.Errorf("Send = %+v, want token_invalid naming 127.0.0.1 as loopback (and not the endpoint's path)", r)
	}
	if n := srv.conns.Load(); n != 0 {
		t.Errorf("the loopback service accepted %d connections, want 0", n)
	}
}

// TestSendNeverReachesALoopbackService: with the default policy, a
// subscription naming a loopback HTTPS service (even one hush trusts with
// HUSH_WEBPUSH_CA_FILE) is refused at submit and at send, and the service
// sees no connection and no request.
func TestSendNeverReachesALoopbackService(t *testing.T) {
	srv := startCounting(t)
	f, _, _ := startFake(t)
	key, _ := webpush.GenerateVAPIDKey()
	s, err := webpush.New(webpush.Config{PrivateKey: key.PrivateKey(), Subject: "mailto:ops@example.com", CAFile: srv.ca})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tok := strings.Replace(subscribe(t, f, ""), f.URL+"/push/", srv.URL+"/internal/admin?op=flush&id=", 1)
	if err := s.CheckToken(tok); err == nil || !strings.Contains(err.Error(), "is loopback") {
		t.Errorf("CheckToken = %v, want refused as loopback", err)
	}
	r := s.Send(t.Context(), alertPush(tok))
	if r.Outcome != providers.TokenInvalid || !strings.Contains(r.Reason, "is loopback") {
		t.Errorf("Send = %+v, want token_invalid: loopback", r)
	}
	if c, n := srv.conns.Load(), srv.requests.Load(); c != 0 || n != 0 {
		t.Errorf("the loopback service saw %d connections and %d requests, want none", c, n)
	}
}
