package setup

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
)

// TestAPITokensKey: HUSH_API_TOKENS gives each token its apps; a malformed
// item is refused naming its place, never its token.
func TestAPITokensKey(t *testing.T) {
	tests := []struct {
		name, value, all string
		want             map[string][]string
		wantErr          string
	}{
		{name: "empty", value: "", want: map[string][]string{}},
		{name: "two items", value: "courier:t0k=1 shop,shop-lite:a:b:c\n", want: map[string][]string{"t0k=1": {"courier"}, "a:b:c": {"shop", "shop-lite"}}},
		{name: "no colon", value: "courier:ok s3cret-only", wantErr: "item 2: want APP[,APP...]:TOKEN"},
		{name: "no token", value: "courier:", wantErr: "item 1: want APP[,APP...]:TOKEN"},
		{name: "bad app", value: "Courier:s3cret", wantErr: `item 1: app "Courier"`},
		{name: "given twice", value: "courier:s3cret shop:s3cret", wantErr: "item 2: its token is also an earlier item's"},
		{name: "the all-apps token", value: "courier:s3cret", all: "s3cret", wantErr: "item 1: its token is HUSH_API_TOKEN"},
		{name: "a control byte", value: "courier:s3\x01cret", wantErr: "item 1: byte 0x01 at byte 3 of 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Config{APITokens: tt.value, APIToken: tt.all}.apiTokens()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("tokens (-want +got):\n%s", diff)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != "HUSH_API_TOKENS" || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want HUSH_API_TOKENS: ...%s...", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "s3\x01cret") {
				t.Errorf("error %q shows the token", err)
			}
		})
	}
}

// TestAppsFileAPITokens: an app's api_tokens are checked like
// HUSH_API_TOKEN, and a problem never shows a token; HUSH_API_TOKENS
// naming an app the configuration lacks is refused.
func TestAppsFileAPITokens(t *testing.T) {
	_, fcmKeys := fcmEnv(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "apps.yaml")
	writeFile(t, file, `apps:
  - name: courier
    fcm: {credentials_file: `+fcmKeys["HUSH_FCM_CREDENTIALS_FILE"]+`}
    api_tokens: s3cret-single
  - name: shop
    fcm: {credentials_file: `+fcmKeys["HUSH_FCM_CREDENTIALS_FILE"]+`}
    api_tokens: [s3cret-a, s3cret-a, "", "s3cret b", s3cret-all]
`)
	cfg := DefaultConfig()
	cfg.AppsFile, cfg.APIToken = file, "s3cret-all"
	_, err := buildApps(t.Context(), cfg, nil, false, false, slog.New(slog.DiscardHandler))
	var fe *AppsFileError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v, want an apps file's problems", err)
	}
	var got []string
	for _, p := range fe.Problems {
		got = append(got, p.located())
	}
	want := []string{
		"line 4: apps[courier].api_tokens: want a list, got a single value (not shown: it may be a secret)",
		"line 7: apps[shop].api_tokens[1]: the same token as apps[shop].api_tokens[0]: give it once",
		"line 7: apps[shop].api_tokens[2]: empty: a token is 1 or more visible ASCII characters",
		"line 7: apps[shop].api_tokens[3]: a space at byte 7 of 8: a token is visible ASCII only (a value written with echo ends with a newline: use printf or echo -n)",
		"line 7: apps[shop].api_tokens[4]: the same as HUSH_API_TOKEN, which acts for every app",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows a token:\n%s", err)
	}

	writeFile(t, file, `apps:
  - name: courier
    fcm: {credentials_file: `+fcmKeys["HUSH_FCM_CREDENTIALS_FILE"]+`}
`)
	cfg = DefaultConfig()
	cfg.AppsFile, cfg.APITokens = file, "courier,shop:s3cret"
	_, err = buildApps(t.Context(), cfg, nil, false, false, slog.New(slog.DiscardHandler))
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "HUSH_API_TOKENS" || !strings.Contains(err.Error(), `the app "shop", which is not configured (the apps: courier)`) {
		t.Errorf("HUSH_API_TOKENS naming an unknown app: %v, want it refused naming the app", err)
	}
}

// TestServeAPITokens: hush serve takes HUSH_API_TOKEN for every app, and
// HUSH_API_TOKENS's and the apps file's tokens for their apps only; a
// changed file's tokens serve after the reload without a restart, the
// ones it dropped are refused, and no log line shows a token.
func TestServeAPITokens(t *testing.T) {
	srv := redistest.Start(t)
	_, fcmKeys := fcmEnv(t)
	dir := t.TempDir()
	appsFile := filepath.Join(dir, "apps.yaml")
	apps := func(shopTokens string) string {
		return `apps:
  - name: courier
    fcm: {credentials_file: ` + fcmKeys["HUSH_FCM_CREDENTIALS_FILE"] + `, endpoint: ` + fcmKeys["HUSH_FCM_ENDPOINT"] + `}
    api_tokens: [file-courier]
  - name: shop
    fcm: {credentials_file: ` + fcmKeys["HUSH_FCM_CREDENTIALS_FILE"] + `, endpoint: ` + fcmKeys["HUSH_FCM_ENDPOINT"] + `}
    api_tokens: [` + shopTokens + `]
`
	}
	writeFile(t, appsFile, apps("file-shop"))
	env := map[string]string{"HUSH_REDIS_URL": srv.URL(), "HUSH_APPS_FILE": appsFile,
		"HUSH_API_TOKEN": "env-all", "HUSH_API_TOKENS": "courier:env-courier"}
	hup := make(chan os.Signal, 1)
	base, logs := serveWith(t, env, func(ctx context.Context, cfg Config, log *slog.Logger) error {
		return serve(ctx, cfg, log, hup, time.Hour)
	})
	get := func(token, app string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/users/u-1/throttle?app="+app, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		token, app string
		want       int
	}{
		{"env-all", "courier", 200}, {"env-all", "shop", 200},
		{"env-courier", "courier", 200}, {"env-courier", "shop", 403},
		{"file-courier", "courier", 200}, {"file-courier", "shop", 403},
		{"file-shop", "shop", 200}, {"file-shop", "courier", 403},
		{"file-shop-2", "shop", 401},
	} {
		if got := get(c.token, c.app); got != c.want {
			t.Errorf("token %s, app %s: %d, want %d", c.token, c.app, got, c.want)
		}
	}

	writeFile(t, appsFile, apps("file-shop-2, file-courier"))
	hup <- syscall.SIGHUP
	testkit.WaitFor(t, 15*time.Second, "the new shop token", func() bool { return get("file-shop-2", "shop") == 200 })
	for _, c := range []struct {
		token, app string
		want       int
	}{
		{"file-shop", "shop", 401}, {"file-courier", "shop", 200}, {"file-courier", "courier", 200}, {"env-courier", "shop", 403},
	} {
		if got := get(c.token, c.app); got != c.want {
			t.Errorf("after the reload, token %s, app %s: %d, want %d", c.token, c.app, got, c.want)
		}
	}
	if !strings.Contains(logs.String(), "shop: api tokens") {
		t.Errorf("the reload's log does not name shop's api tokens as changed:\n%s", logs)
	}
	for _, token := range []string{"env-all", "env-courier", "file-courier", "file-shop"} {
		if strings.Contains(logs.String(), token) {
			t.Errorf("the log shows the token %s:\n%s", token, logs)
		}
	}
}

// TestReloadKeepsTokensRequired: a reload may not turn the API's token
// requirement on or off.
func TestReloadKeepsTokensRequired(t *testing.T) {
	for _, c := range []struct{ had, has, refused bool }{{false, false, false}, {true, true, false}, {true, false, true}, {false, true, true}} {
		if err := tokensKept(c.had, c.has); (err != nil) != c.refused {
			t.Errorf("started with tokens %t, reloaded with %t: %v, want refused %t", c.had, c.has, err, c.refused)
		}
	}
}
