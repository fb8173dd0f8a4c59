// Package webpushexample checks the Web Push example web app in headless
// Chromium.
package webpushexample

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/webpush"
)

// stub replaces pushManager.subscribe, which needs the browser vendor's
// push service, with one that reports the options it was called with to
// /called and answers a subscription of RFC 8291's keys; it then presses
// the page's button, as a user would.
const stub = `<script>
PushManager.prototype.subscribe = async function (options) {
  const key = new Uint8Array(options.applicationServerKey);
  const b64 = btoa(String.fromCharCode(...key)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  await fetch("/called", {method: "POST", body: JSON.stringify({userVisibleOnly: options.userVisibleOnly, applicationServerKey: b64})});
  const json = {endpoint: "https://push.example.net/push/abc", expirationTime: null,
    keys: {p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth: "BTBZMqHH6r4Tts7J_aSIgg"}};
  return {toJSON: () => json};
};
document.addEventListener("DOMContentLoaded", () => document.getElementById("subscribe").click());
</script>
`

func chromium(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if testkit.InCI() {
			t.Fatalf("CI=true but no chromium on PATH (.ci/run installs Debian's chromium package): %v", err)
		}
		t.Skip("skipping: no chromium on PATH (apt-get install chromium to run it)")
	}
	return bin
}

func TestPageSubscribesWithTheVAPIDKey(t *testing.T) {
	bin := chromium(t)
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("index.html")
	if err != nil {
		t.Fatal(err)
	}
	page = bytes.Replace(page, []byte("REPLACE_WITH_HUSH_WEBPUSH_PUBLIC_KEY"), []byte(key.PublicKey()), 1)
	page = bytes.Replace(page, []byte(`<script src="subscribe.js">`), []byte(stub+`<script src="subscribe.js">`), 1)

	var mu sync.Mutex
	posted := map[string][]byte{}
	arrived := make(chan string, 4)
	files := http.FileServer(http.Dir("."))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/" || r.URL.Path == "/index.html":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write(page)
		case r.Method == http.MethodPost:
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			posted[r.URL.Path] = b
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
			arrived <- r.URL.Path
		default:
			files.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()

	// With a debugging port, headless Chromium keeps the page running
	// until it is stopped, so the service worker's registration finishes
	// in real time.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+t.TempDir(),
		"--remote-debugging-port=0", srv.URL+"/")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	for done := false; !done; {
		select {
		case p := <-arrived:
			done = p == "/subscriptions"
		case <-ctx.Done():
			t.Fatalf("the page posted no subscription within 2 minutes; chromium said:\n%s", stderr.Bytes())
		}
	}

	mu.Lock()
	defer mu.Unlock()
	var called struct {
		UserVisibleOnly      bool   `json:"userVisibleOnly"`
		ApplicationServerKey string `json:"applicationServerKey"`
	}
	if err := json.Unmarshal(posted["/called"], &called); err != nil {
		t.Fatalf("pushManager.subscribe was not called (%v); posts: %q", err, posted)
	}
	if called.ApplicationServerKey != key.PublicKey() || !called.UserVisibleOnly {
		t.Errorf("subscribe asked for key %q (userVisibleOnly %v), want %q and true", called.ApplicationServerKey, called.UserVisibleOnly, key.PublicKey())
	}
	// What the page posts to the backend is a token hush accepts.
	if _, err := payload.WebPushToken(posted["/subscriptions"]); err != nil {
		t.Errorf("the posted subscription %q is not a webpush token: %v", posted["/subscriptions"], err)
	}
}
