package setup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker"
)

const goodYAML = `# three apps; shop and shop-lite share one budget per user
apps:
  - name: shop
    apns:
      key_file: keys/shop.p8
      key_id: {{KEY_ID}}
      team_id: {{TEAM_ID}}
      topic: com.example.shop
      production: true
      max_rate: 30000/1m
    fcm:
      credentials_file: keys/sa.json
      max_rate: 500/s
    throttle_group: shoppers
  - name: shop-lite
    fcm:
      credentials_file: keys/sa.json
      project_id: lite-project
    throttle_group: shoppers
  - name: courier
    apns:
      cert_file: keys/courier.p12
      cert_password: s3cret
      topic: com.example.courier
    throttle:
      limits: 30/1m
      min_gap: 1s
      quiet_hours: 22:00-07:00
      categories:
        dispatch: none global=off
      max_pending: 5
`

const goodJSON = `{
	"apps": [
		{
			"name": "shop",
			"apns": {"key_file": "keys/shop.p8", "key_id": "{{KEY_ID}}", "team_id": "{{TEAM_ID}}",
				"topic": "com.example.shop", "production": true, "max_rate": "30000/1m"},
			"fcm": {"credentials_file": "keys/sa.json", "max_rate": "500/s"},
			"throttle_group": "shoppers"
		},
		{
			"name": "shop-lite",
			"fcm": {"credentials_file": "keys/sa.json", "project_id": "lite-project"},
			"throttle_group": "shoppers"
		},
		{
			"name": "courier",
			"apns": {"cert_file": "keys/courier.p12", "cert_password": "s3cret", "topic": "com.example.courier"},
			"throttle": {"limits": "30/1m", "min_gap": "1s", "quiet_hours": "22:00-07:00",
				"categories": {"dispatch": "none global=off"}, "max_pending": 5}
		}
	]
}
`

// TestCheckAppsFileGood: one schema in YAML and JSON; the apps come out
// with their platforms, rates, rules and limiter keys, paths resolved
// from the file's directory, and the throttle fields left out taken from
// the HUSH_THROTTLE_* keys.
func TestCheckAppsFileGood(t *testing.T) {
	c := writeCreds(t, "http://127.0.0.1:1/token")
	want := func(c creds) []AppInfo {
		return []AppInfo{
			{
				Name: "shop",
				APNs: &APNsInfo{Topic: "com.example.shop", Production: true, Auth: "token key " + c.keyID + ", team " + c.teamID,
					MaxRate: "30000/1m", PerSecond: 500},
				FCM:   &FCMInfo{Project: testkit.FCMProject, MaxRate: "500/s", PerSecond: 500},
				Rules: "10/1m,100/24h min-gap 3s; max pending 100", Group: "shoppers", LimiterKey: "hush:throttle:{shoppers:<user>}",
			},
			{
				Name:  "shop-lite",
				FCM:   &FCMInfo{Project: "lite-project"},
				Rules: "10/1m,100/24h min-gap 3s; max pending 100", Group: "shoppers", LimiterKey: "hush:throttle:{shoppers:<user>}",
			},
			{
				Name:  "courier",
				APNs:  &APNsInfo{Topic: "com.example.courier", Auth: "certificate " + filepath.Join(c.dir, "keys", "courier.p12")},
				Rules: "30/1m min-gap 1s; quiet 22:00-07:00; categories dispatch=none global=off; max pending 5", LimiterKey: "hush:throttle:{courier:<user>}",
			},
		}
	}
	for _, tc := range []struct{ name, text string }{{"apps.yaml", goodYAML}, {"apps.json", goodJSON}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckAppsFile(t.Context(), DefaultConfig(), c.file(t, tc.name, tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want(c), got); d != "" {
				t.Errorf("apps (-want +got):\n%s", d)
			}
		})
	}
}

// TestAppsFileExample: the example `hush serve --help` and
// docs/configuration.md show is a valid file, and the page shows it.
func TestAppsFileExample(t *testing.T) {
	c := writeCreds(t, "http://127.0.0.1:1/token")
	for _, f := range []string{"shop-firebase.json", "courier-firebase.json"} {
		data, err := os.ReadFile(filepath.Join(c.dir, "keys", "sa.json"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(c.dir, "keys", f), string(data))
	}
	key, err := os.ReadFile(filepath.Join(c.dir, "keys", "shop.p8"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(c.dir, "keys", "AuthKey_ABC123DEFG.p8"), string(key))
	apps, err := CheckAppsFile(t.Context(), DefaultConfig(), c.file(t, "apps.yaml", AppsFileExample))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range apps {
		names = append(names, a.Name)
	}
	if want := []string{"shop", "shop-lite", "courier"}; !slices.Equal(names, want) {
		t.Errorf("apps %v, want %v", names, want)
	}
	page, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "```yaml\n"+AppsFileExample+"```\n") {
		t.Errorf("docs/configuration.md does not show AppsFileExample in a yaml block")
	}
	flat := strings.Join(strings.Fields(string(page)), " ")
	for _, want := range []string{
		fmt.Sprintf("every %d seconds, and at once on SIGHUP", int(appsPollInterval.Seconds())),
		fmt.Sprintf("closed %d seconds later", int(worker.MaxSendDuration.Seconds())),
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("docs/configuration.md does not say %q", want)
		}
	}
}

// problem is a problem a test wants: the path it names and a part of its
// reason.
type problem struct{ path, reason string }

// TestAppsFileProblems: every kind of bad input is a problem naming the
// app, the field and the reason, with its line; a file with several gets
// them all.
func TestAppsFileProblems(t *testing.T) {
	c := writeCreds(t, "http://127.0.0.1:1/token")
	writeFile(t, filepath.Join(c.dir, "keys", "bad.p8"), "not a key")
	writeFile(t, filepath.Join(c.dir, "keys", "bad.json"), `{"type": "service_account"`)
	writeFile(t, filepath.Join(c.dir, "keys", "key.pem"), "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n")
	writeFile(t, filepath.Join(c.dir, "keys", "user.json"), `{"type": "authorized_user", "client_id": "x", "refresh_token": "y"}`)
	if err := os.MkdirAll(filepath.Join(c.dir, "keys", "dir.p8"), 0o700); err != nil {
		t.Fatal(err)
	}
	const shopAPNs = `
    apns:
      key_file: keys/shop.p8
      key_id: {{KEY_ID}}
      team_id: {{TEAM_ID}}
      topic: com.example.shop`
	for _, tc := range []struct {
		name, text string
		want       []problem
	}{
		{"unknown key", `apps:
  - name: shop
    apns:
      kye_file: keys/shop.p8
      key_id: {{KEY_ID}}
      team_id: {{TEAM_ID}}
      topic: com.example.shop
`, []problem{
			{"apps[shop].apns.kye_file", `unknown field (did you mean "key_file"?) (the fields are key_file, key_id, team_id, cert_file, cert_password, topic, production, endpoint, ca_file, max_rate)`},
			{"apps[shop].apns.key_file", "required with key_id and team_id"},
		}},
		{"unknown top-level key", "version: 2\napps:\n  - name: shop" + shopAPNs + "\n", []problem{{"version", "unknown field (the fields are apps)"}}},
		{"unknown app key", "apps:\n  - name: shop\n    topic: x" + shopAPNs + "\n", []problem{{"apps[shop].topic", "unknown field"}}},
		{"missing key file", strings.Replace("apps:\n  - name: shop"+shopAPNs+"\n", "keys/shop.p8", "keys/gone.p8", 1),
			[]problem{{"apps[shop].apns.key_file", "open " + filepath.Join(c.dir, "keys", "gone.p8") + ": no such file or directory"}}},
		{"corrupt key", strings.Replace("apps:\n  - name: shop"+shopAPNs+"\n", "keys/shop.p8", "keys/bad.p8", 1),
			[]problem{{"apps[shop].apns.key_file", "AuthKey must be a valid .p8 PEM file"}}},
		{"unreadable key", strings.Replace("apps:\n  - name: shop"+shopAPNs+"\n", "keys/shop.p8", "keys/dir.p8", 1),
			[]problem{{"apps[shop].apns.key_file", "is a directory"}}},
		{"wrong certificate password", `apps:
  - name: courier
    apns: {cert_file: keys/courier.p12, cert_password: wrong, topic: com.example.courier}
`, []problem{{"apps[courier].apns.cert_password", "wrong password for"}}},
		{"corrupt service account", `apps:
  - name: shop
    fcm: {credentials_file: keys/bad.json}
`, []problem{{"apps[shop].fcm.credentials_file", "unexpected end of JSON input"}}},
		{"service account not JSON", `apps:
  - name: shop
    fcm: {credentials_file: keys/key.pem}
`, []problem{{"apps[shop].fcm.credentials_file", `key.pem" is not a JSON object (invalid character '-' in numeric literal): want a Firebase service-account key`}}},
		{"not a service account", `apps:
  - name: shop
    fcm: {credentials_file: keys/user.json}
`, []problem{{"apps[shop].fcm.credentials_file", `user.json" has "type": "authorized_user": want a Firebase service-account key`}}},
		{"topic without credentials", `apps:
  - name: shop
    apns: {topic: com.example.shop}
`, []problem{{"apps[shop].apns.topic", "a topic without credentials: set key_file, key_id and team_id (token auth) or cert_file (certificate auth)"}}},
		{"key and certificate", "apps:\n  - name: shop" + shopAPNs + "\n      cert_file: keys/courier.p12\n",
			[]problem{{"apps[shop].apns.cert_file", "set either key_file (with key_id and team_id) or cert_file, not both"}}},
		{"no topic", `apps:
  - name: courier
    apns: {cert_file: keys/courier.p12, cert_password: s3cret}
`, []problem{{"apps[courier].apns.topic", "required (the app's bundle id)"}}},
		{"no credentials file", "apps:\n  - name: shop\n    fcm: {project_id: p}\n", []problem{{"apps[shop].fcm.credentials_file", "required"}}},
		{"endpoint not https", "apps:\n  - name: shop" + shopAPNs + "\n      endpoint: http://proxy\n",
			[]problem{{"apps[shop].apns.endpoint", `want an https:// URL, got "http://proxy"`}}},
		{"ca file without endpoint", "apps:\n  - name: shop" + shopAPNs + "\n      ca_file: keys/sa.json\n",
			[]problem{{"apps[shop].apns.ca_file", "only used with endpoint"}}},
		{"bad max_rate", "apps:\n  - name: shop" + shopAPNs + "\n      max_rate: fast\n",
			[]problem{{"apps[shop].apns.max_rate", `"fast": no / (want N/window such as 500/s or 30000/1m)`}}},
		{"max_rate window", "apps:\n  - name: shop\n    fcm: {credentials_file: keys/sa.json, max_rate: 10/2d}\n",
			[]problem{{"apps[shop].fcm.max_rate", "the window must be at most a day"}}},
		{"signed max_rate", "apps:\n  - name: shop\n    fcm: {credentials_file: keys/sa.json, max_rate: +5/s}\n",
			[]problem{{"apps[shop].fcm.max_rate", "the count must be a positive integer, written without a sign"}}},
		{"bad rules", "apps:\n  - name: shop" + shopAPNs + `
    throttle:
      limits: 10/1x
      min_gap: soon
      quiet_hours: 25:00-08:00
      max_pending: -1
      categories:
        marketing: 2/1d quiet=late
        Bad: none
`, []problem{
			{"apps[shop].throttle.limits", `limit "10/1x"`},
			{"apps[shop].throttle.min_gap", `min gap "soon"`},
			{"apps[shop].throttle.quiet_hours", `quiet hours "25:00-08:00"`},
			{"apps[shop].throttle.max_pending", "want 0 to 10000 (as HUSH_THROTTLE_MAX_PENDING), got -1"},
			{"apps[shop].throttle.categories.marketing", "quiet=late"},
			{"apps[shop].throttle.categories.Bad", "the name must be 1 to 32 of a-z, 0-9, _ and -"},
		}},
		{"huge max_pending", "apps:\n  - name: shop" + shopAPNs + "\n    throttle: {max_pending: 9223372036854775807}\n",
			[]problem{{"apps[shop].throttle.max_pending", "want 0 to 10000 (as HUSH_THROTTLE_MAX_PENDING), got 9223372036854775807"}}},
		{"huge min_gap", "apps:\n  - name: shop" + shopAPNs + "\n    throttle: {min_gap: 100000h}\n",
			[]problem{{"apps[shop].throttle.min_gap", "want 0s to 720h (as HUSH_THROTTLE_MIN_GAP), got 100000h"}}},
		{"no rules at all", "apps:\n  - name: shop" + shopAPNs + "\n    throttle: {limits: \"\", min_gap: \"0\"}\n",
			[]problem{{"apps[shop].throttle", "no limit and no min gap"}}},
		{"group with different rules", `apps:
  - name: shop
    fcm: {credentials_file: keys/sa.json}
    throttle_group: shoppers
  - name: lite
    fcm: {credentials_file: keys/sa.json}
    throttle: {limits: 5/1m}
    throttle_group: shoppers
`, []problem{{"apps[lite].throttle_group", `"shoppers" shares one budget per user, so its apps need the same throttle settings: apps[shop] has 10/1m,100/24h min-gap 3s; max pending 100, apps[lite] has 5/1m min-gap 3s; max pending 100`}}},
		{"group named like another app", `apps:
  - name: shop
    fcm: {credentials_file: keys/sa.json}
  - name: lite
    fcm: {credentials_file: keys/sa.json}
    throttle_group: shop
`, []problem{{"apps[lite].throttle_group", `"shop" is the name of apps[shop], which is not in the group`}}},
		{"duplicate names", `apps:
  - name: shop
    fcm: {credentials_file: keys/sa.json}
  - name: shop
    fcm: {credentials_file: keys/sa.json}
`, []problem{{"apps[1].name", `"shop" is already the name of apps[shop] (line 2): names must differ`}}},
		{"key given twice", "apps:\n  - name: shop" + shopAPNs + "\n      topic: com.example.other\n",
			[]problem{{"apps[shop].apns.topic", "given twice (first on line 7)"}}},
		{"not a bool", "apps:\n  - name: shop" + shopAPNs + "\n      production: yes\n",
			[]problem{{"apps[shop].apns.production", `want true or false, got "yes"`}}},
		{"not a list", "apps:\n  name: shop\n", []problem{{"apps", "want a list, got a mapping"}}},
		{"no name", "apps:\n  - fcm: {credentials_file: keys/sa.json}\n", []problem{{"apps[0].name", "missing: every app needs a name"}}},
		{"bad name", "apps:\n  - name: Shop!\n    fcm: {credentials_file: keys/sa.json}\n", []problem{{"apps[0].name", `"Shop!": want 1 to 32 of a-z, 0-9, _ and -`}}},
		{"no provider", "apps:\n  - name: shop\n", []problem{{"apps[shop]", "neither apns nor fcm"}}},
		{"no apps", "apps: []\n", []problem{{"apps", "no app listed"}}},
		{"empty file", "", []problem{{"apps", "the file is empty"}}},
		{"no apps key", "{}\n", []problem{{"apps", "missing: list the apps under apps:"}}},
		{"not YAML", "apps: [\n", []problem{{"apps", "not YAML or JSON"}}},
		{"JSON unknown key", `{"apps": [{"name": "shop", "fcm": {"credentials_file": "keys/sa.json", "project": "p"}}]}`,
			[]problem{{"apps[shop].fcm.project", `unknown field (did you mean "project_id"?)`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckAppsFile(t.Context(), DefaultConfig(), c.file(t, "apps.yaml", tc.text))
			afe, ok := errors.AsType[*AppsFileError](err)
			if !ok {
				t.Fatalf("CheckAppsFile: %v, want an *AppsFileError", err)
			}
			var got []problem
			for _, p := range afe.Problems {
				got = append(got, problem{p.Path, p.Err.Error()})
				if p.Line == 0 && p.Path != "apps" {
					t.Errorf("%s: no line", p)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %d: %v", afe, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if got[i].path != w.path || !strings.Contains(got[i].reason, w.reason) {
					t.Errorf("problem %d: %s: %s\nwant %s: ...%s...", i, got[i].path, got[i].reason, w.path, w.reason)
				}
			}
		})
	}
}

// TestAppsFileEveryProblemAtOnce: the problems of several apps come
// together, in the file's order, each with its line, in one message.
func TestAppsFileEveryProblemAtOnce(t *testing.T) {
	c := writeCreds(t, "http://127.0.0.1:1/token")
	path := c.file(t, "apps.yaml", `apps:
  - name: shop
    apns:
      key_file: keys/gone.p8
      key_id: {{KEY_ID}}
      team_id: {{TEAM_ID}}
      topic: com.example.shop
  - name: courier
    apns: {cert_file: keys/courier.p12, cert_password: s3cret, topic: com.example.courier, max_rate: lots}
    fcm: {credentials_file: keys/sa.json, colour: blue}
`)
	_, err := CheckAppsFile(t.Context(), DefaultConfig(), path)
	want := path + `: 3 problems:
  line 4: apps[shop].apns.key_file: open ` + filepath.Join(c.dir, "keys", "gone.p8") + `: no such file or directory
  line 9: apps[courier].apns.max_rate: "lots": no / (want N/window such as 500/s or 30000/1m)
  line 10: apps[courier].fcm.colour: unknown field (the fields are credentials_file, project_id, endpoint, max_rate)`
	if err == nil || err.Error() != want {
		t.Errorf("CheckAppsFile:\n%v\nwant:\n%s", err, want)
	}
}

// TestBadAppsFileSaysNothingOfDryRun: an apps file with a problem stops
// the start with its problems, and no DRY-RUN warning comes first (its
// apps have no credentials only because they were not built).
func TestBadAppsFileSaysNothingOfDryRun(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AppsFile = filepath.Join(t.TempDir(), "apps.yaml")
	if err := os.WriteFile(cfg.AppsFile, []byte("apps:\n  - name: courier\n    colour: blue\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err := buildApps(t.Context(), cfg, nil, false, true, slog.New(slog.NewTextHandler(&buf, nil)))
	if _, ok := errors.AsType[*AppsFileError](err); !ok {
		t.Fatalf("buildApps = %v, want the apps file's problems", err)
	}
	if strings.Contains(buf.String(), "DRY-RUN") {
		t.Errorf("a bad apps file logs a dry-run warning:\n%s", buf.String())
	}
}

// TestAppsFileMissing: a missing apps file stops the start naming
// HUSH_APPS_FILE; hush apps check gets the file's error itself.
func TestAppsFileMissing(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AppsFile = filepath.Join(t.TempDir(), "apps.yaml")
	_, err := buildApps(t.Context(), cfg, nil, true, false, slog.New(slog.DiscardHandler))
	if ke, ok := errors.AsType[*KeyError](err); !ok || ke.Key != "HUSH_APPS_FILE" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("buildApps = %v, want a HUSH_APPS_FILE error saying the file does not exist", err)
	}
	_, err = CheckAppsFile(t.Context(), DefaultConfig(), cfg.AppsFile)
	if _, isKey := errors.AsType[*KeyError](err); isKey || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CheckAppsFile = %v, want the file's own error", err)
	}
}

// TestAppsWithTheEnvironment: the HUSH_* keys' app default serves beside
// the file's when they set credentials, or alone when there is no file;
// it keeps unscoped limiter keys; dry-run covers every app, each with a
// sender for exactly the platforms it has credentials for.
func TestAppsWithTheEnvironment(t *testing.T) {
	c := writeCreds(t, "http://127.0.0.1:1/token")
	const courier = "apps:\n  - name: courier\n    apns: {cert_file: keys/courier.p12, cert_password: s3cret, topic: com.example.courier}\n"
	file := c.file(t, "apps.yaml", courier)
	withDefault := c.file(t, "default.yaml", strings.Replace(courier, "courier\n", "default\n", 1))
	envKeys := Config{APNSKeyFile: filepath.Join(c.dir, "keys", "shop.p8"), APNSKeyID: c.keyID, APNSTeamID: c.teamID, APNSTopic: testkit.APNsTopic}
	type app struct {
		Name, Scope string
		Platforms   []payload.Platform
		DryRun      bool
	}
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		want []app
	}{
		{"env credentials and a file", func(cfg *Config) {
			cfg.APNSKeyFile, cfg.APNSKeyID, cfg.APNSTeamID, cfg.APNSTopic = envKeys.APNSKeyFile, envKeys.APNSKeyID, envKeys.APNSTeamID, envKeys.APNSTopic
			cfg.AppsFile = file
		}, []app{{"default", "", []payload.Platform{payload.APNs}, false}, {"courier", "courier", []payload.Platform{payload.APNs}, false}}},
		{"a file only", func(cfg *Config) { cfg.AppsFile = file },
			[]app{{"courier", "courier", []payload.Platform{payload.APNs}, false}}},
		{"the file's default keeps the unscoped keys", func(cfg *Config) { cfg.AppsFile = withDefault },
			[]app{{"default", "", []payload.Platform{payload.APNs}, false}}},
		{"nothing: default in dry-run", func(*Config) {},
			[]app{{"default", "", payload.Platforms(), true}}},
		{"dry-run: every app, with its own platforms", func(cfg *Config) {
			cfg.APNSKeyFile, cfg.APNSKeyID, cfg.APNSTeamID, cfg.APNSTopic = envKeys.APNSKeyFile, envKeys.APNSKeyID, envKeys.APNSTeamID, envKeys.APNSTopic
			cfg.AppsFile, cfg.DryRun = file, true
		}, []app{{"default", "", []payload.Platform{payload.APNs}, true}, {"courier", "courier", []payload.Platform{payload.APNs}, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.cfg(&cfg)
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			g, err := buildApps(t.Context(), cfg, nil, true, false, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer g.close()
			var got []app
			for i, a := range g.apps {
				var platforms []payload.Platform
				dry := false
				for _, p := range payload.Platforms() {
					if s, ok := a.Senders[p]; ok {
						platforms = append(platforms, p)
						dry = isDryRun(s)
					}
				}
				got = append(got, app{a.Name, g.specs[i].scope, platforms, dry})
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("apps (-want +got):\n%s", d)
			}
		})
	}

	t.Run("default taken by the environment", func(t *testing.T) {
		cfg := envKeys
		_, err := CheckAppsFile(t.Context(), cfg, withDefault)
		if err == nil || !strings.Contains(err.Error(), "apps[default].name: default is the app of the HUSH_APNS_* and HUSH_FCM_* keys") {
			t.Errorf("CheckAppsFile = %v, want apps[default].name taken", err)
		}
	})
}

// TestAppsShareALimiterPerGroup: the apps of a throttle group book on one
// limiter, under the group's scope.
func TestAppsShareALimiterPerGroup(t *testing.T) {
	c := writeCreds(t, "http://127.0.0.1:1/token")
	cfg := DefaultConfig()
	cfg.AppsFile = c.file(t, "apps.yaml", goodYAML)
	g, err := buildApps(context.Background(), cfg, nil, true, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	byName := map[string]worker.App{}
	for _, a := range g.apps {
		byName[a.Name] = a
	}
	if byName["shop"].Limiter != byName["shop-lite"].Limiter {
		t.Errorf("shop and shop-lite (throttle_group shoppers) have two limiters, want one")
	}
	if byName["shop"].Limiter == byName["courier"].Limiter {
		t.Errorf("courier shares shop's limiter")
	}
	if got := byName["shop"].MaxRate; got[payload.APNs] != 500 || got[payload.FCM] != 500 {
		t.Errorf("shop's max rates %v, want 500/s to each", got)
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  string
	}{
		{"500/s", 500, ""},
		{"30000/1m", 500, ""},
		{"1/10s", 0.1, ""},
		{"3600/h", 1, ""},
		{"86400/1d", 1, ""},
		{" 2 / 500ms ", 4, ""},
		{"500", 0, "no /"},
		{"0/s", 0, "positive integer"},
		{"1.5/s", 0, "positive integer"},
		{"5/x", 0, "not a duration"},
		{"5/0s", 0, "must be positive"},
		{"5/25h", 0, "at most a day"},
	} {
		got, err := parseRate(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseRate(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("parseRate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
