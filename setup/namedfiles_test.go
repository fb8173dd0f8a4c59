//go:build unix

package setup

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hushpush/hush/providers/webpush"
)

// badFiles are files no provider may read whole: a device that never
// ends, a named pipe no one writes, and a file larger than maxNamedFile
// (sparse, so it costs no disk).
func badFiles(t *testing.T) []struct{ name, path, want string } {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxNamedFile + 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return []struct{ name, path, want string }{
		{"device", "/dev/zero", "not a regular file"},
		{"pipe", fifo, "not a regular file"},
		{"huge", huge, "more than the"},
	}
}

// Every credential file a HUSH_* key names is read as the apps file's
// are: a device, a named pipe or a huge file is refused at start, naming
// the key, before the provider reads it (which would never end, or fill
// the memory).
func TestEnvCredentialFilesAreBounded(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.p8")
	keyID, teamID, _ := writeAPNsKey(t, keyFile)
	vapid, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	apnsKey := Config{APNSKeyFile: keyFile, APNSKeyID: keyID, APNSTeamID: teamID, APNSTopic: "com.example.app"}
	for _, k := range []struct {
		key string
		cfg func(path string) Config
	}{
		{"HUSH_APNS_KEY_FILE", func(p string) Config { c := apnsKey; c.APNSKeyFile = p; return c }},
		{"HUSH_APNS_CERT_FILE", func(p string) Config { return Config{APNSCertFile: p, APNSTopic: "com.example.app"} }},
		{"HUSH_APNS_CA_FILE", func(p string) Config {
			c := apnsKey
			c.APNSEndpoint, c.APNSCaFile = "https://127.0.0.1:1", p
			return c
		}},
		{"HUSH_FCM_CREDENTIALS_FILE", func(p string) Config { return Config{FCMCredentialsFile: p} }},
		{"HUSH_WEBPUSH_CA_FILE", func(p string) Config {
			return Config{WebpushPrivateKey: vapid.PrivateKey(), WebpushSubject: "mailto:ops@example.com", WebpushCaFile: p}
		}},
	} {
		for _, f := range badFiles(t) {
			t.Run(k.key+"/"+f.name, func(t *testing.T) {
				var buf bytes.Buffer
				_, _, err := envSenders(k.cfg(f.path), logLines(&buf))
				ke, ok := errors.AsType[*KeyError](err)
				if !ok || ke.Key != k.key || !strings.Contains(err.Error(), f.want) {
					t.Errorf("error %v, want a *KeyError about %s saying %q", err, k.key, f.want)
				}
			})
		}
	}
}

// An apps file's app whose credential file is a device, a named pipe or
// a huge file gets a problem at that field, as the HUSH_* keys do.
func TestAppsFileCredentialFilesAreBounded(t *testing.T) {
	c := writeCreds(t, "http://127.0.0.1:1/token")
	for _, f := range badFiles(t) {
		for _, b := range []struct{ field, block string }{
			{"apps[shop].apns.key_file", "apns: {key_file: " + f.path + ", key_id: {{KEY_ID}}, team_id: {{TEAM_ID}}, topic: com.example.shop}"},
			{"apps[shop].apns.cert_file", "apns: {cert_file: " + f.path + ", topic: com.example.shop}"},
			{"apps[shop].apns.ca_file", "apns: {key_file: keys/shop.p8, key_id: {{KEY_ID}}, team_id: {{TEAM_ID}}, topic: com.example.shop, endpoint: 'https://127.0.0.1:1', ca_file: " + f.path + "}"},
			{"apps[shop].fcm.credentials_file", "fcm: {credentials_file: " + f.path + "}"},
		} {
			t.Run(b.field+"/"+f.name, func(t *testing.T) {
				_, err := CheckAppsFile(t.Context(), DefaultConfig(), c.file(t, "apps.yaml", "apps:\n  - name: shop\n    "+b.block+"\n"))
				afe, ok := errors.AsType[*AppsFileError](err)
				if !ok || len(afe.Problems) != 1 || afe.Problems[0].Path != b.field || !strings.Contains(afe.Problems[0].Err.Error(), f.want) {
					t.Errorf("CheckAppsFile: %v, want one problem at %s saying %q", err, b.field, f.want)
				}
			})
		}
	}
}
