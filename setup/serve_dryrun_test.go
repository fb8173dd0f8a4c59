package setup

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
)

// TestServeDryRunRefusesLikeProduction: with HUSH_DRY_RUN, an app of the
// apps file with APNs credentials only accepts an APNs job and refuses an
// FCM one with the 400 production gives, naming the field.
func TestServeDryRunRefusesLikeProduction(t *testing.T) {
	srv := redistest.Start(t)
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
`)
	base, _ := serveFromEnv(t, map[string]string{"HUSH_REDIS_URL": srv.URL(), "HUSH_APPS_FILE": appsFile, "HUSH_DRY_RUN": "true"})
	job := func(platform, token string) string {
		return `{"app":"courier","recipients":[{"user_id":"u-1","devices":[{"platform":"` + platform + `","token":"` + token + `"}]}],"alert":{"title":"hi"}}`
	}
	post := func(body string) (int, string) {
		resp, err := http.Post(base+"/v1/notifications", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(job("apns", testkit.APNsToken("courier"))); code != http.StatusAccepted {
		t.Errorf("an APNs job of courier in dry-run: %d %s, want 202", code, body)
	}
	code, body := post(job("fcm", testkit.FCMToken("courier")))
	if code != http.StatusBadRequest || !strings.Contains(body, `app \"courier\" has no fcm credentials`) || !strings.Contains(body, "recipients[0].devices[0]") {
		t.Errorf("an FCM job of courier in dry-run: %d %s, want 400 naming recipients[0].devices[0] and the missing fcm credentials", code, body)
	}
}
