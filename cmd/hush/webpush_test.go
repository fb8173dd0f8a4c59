package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/providers/webpush"
	"github.com/hushpush/hush/webhook"
)

// rfcSubscription is a PushSubscription with RFC 8291 Appendix A's keys,
// indented as a web app might save it.
const rfcSubscription = `{
  "endpoint": "https://push.example.net/push/JzLQ3raZJfFBR0aqvOMsLrt54w4rJUsV",
  "expirationTime": null,
  "keys": {
    "p256dh": "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
    "auth": "BTBZMqHH6r4Tts7J_aSIgg"
  }
}
`

func TestWebPushKeys(t *testing.T) {
	stdout, stderr, code := runCmd(t, "webpush", "keys", "--json")
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	var got struct {
		Public  string `json:"public_key"`
		Private string `json:"private_key"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	k, err := webpush.ParseVAPIDKey(got.Private)
	if err != nil {
		t.Fatalf("the private key does not parse: %v", err)
	}
	if k.PublicKey() != got.Public {
		t.Errorf("public key %q is not the private key's (%q)", got.Public, k.PublicKey())
	}
	// stdout is only KEY=value lines, as `export $(hush webpush keys)`
	// needs; the public key for the web app goes to stderr.
	stdout, stderr, code = runCmd(t, "webpush", "keys")
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "HUSH_WEBPUSH_PRIVATE_KEY=") || !strings.HasPrefix(lines[1], "HUSH_WEBPUSH_PUBLIC_KEY=") {
		t.Errorf("exit %d, stdout:\n%s\nwant exactly the two KEY=value lines", code, stdout)
	}
	if !strings.Contains(stderr, "applicationServerKey") {
		t.Errorf("stderr:\n%s\nwant the applicationServerKey", stderr)
	}
}

func TestSendWebPush(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub.json")
	if err := os.WriteFile(sub, []byte(rfcSubscription), 0o600); err != nil {
		t.Fatal(err)
	}
	api := startFakeAPI(t, http.StatusAccepted, `{"id":"j-1"}`)
	_, stderr, code := runCmd(t, "send", "--server", api.srv.URL, "--user", "u-42", "--webpush", sub, "--title", "Hi")
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	var got struct {
		Recipients []struct {
			Devices []struct{ Platform, Token string }
		}
	}
	if err := json.Unmarshal(api.only(t).Body, &got); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(rfcSubscription)); err != nil {
		t.Fatal(err)
	}
	want := []struct{ Platform, Token string }{{"webpush", compact.String()}}
	if d := cmp.Diff(want, got.Recipients[0].Devices); d != "" {
		t.Errorf("devices (-want +got):\n%s", d)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(strings.Replace(rfcSubscription, "BTBZMqHH6r4Tts7J_aSIgg", "BTBZ", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCmd(t, "send", "--server", api.srv.URL, "--user", "u-42", "--webpush", bad, "--title", "Hi")
	if code != 2 || !strings.Contains(stderr, "keys.auth") {
		t.Errorf("exit %d, stderr %q; want 2 naming keys.auth", code, stderr)
	}
}

func TestAppsCheckWebPush(t *testing.T) {
	unsetHushEnv(t)
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "apps.yaml")
	writeText(t, file, "apps:\n  - name: web\n    webpush:\n      private_key: "+key.PrivateKey()+"\n      subject: mailto:ops@example.com\n      max_rate: 100/s\n")
	stdout, stderr, code := runCmd(t, "apps", "check", file)
	if code != 0 {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", code, stderr)
	}
	want := "  webpush    vapid key " + key.PublicKey() + ", mailto:ops@example.com, max 100/s\n"
	if !strings.Contains(stdout, want) {
		t.Errorf("stdout:\n%s\nlacks:\n%s", stdout, want)
	}
	if strings.Contains(stdout, key.PrivateKey()) {
		t.Errorf("apps check shows the private key:\n%s", stdout)
	}
}

func TestWebhookSecret(t *testing.T) {
	stdout, stderr, code := runCmd(t, "webhook", "secret")
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	line := strings.TrimSuffix(stdout, "\n")
	value, ok := strings.CutPrefix(line, "HUSH_WEBHOOK_SECRET=")
	if !ok || strings.Contains(line, "\n") {
		t.Fatalf("stdout:\n%s\nwant exactly the HUSH_WEBHOOK_SECRET= line", stdout)
	}
	if _, err := webhook.ParseSecret(value); err != nil {
		t.Errorf("the secret %q does not parse: %v", value, err)
	}
	again, _, _ := runCmd(t, "webhook", "secret")
	if again == stdout {
		t.Errorf("two runs printed the same secret %q", stdout)
	}
	if _, stderr, code := runCmd(t, "webhook", "sekret"); code != 2 || !strings.Contains(stderr, `unknown subcommand "sekret"`) {
		t.Errorf("a mistyped subcommand: exit %d, stderr:\n%s", code, stderr)
	}
}
