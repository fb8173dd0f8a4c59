package setup

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/worker"
)

// rotation is an app, courier, whose APNs key is keys/courier.p8 beside
// its apps file, served by a fake APNs that checks the key's signatures.
type rotation struct {
	fa       *fake.APNs
	dir      string
	appsFile string
	keyFile  string
	caFile   string
	teamID   string
}

func newRotation(t *testing.T) (*rotation, string) {
	t.Helper()
	fa, err := fake.StartAPNs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fa.Close)
	dir := t.TempDir()
	caFile, err := fa.WriteCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &rotation{fa: fa, dir: dir, appsFile: filepath.Join(dir, "apps.yaml"), keyFile: filepath.Join(dir, "keys", "courier.p8"), caFile: caFile}
	keyID := r.newKey(t, "")
	return r, keyID
}

// newKey writes a new key to keys/courier.p8, makes the fake trust it
// under keyID (its own id when empty: then the apps file names it), and
// returns the id.
func (r *rotation) newKey(t *testing.T, keyID string) string {
	t.Helper()
	id, team, pub := writeAPNsKey(t, r.keyFile)
	if keyID == "" {
		keyID = id
		if r.teamID == "" {
			r.teamID = team
		}
		r.writeApps(t, keyID)
	}
	r.trust(keyID, pub)
	return keyID
}

func (r *rotation) trust(keyID string, pub *ecdsa.PublicKey) { r.fa.TrustKey(keyID, pub) }

func (r *rotation) writeApps(t *testing.T, keyID string) {
	t.Helper()
	writeFile(t, r.appsFile, fmt.Sprintf(`apps:
  - name: courier
    apns:
      key_file: keys/courier.p8
      key_id: %s
      team_id: %s
      topic: com.example.courier
      endpoint: %s
      ca_file: %s
`, keyID, r.teamID, r.fa.URL, filepath.Base(r.caFile)))
}

// startReloader builds the apps of cfg and runs a reloader on them,
// looking every poll; it stops when the test ends.
func startReloader(t *testing.T, cfg Config, poll time.Duration) (*worker.Apps, chan<- os.Signal, *testkit.Buffer) {
	t.Helper()
	var logs testkit.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	rdb := redistest.Start(t).Client(t)
	g, err := buildApps(t.Context(), cfg, rdb, true, true, log)
	if err != nil {
		t.Fatal(err)
	}
	apps, err := worker.NewApps(g.apps...)
	if err != nil {
		t.Fatal(err)
	}
	r := newReloader(cfg, rdb, apps, g, nil, log)
	hup := make(chan os.Signal, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(ctx, poll, hup)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		r.close()
	})
	return apps, hup, &logs
}

// pushVia sends one alert through s and returns the result and the key id
// the fake saw.
func pushVia(t *testing.T, fa *fake.APNs, s worker.Sender) (providers.Result, string) {
	t.Helper()
	res := s.Send(t.Context(), providers.Push{ID: "reload/u/0", Platform: payload.APNs, Token: testkit.APNsToken("reload"),
		Content: &payload.Content{Alert: &payload.Alert{Title: "hi"}}})
	reqs := fa.Requests()
	if res.Outcome != providers.Delivered || len(reqs) == 0 {
		return res, ""
	}
	return res, kidOf(t, reqs[len(reqs)-1])
}

// sender is the current APNs sender of app.
func sender(t *testing.T, apps *worker.Apps, app string) worker.Sender {
	t.Helper()
	a, ok := apps.Get(app)
	if !ok {
		t.Fatalf("no app %s (apps: %v)", app, apps.Names())
	}
	return a.Senders[payload.APNs]
}

// swapped waits until app is not old any more and returns the new one.
func swapped(t *testing.T, apps *worker.Apps, app string, old *worker.App) *worker.App {
	t.Helper()
	var cur *worker.App
	testkit.WaitFor(t, 15*time.Second, "the apps to be reloaded", func() bool {
		cur, _ = apps.Get(app)
		return cur != old
	})
	return cur
}

// swappedToKey waits until app is not old any more and its sender
// delivers signed by keyID, and returns it. A rotation that changes the key
// file and then the apps file can be seen half done by a poll in between
// (the new key under the old id, which the fake refuses); the next poll
// swaps in the whole of it.
func swappedToKey(t *testing.T, fa *fake.APNs, apps *worker.Apps, app string, old *worker.App, keyID string) *worker.App {
	t.Helper()
	var cur *worker.App
	testkit.WaitFor(t, 15*time.Second, "the apps to be reloaded with key "+keyID, func() bool {
		cur, _ = apps.Get(app)
		if cur == old {
			return false
		}
		res, kid := pushVia(t, fa, cur.Senders[payload.APNs])
		return res.Outcome == providers.Delivered && kid == keyID
	})
	return cur
}

func wantDelivered(t *testing.T, fa *fake.APNs, s worker.Sender, keyID, what string) {
	t.Helper()
	res, kid := pushVia(t, fa, s)
	if res.Outcome != providers.Delivered || kid != keyID {
		t.Errorf("%s: %v (%v) signed by key %q, want delivered signed by %q", what, res.Outcome, res.Err, kid, keyID)
	}
}

// TestReloadRotatesCredentials: a new .p8 at the same path, then a new
// key with a new id in the apps file, are each picked up by the poll and
// swapped in: the new sender signs with the new key. A corrupt
// replacement is refused, logged once, and the senders in use go on.
func TestReloadRotatesCredentials(t *testing.T) {
	rot, idA := newRotation(t)
	cfg := DefaultConfig()
	cfg.AppsFile = rot.appsFile
	apps, _, logs := startReloader(t, cfg, 20*time.Millisecond)
	first, _ := apps.Get("courier")
	wantDelivered(t, rot.fa, first.Senders[payload.APNs], idA, "before any change")

	// The key file alone changes: the same id, a new key, which the fake
	// now holds instead of the old one.
	rot.newKey(t, idA)
	second := swapped(t, apps, "courier", first)
	wantDelivered(t, rot.fa, second.Senders[payload.APNs], idA, "after the .p8 changed")
	if res, _ := pushVia(t, rot.fa, first.Senders[payload.APNs]); res.Outcome == providers.Delivered {
		t.Errorf("the first sender still signs acceptably: the fake does not check the key")
	}
	if !strings.Contains(logs.String(), `msg="apps reloaded" why="changed: `+rot.keyFile+`"`) ||
		!strings.Contains(logs.String(), `changed="[courier: apns credentials]"`) {
		t.Errorf("no apps reloaded line saying the key changed:\n%s", logs)
	}

	// A new key under a new id: the key file and the apps file change.
	idB, _, pubB := writeAPNsKey(t, rot.keyFile)
	rot.trust(idB, pubB)
	rot.writeApps(t, idB)
	third := swappedToKey(t, rot.fa, apps, "courier", second, idB)
	wantDelivered(t, rot.fa, third.Senders[payload.APNs], idB, "after the new key id")
	wantDelivered(t, rot.fa, second.Senders[payload.APNs], idA, "the replaced sender, for the sends under way")

	// A corrupt key is refused: the senders in use go on.
	writeFile(t, rot.keyFile, "-----BEGIN PRIVATE KEY-----\ngarbage\n")
	testkit.WaitFor(t, 15*time.Second, "the corrupt key to be refused", func() bool {
		return strings.Contains(logs.String(), "apps reload refused")
	})
	if cur, _ := apps.Get("courier"); cur != third {
		t.Errorf("a corrupt key replaced the apps")
	}
	wantDelivered(t, rot.fa, sender(t, apps, "courier"), idB, "after the corrupt key")
	if !strings.Contains(logs.String(), "apps[courier].apns.key_file: token: AuthKey must be a valid .p8 PEM file") {
		t.Errorf("the refusal does not name the app and the field:\n%s", logs)
	}

	// Fixed again: swapped in.
	idC := rot.newKey(t, "")
	fourth := swappedToKey(t, rot.fa, apps, "courier", third, idC)
	wantDelivered(t, rot.fa, fourth.Senders[payload.APNs], idC, "after the fix")
	if n := strings.Count(logs.String(), "apps reload refused"); n != 1 {
		t.Errorf("the corrupt key was refused %d times, want once (until it changed again):\n%s", n, logs)
	}
}

// TestReloadOnSIGHUP: SIGHUP reloads at once, without waiting for the
// poll; a bad file on SIGHUP is refused and the apps go on.
func TestReloadOnSIGHUP(t *testing.T) {
	rot, idA := newRotation(t)
	cfg := DefaultConfig()
	cfg.AppsFile = rot.appsFile
	apps, hup, logs := startReloader(t, cfg, time.Hour)
	first, _ := apps.Get("courier")

	writeFile(t, rot.appsFile, "apps:\n  - name: courier\n    apns: {topic: com.example.courier}\n")
	hup <- syscall.SIGHUP
	testkit.WaitFor(t, 15*time.Second, "the bad file to be refused", func() bool {
		return strings.Contains(logs.String(), "apps reload refused")
	})
	if !strings.Contains(logs.String(), `why=SIGHUP`) || !strings.Contains(logs.String(), "apps[courier].apns.topic: a topic without credentials") {
		t.Errorf("the refusal does not say why:\n%s", logs)
	}
	wantDelivered(t, rot.fa, sender(t, apps, "courier"), idA, "after the refused file")

	idB := rot.newKey(t, "")
	hup <- syscall.SIGHUP
	second := swapped(t, apps, "courier", first)
	wantDelivered(t, rot.fa, second.Senders[payload.APNs], idB, "after SIGHUP")
}

// TestReloadEnvCredentials: the HUSH_* keys' credential files are watched
// too, and the app default is rebuilt from them.
func TestReloadEnvCredentials(t *testing.T) {
	rot, _ := newRotation(t)
	cfg := DefaultConfig()
	idA, team, pubA := writeAPNsKey(t, filepath.Join(rot.dir, "env.p8"))
	rot.trust(idA, pubA)
	cfg.APNSKeyFile, cfg.APNSKeyID, cfg.APNSTeamID, cfg.APNSTopic = filepath.Join(rot.dir, "env.p8"), idA, team, testkit.APNsTopic
	cfg.APNSEndpoint, cfg.APNSCaFile = rot.fa.URL, rot.caFile
	apps, _, _ := startReloader(t, cfg, 20*time.Millisecond)
	first, _ := apps.Get(worker.DefaultApp)
	_, _, pubB := writeAPNsKey(t, cfg.APNSKeyFile)
	rot.trust(idA, pubB)
	second := swapped(t, apps, worker.DefaultApp, first)
	wantDelivered(t, rot.fa, second.Senders[payload.APNs], idA, "after HUSH_APNS_KEY_FILE changed")
}
