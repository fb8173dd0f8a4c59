package setup

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hushpush/hush/providers/webpush"
)

func TestAppsFileWebPush(t *testing.T) {
	c := writeCreds(t, "http://127.0.0.1:1/token")
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := webpush.GenerateVAPIDKey()
	app := func(block string) string { return "apps:\n  - name: web\n    webpush:\n" + block }
	for _, tc := range []struct {
		name, text string
		want       []problem
	}{
		{"good", app("      private_key: " + key.PrivateKey() + "\n      public_key: " + key.PublicKey() + "\n      subject: mailto:ops@example.com\n      max_rate: 100/s\n"), nil},
		{"no subject", app("      private_key: " + key.PrivateKey() + "\n"), []problem{{"apps[web].webpush.subject", "required: a mailto: or https: URI a push service can reach you at"}}},
		{"no key", app("      subject: mailto:ops@example.com\n"), []problem{{"apps[web].webpush.private_key", "required (hush webpush keys makes a pair)"}}},
		{"bad key", app("      private_key: abc\n      subject: mailto:ops@example.com\n"), []problem{{"apps[web].webpush.private_key", "not a P-256 private key"}}},
		{"another public key", app("      private_key: " + key.PrivateKey() + "\n      public_key: " + other.PublicKey() + "\n      subject: mailto:ops@example.com\n"),
			[]problem{{"apps[web].webpush.public_key", "is not the private key's public key"}}},
		{"unknown field", app("      private_key: " + key.PrivateKey() + "\n      subject: mailto:ops@example.com\n      contact: x\n"),
			[]problem{{"apps[web].webpush.contact", "unknown field"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			infos, err := CheckAppsFile(t.Context(), DefaultConfig(), c.file(t, "apps.yaml", tc.text))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CheckAppsFile: %v", err)
				}
				want := &WebPushInfo{PublicKey: key.PublicKey(), Subject: "mailto:ops@example.com", MaxRate: "100/s", PerSecond: 100}
				if len(infos) != 1 || infos[0].Name != "web" {
					t.Fatalf("apps = %+v, want web", infos)
				}
				if d := cmp.Diff(want, infos[0].WebPush); d != "" {
					t.Errorf("web's Web Push (-want +got):\n%s", d)
				}
				return
			}
			afe, ok := errors.AsType[*AppsFileError](err)
			if !ok {
				t.Fatalf("CheckAppsFile: %v, want an *AppsFileError", err)
			}
			var got []problem
			for _, p := range afe.Problems {
				msg := p.Err.Error()
				for _, w := range tc.want {
					if w.path == p.Path && strings.Contains(msg, w.reason) {
						msg = w.reason
					}
				}
				got = append(got, problem{p.Path, msg})
			}
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(problem{})); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}

func TestConfigWebpushKeys(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(*Config)
		wantKey string
	}{
		{"none", func(*Config) {}, ""},
		{"pair and subject", func(c *Config) { c.WebpushPrivateKey, c.WebpushSubject = "k", "mailto:a@b.c" }, ""},
		{"no subject", func(c *Config) { c.WebpushPrivateKey = "k" }, "HUSH_WEBPUSH_SUBJECT"},
		{"subject alone", func(c *Config) { c.WebpushSubject = "mailto:a@b.c" }, "HUSH_WEBPUSH_SUBJECT"},
		{"ca alone", func(c *Config) { c.WebpushCaFile = "ca.pem" }, "HUSH_WEBPUSH_CA_FILE"},
		{"origins public, loopback allowed", func(c *Config) {
			c.WebpushOrigins, c.WebpushPrivateNetworks = []string{"public"}, []string{"127.0.0.0/8"}
		}, ""},
		{"origins host:port and wildcard", func(c *Config) { c.WebpushOrigins = []string{"push.example.net:8443", " *.up.example.org"} }, ""},
		{"origins empty: the default", func(c *Config) { c.WebpushOrigins = []string{""} }, ""},
		{"origin a URL", func(c *Config) { c.WebpushOrigins = []string{"https://fcm.googleapis.com"} }, "HUSH_WEBPUSH_ORIGINS"},
		{"origin bad port", func(c *Config) { c.WebpushOrigins = []string{"push.example.net:0"} }, "HUSH_WEBPUSH_ORIGINS"},
		{"private network not a prefix", func(c *Config) { c.WebpushPrivateNetworks = []string{"127.0.0.1"} }, "HUSH_WEBPUSH_PRIVATE_NETWORKS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			err := cfg.Validate()
			var got string
			if ke, ok := errors.AsType[*KeyError](err); ok {
				got = ke.Key
			} else if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got != tc.wantKey {
				t.Errorf("key at fault = %q, want %q (%v)", got, tc.wantKey, err)
			}
		})
	}
}

// TestWebPushEgressReachesEverySender: HUSH_WEBPUSH_ORIGINS and
// HUSH_WEBPUSH_PRIVATE_NETWORKS become the Egress of the HUSH_* keys'
// app and of every app of the apps file, and the default is the browser
// vendors' push services.
func TestWebPushEgressReachesEverySender(t *testing.T) {
	cfg := DefaultConfig()
	if d := cmp.Diff(strings.Split(webpush.OriginsDefault, ","), cfg.WebpushOrigins); d != "" {
		t.Errorf("default HUSH_WEBPUSH_ORIGINS (-want +got):\n%s", d)
	}
	cfg.WebpushPrivateKey, cfg.WebpushSubject = "k", "mailto:a@b.c"
	cfg.WebpushOrigins, cfg.WebpushPrivateNetworks = []string{"public"}, []string{"127.0.0.1/8"}
	want := webpush.Egress{Origins: []string{"public"}, PrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	if d := cmp.Diff(want, envApp(cfg).webpush.Egress, cmpopts.EquateComparable(netip.Prefix{})); d != "" {
		t.Errorf("the HUSH_* app's Egress (-want +got):\n%s", d)
	}
	a := fileApp(appEntry{Name: "web", WebPush: &webpushEntry{PrivateKey: "k", Subject: "mailto:a@b.c"}}, "apps[web]", cfg, t.TempDir(), &problems{})
	if a.webpush == nil {
		t.Fatal("the file app has no webpush config")
	}
	if d := cmp.Diff(want, a.webpush.Egress, cmpopts.EquateComparable(netip.Prefix{})); d != "" {
		t.Errorf("the file app's Egress (-want +got):\n%s", d)
	}
}
