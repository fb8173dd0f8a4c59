package setup

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
