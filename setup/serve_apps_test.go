package setup

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
)

// TestServeApps: Serve runs the apps of HUSH_APPS_FILE beside the HUSH_*
// keys' app default: a job naming its app reaches that app's provider
// with its topic or project, a job naming none goes to default; a bad
// credential file on SIGHUP is refused, counted in /metrics, and the app
// goes on delivering.
func TestServeApps(t *testing.T) {
	srv := redistest.Start(t)
	fa, env := apnsEnv(t)
	ff, fcmKeys := fcmEnv(t)
	dir := t.TempDir()
	keyID, teamID, _ := writeAPNsKey(t, filepath.Join(dir, "keys", "courier.p8"))
	appsFile := filepath.Join(dir, "apps.yaml")
	writeFile(t, appsFile, `apps:
  - name: courier
    apns:
      key_file: keys/courier.p8
      key_id: `+keyID+`
      team_id: `+teamID+`
      topic: com.example.courier
      endpoint: `+fa.URL+`
      ca_file: `+env["HUSH_APNS_CA_FILE"]+`
      max_rate: 100/s
    throttle: {limits: 5/1m, min_gap: 1s}
  - name: shop
    fcm:
      credentials_file: `+fcmKeys["HUSH_FCM_CREDENTIALS_FILE"]+`
      project_id: shop-project
      endpoint: `+fcmKeys["HUSH_FCM_ENDPOINT"]+`
`)
	env["HUSH_REDIS_URL"] = srv.URL()
	env["HUSH_APPS_FILE"] = appsFile
	hup := make(chan os.Signal, 1)
	base, logs := serveWith(t, maps.Clone(env), func(ctx context.Context, cfg Config, log *slog.Logger) error {
		return serve(ctx, cfg, log, hup, time.Hour)
	})

	job := func(app, platform, token string) string {
		appField := ""
		if app != "" {
			appField = `"app":"` + app + `",`
		}
		return `{` + appField + `"recipients":[{"user_id":"u-1","devices":[{"platform":"` + platform + `","token":"` + token + `"}]}],"alert":{"title":"hi"}}`
	}
	courierTok, defaultTok := testkit.APNsToken("courier"), testkit.APNsToken("default")
	for _, tc := range []struct{ app, token, topic string }{
		{"courier", courierTok, "com.example.courier"},
		{"", defaultTok, testkit.APNsTopic},
	} {
		st := postAndWait(t, base, job(tc.app, "apns", tc.token))
		if c, _ := st["counts"].(map[string]any); c["delivered"] != 1.0 {
			t.Errorf("app %q: job %v, want delivered", tc.app, st)
		}
		reqs := testkit.RequestsFor(fa.Requests(), tc.token)
		if len(reqs) != 1 || reqs[0].Header.Get("apns-topic") != tc.topic {
			t.Errorf("app %q: %d APNs requests, want 1 with topic %s", tc.app, len(reqs), tc.topic)
		}
	}
	shopTok := testkit.FCMToken("shop")
	st := postAndWait(t, base, job("shop", "fcm", shopTok))
	if c, _ := st["counts"].(map[string]any); c["delivered"] != 1.0 {
		t.Errorf("shop: job %v, want delivered", st)
	}
	if reqs := testkit.RequestsFor(ff.Requests(), shopTok); len(reqs) != 1 || !strings.Contains(reqs[0].Path, "/projects/shop-project/") {
		t.Errorf("shop: FCM requests %v, want 1 to project shop-project", reqs)
	}
	for _, want := range []string{`msg="app ready" app=courier`, "limiter_key=hush:throttle:{courier:<user>}", "max_rate_apns=100/s", `msg="app ready" app=default`, "limiter_key=hush:throttle:{<user>}"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}

	writeFile(t, filepath.Join(dir, "keys", "courier.p8"), "not a key")
	hup <- syscall.SIGHUP
	testkit.WaitFor(t, 15*time.Second, `hush_apps_reloads_total{result="refused"} 1`, func() bool {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `hush_apps_reloads_total{result="refused"} 1`)
	})
	again := testkit.APNsToken("courier-again")
	st = postAndWait(t, base, job("courier", "apns", again))
	if c, _ := st["counts"].(map[string]any); c["delivered"] != 1.0 {
		t.Errorf("courier after the refused reload: job %v, want delivered", st)
	}
}
