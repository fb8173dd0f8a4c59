package worker

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/webhook"
)

// webhookInterop is where npm's standardwebhooks 1.1.1 is installed (npm
// ci; .ci/run does it).
const webhookInterop = "../webhook/testdata/interop"

// posted is one webhook request as the receiver got it.
type posted struct {
	header http.Header
	body   []byte
}

// TestWebhookSignaturesVerifyElsewhere: the worker's webhook requests,
// signed during a rotation with the old and the new secret, are accepted
// by receivers that know only the new one or only the old one: npm's
// standardwebhooks and a Go verifier written here from the specification,
// apart from package webhook. Both refuse them under a third secret and
// with a changed body, so neither check passes by accepting everything.
func TestWebhookSignaturesVerifyElsewhere(t *testing.T) {
	bin, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(webhookInterop, "node_modules", "standardwebhooks"))
	}
	if err != nil {
		if testkit.InCI() {
			t.Fatalf("CI=true but node or standardwebhooks is missing (npm ci in webhook/testdata/interop): %v", err)
		}
		t.Skipf("skipping: %v (npm ci in webhook/testdata/interop)", err)
	}
	const (
		oldSecret   = testWebhookSecret
		newSecret   = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
		otherSecret = "whsec_dGhpcyBpcyBub3QgdGhlIHNlY3JldCEhIQ=="
	)
	var mu sync.Mutex
	var got []posted
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, posted{r.Header.Clone(), b})
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	e := newEnv(t, envOptions{webhookURL: hook.URL, noRun: true})
	secrets, err := webhook.ParseSecrets(oldSecret + "," + newSecret)
	if err != nil {
		t.Fatal(err)
	}
	e.opts.WebhookSecrets = secrets
	if e.w, err = New(e.rdb, e.opts); err != nil {
		t.Fatal(err)
	}
	e.client = e.w.Client()
	e.start()
	t.Cleanup(e.shutdown)
	dead, live := apnsToken("interop-gone"), apnsToken("interop-live")
	e.apns.Script(dead, fake.Unregistered())
	e.waitDone(e.submit(alertJob("interop", "i", apnsRecipient("u-i", dead), apnsRecipient("u-j", live))), 10*time.Second)
	waitFor(t, 10*time.Second, "two webhook POSTs (token_invalid, delivered)", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	})
	mu.Lock()
	reqs := append([]posted(nil), got...)
	mu.Unlock()

	type check struct {
		name, secret string
		tamper, want bool
	}
	checks := []check{
		{"the new secret alone", newSecret, false, true},
		{"the old secret alone", oldSecret, false, true},
		{"another secret", otherSecret, false, false},
		{"a changed body", newSecret, true, false},
	}
	type nodeIn struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	var in []nodeIn
	for _, c := range checks {
		for _, p := range reqs {
			body := p.body
			if c.tamper {
				body = bytes.Replace(body, []byte(`"u-`), []byte(`"x-`), 1)
			}
			h := map[string]string{}
			for _, k := range []string{webhook.HeaderID, webhook.HeaderTimestamp, webhook.HeaderSignature} {
				h[strings.ToLower(k)] = p.header.Get(k)
			}
			in = append(in, nodeIn{c.secret, h, base64.StdEncoding.EncodeToString(body)})
			if ok := verifyApart(t, c.secret, p.header, body); ok != c.want {
				t.Errorf("Go verifier, %s: accepted %t, want %t (%s)", c.name, ok, c.want, p.body)
			}
		}
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "verify.js")
	cmd.Dir = webhookInterop
	cmd.Stdin = bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node verify.js: %v\n%s", err, stderr.Bytes())
	}
	var out []struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out) != len(in) {
		t.Fatalf("node verify.js answered %q (%v), want %d results", stdout.Bytes(), err, len(in))
	}
	for k, r := range out {
		c := checks[k/len(reqs)]
		if r.OK != c.want {
			t.Errorf("standardwebhooks, %s: accepted %t (%s), want %t, for %s", c.name, r.OK, r.Error, c.want, reqs[k%len(reqs)].body)
		}
	}
	t.Logf("%d webhook requests, each checked %d ways by standardwebhooks 1.1.1 and by the Go verifier", len(reqs), len(checks))
}

// verifyApart is a Standard Webhooks verifier written from the
// specification, sharing no code with package webhook: the secret is the
// base64 after "whsec_", the signed content is "id.timestamp.body", and the
// header lists "v1,<base64 HMAC-SHA256>" values separated by spaces.
func verifyApart(t *testing.T, secret string, h http.Header, body []byte) bool {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatalf("secret %q: %v", secret, err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Split(h.Get("webhook-signature"), " ") {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}
