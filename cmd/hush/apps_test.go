package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/setup"
)

// appsDir writes an APNs key (keys/AuthKey.p8) and a service account
// (keys/sa.json) into a new directory and returns it with the key's ids.
func appsDir(t *testing.T) (dir, keyID, teamID string) {
	t.Helper()
	dir = t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.Mkdir(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	file, keyID, teamID, err := fake.WriteAPNsKey(keys)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file, filepath.Join(keys, "AuthKey.p8")); err != nil {
		t.Fatal(err)
	}
	sa, err := fake.WriteServiceAccount(keys, "http://127.0.0.1:1/token", testkit.FCMProject)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(sa, filepath.Join(keys, "sa.json")); err != nil {
		t.Fatal(err)
	}
	return dir, keyID, teamID
}

// unsetHushEnv unsets the HUSH_* keys for the test: apps check reads the
// throttle fields an app leaves out from them.
func unsetHushEnv(t *testing.T) {
	t.Helper()
	for _, k := range setup.Keys() {
		if _, set := os.LookupEnv(k.Name); set {
			t.Setenv(k.Name, "")
			os.Unsetenv(k.Name)
		}
	}
}

func TestAppsCheck(t *testing.T) {
	unsetHushEnv(t)
	dir, keyID, teamID := appsDir(t)
	good := filepath.Join(dir, "apps.yaml")
	writeText(t, good, `apps:
  - name: shop
    apns:
      key_file: keys/AuthKey.p8
      key_id: `+keyID+`
      team_id: `+teamID+`
      topic: com.example.shop
      production: true
      max_rate: 30000/1m
    fcm: {credentials_file: keys/sa.json, max_rate: 500/s}
    throttle_group: shoppers
  - name: lite
    fcm: {credentials_file: keys/sa.json, project_id: lite}
    throttle_group: shoppers
`)
	stdout, stderr, code := runCmd(t, "apps", "check", good)
	if code != 0 {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", code, stderr)
	}
	want := good + `: 2 apps, no problem found (credentials load; nothing was sent)

shop
  apns       com.example.shop, production, token key ` + keyID + `, team ` + teamID + `, max 30000/1m (500/s)
  fcm        project ` + testkit.FCMProject + `, max 500/s
  throttle   10/1m,100/24h min-gap 3s; max pending 100
  limiter    hush:throttle:{shoppers:<user>}, throttle_group shoppers: one budget per user for shop, lite

lite
  fcm        project lite
  throttle   10/1m,100/24h min-gap 3s; max pending 100
  limiter    hush:throttle:{shoppers:<user>}, throttle_group shoppers: one budget per user for shop, lite
`
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}

	t.Setenv("HUSH_THROTTLE_LIMITS", "3/1h")
	if stdout, _, _ := runCmd(t, "apps", "check", good); !strings.Contains(stdout, "throttle   3/1h min-gap 3s") {
		t.Errorf("HUSH_THROTTLE_LIMITS does not fill the rules an app leaves out:\n%s", stdout)
	}
}

func TestAppsCheckProblems(t *testing.T) {
	unsetHushEnv(t)
	dir, keyID, teamID := appsDir(t)
	bad := filepath.Join(dir, "apps.json")
	writeText(t, bad, `{"apps": [
  {"name": "shop", "apns": {"key_file": "keys/gone.p8", "key_id": "`+keyID+`", "team_id": "`+teamID+`", "topic": "com.example.shop"}},
  {"name": "courier", "apns": {"topic": "com.example.courier"}, "fcm": {"credentials_file": "keys/sa.json", "max_rate": "fast"}}
]}
`)
	stdout, stderr, code := runCmd(t, "apps", "check", bad)
	if code != 1 || stdout != "" {
		t.Fatalf("exit status %d, stdout %q; want 1 and nothing", code, stdout)
	}
	for _, want := range []string{
		"hush: apps check: " + bad + ": 3 problems:",
		"line 2: apps[shop].apns.key_file: open " + filepath.Join(dir, "keys", "gone.p8") + ": no such file or directory",
		"line 3: apps[courier].apns.topic: a topic without credentials",
		`line 3: apps[courier].fcm.max_rate: "fast": no /`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	_, stderr, code = runCmd(t, "apps", "check", filepath.Join(dir, "none.yaml"))
	if code != 1 || !strings.Contains(stderr, "no such file or directory") {
		t.Errorf("missing file: exit status %d, stderr %q; want 1 saying so", code, stderr)
	}
}

func TestAppsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"apps"},
		{"apps", "lint"},
		{"apps", "check"},
		{"apps", "check", "a.yaml", "b.yaml"},
		{"apps", "check", "--strict", "a.yaml"},
	} {
		if _, stderr, code := runCmd(t, args...); code != 2 {
			t.Errorf("hush %s: exit status %d, want 2; stderr:\n%s", strings.Join(args, " "), code, stderr)
		}
	}
	stdout, _, code := runCmd(t, "apps", "check", "--help")
	if code != 0 || !strings.Contains(stdout, "throttle_group") || !strings.Contains(stdout, "credentials_file: keys/courier-firebase.json") {
		t.Errorf("apps check --help: exit status %d; want 0 with the schema and the example:\n%s", code, stdout)
	}
}

// TestServeHelpDocumentsTheAppsFile: hush serve --help shows the apps
// file's schema and example beside the keys.
func TestServeHelpDocumentsTheAppsFile(t *testing.T) {
	stdout, _, code := runCmd(t, "serve", "--help")
	for _, want := range []string{"HUSH_APPS_FILE  (string)", "Apps (HUSH_APPS_FILE):", "cert_password", "max_rate", "throttle_group: shoppers", "SIGHUP"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("serve --help (exit status %d) lacks %q", code, want)
		}
	}
}

func writeText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
