package setup

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/webpush"
	"github.com/hushpush/hush/worker"
)

// TestSenderTable: every payload platform has one complete entry in
// senderTable, and the table names no other platform.
func TestSenderTable(t *testing.T) {
	var got []payload.Platform
	for _, s := range senderTable {
		got = append(got, s.platform)
		if s.name == "" || s.configured == nil || len(s.envKeys) == 0 || s.build == nil || s.files == nil {
			t.Errorf("senderTable entry for %q is incomplete: %+v", s.platform, s)
		}
	}
	slices.Sort(got)
	if d := cmp.Diff(payload.Platforms(), got); d != "" {
		t.Errorf("senderTable's platforms differ from payload.Platforms() (-want +got):\n%s", d)
	}
}

// logLines returns a logger that writes "LEVEL message" lines to buf.
func logLines(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key != slog.LevelKey && a.Key != slog.MessageKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// envSenders builds the senders of the HUSH_* keys' app as Serve does.
func envSenders(cfg Config, log *slog.Logger) (map[payload.Platform]worker.Sender, func(), error) {
	a := envApp(cfg)
	dryRun := cfg.DryRun || !anyConfigured([]appSpec{a})
	if dryRun {
		warnDryRun(cfg, log)
	}
	return newSenders(context.Background(), a, dryRun, true, log, &problems{lines: map[string]int{}})
}

func TestNewSenders(t *testing.T) {
	_, apnsKeys := apnsEnv(t)
	apnsCfg := Config{
		APNSKeyFile: apnsKeys["HUSH_APNS_KEY_FILE"], APNSKeyID: apnsKeys["HUSH_APNS_KEY_ID"],
		APNSTeamID: apnsKeys["HUSH_APNS_TEAM_ID"], APNSTopic: apnsKeys["HUSH_APNS_TOPIC"],
		APNSEndpoint: apnsKeys["HUSH_APNS_ENDPOINT"], APNSCaFile: apnsKeys["HUSH_APNS_CA_FILE"],
	}
	_, fcmKeys := fcmEnv(t)
	fcmCfg := Config{FCMCredentialsFile: fcmKeys["HUSH_FCM_CREDENTIALS_FILE"], FCMEndpoint: fcmKeys["HUSH_FCM_ENDPOINT"]}

	vapid, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	webpushCfg := Config{WebpushPrivateKey: vapid.PrivateKey(), WebpushSubject: "mailto:ops@example.com"}
	const noWebPush = `level=WARN msg="no Web Push credentials: jobs with webpush devices are refused at submission (set HUSH_WEBPUSH_PRIVATE_KEY)"`

	allDryRun := payload.Platforms()
	for _, tc := range []struct {
		name      string
		cfg       Config
		wantLog   []string
		wantPlats []payload.Platform
		dryRun    bool
	}{
		{"no credentials", Config{}, []string{
			`level=WARN msg="DRY-RUN: no provider credentials are configured (HUSH_APNS_KEY_FILE / HUSH_APNS_CERT_FILE, HUSH_FCM_CREDENTIALS_FILE, HUSH_WEBPUSH_PRIVATE_KEY): NOTHING IS SENT to APNs, FCM or Web Push; pushes are only logged"`,
		}, allDryRun, true},
		{"dry run despite credentials", Config{DryRun: true, FCMCredentialsFile: fcmCfg.FCMCredentialsFile}, []string{
			`level=WARN msg="DRY-RUN: HUSH_DRY_RUN is set: NOTHING IS SENT to APNs, FCM or Web Push; pushes are only logged"`,
		}, []payload.Platform{payload.FCM}, true},
		{"apns only", apnsCfg, []string{
			`level=INFO msg="APNs sender ready"`,
			`level=WARN msg="no FCM credentials: jobs with fcm devices are refused at submission (set HUSH_FCM_CREDENTIALS_FILE)"`,
			noWebPush,
		}, []payload.Platform{payload.APNs}, false},
		{"fcm only", fcmCfg, []string{
			`level=WARN msg="no APNs credentials: jobs with apns devices are refused at submission (set HUSH_APNS_KEY_FILE or HUSH_APNS_CERT_FILE)"`,
			`level=INFO msg="FCM sender ready"`,
			noWebPush,
		}, []payload.Platform{payload.FCM}, false},
		{"webpush only", webpushCfg, []string{
			`level=WARN msg="no APNs credentials: jobs with apns devices are refused at submission (set HUSH_APNS_KEY_FILE or HUSH_APNS_CERT_FILE)"`,
			`level=WARN msg="no FCM credentials: jobs with fcm devices are refused at submission (set HUSH_FCM_CREDENTIALS_FILE)"`,
			`level=INFO msg="Web Push sender ready"`,
		}, []payload.Platform{payload.WebPush}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			got, closeAll, err := envSenders(tc.cfg, logLines(&buf))
			if err != nil {
				t.Fatalf("newSenders: %v", err)
			}
			defer closeAll()
			if d := cmp.Diff(tc.wantLog, strings.Split(strings.TrimSpace(buf.String()), "\n")); d != "" {
				t.Errorf("log lines (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantPlats, slices.Sorted(maps.Keys(got))); d != "" {
				t.Errorf("platforms with a sender (-want +got):\n%s", d)
			}
			for p, s := range got {
				if isDry := isDryRun(s); isDry != tc.dryRun {
					t.Errorf("sender of %s is %T, want dry-run %t", p, s, tc.dryRun)
				}
			}
		})
	}
}

// TestFCMCredentialsNotJSON: HUSH_FCM_CREDENTIALS_FILE naming a file that
// is not a service-account JSON (a PEM key) is refused naming the key,
// the file and what it must be, not in the JSON decoder's words alone.
func TestFCMCredentialsNotJSON(t *testing.T) {
	pem := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(pem, []byte("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, _, err := envSenders(Config{FCMCredentialsFile: pem}, logLines(&buf))
	want := `FCM sender: fcm: HUSH_FCM_CREDENTIALS_FILE: "` + pem + `" is not a JSON object (invalid character '-' in numeric literal): want a Firebase service-account key`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error\n  %v\nwant it to start\n  %s", err, want)
	}
}

// TestNewSendersError: a provider that cannot be built fails newSenders with
// an error naming it.
func TestNewSendersError(t *testing.T) {
	missing := t.TempDir() + "/missing"
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"apns", Config{APNSKeyFile: missing + ".p8", APNSKeyID: "K", APNSTeamID: "T", APNSTopic: "a.b"}, "APNs sender: "},
		{"fcm", Config{FCMCredentialsFile: missing + ".json"}, "FCM sender: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, _, err := envSenders(tc.cfg, logLines(&buf))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("newSenders: %v, want an error starting %q", err, tc.want)
			}
		})
	}
}
