package main

import (
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
)

// The apps clusters: hush serve processes configured by an apps file
// (HUSH_APPS_FILE, docs/configuration.md#apps) and no HUSH_APNS_* or
// HUSH_FCM_* credentials, so the file's apps are the only ones. The file
// names its own fake APNs and FCM (endpoint, ca_file, the service
// account's token_uri), started before the processes, and the cluster's
// fakes are replaced by them, so that c.arrivals, c.waitDrained and the
// other cluster helpers judge what the file's apps sent.

// e2eApp is one app of a test's apps file, as the test knows it.
type e2eApp struct {
	name     string
	platform payload.Platform // its devices' platform: apns or fcm, not both
	topic    string           // apns: the bundle id
	project  string           // fcm: the Firebase project
	rules    rules            // its throttle: limits n/window, min_gap gap
	// inheritGap leaves min_gap out of the file: the app takes
	// HUSH_THROTTLE_MIN_GAP (e2eMinGap).
	inheritGap bool
	maxRate    string // max_rate of its platform; "" none
}

// mixedApps are three apps with rules of their own: two APNs topics with
// different keys, one FCM project. rider leaves min_gap out and takes the
// environment's 300 ms.
var mixedApps = []e2eApp{
	{name: "shop", platform: payload.APNs, topic: "com.example.shop",
		rules: rules{n: 3, window: 2 * time.Second, gap: 300 * time.Millisecond, tolerance: e2eTolerance}},
	{name: "courier", platform: payload.APNs, topic: "com.example.courier",
		rules: rules{n: 2, window: 3 * time.Second, gap: time.Second, tolerance: e2eTolerance}},
	{name: "rider", platform: payload.FCM, project: "hush-rider",
		rules: rules{n: 4, window: 3 * time.Second, gap: e2eMinGap, tolerance: e2eTolerance}, inheritGap: true},
}

// apnsKey is an APNs .p8 key: the file's content, its key id, the team's id
// and the public half the fake checks signatures with.
type apnsKey struct {
	pem  []byte
	id   string
	team string
	pub  *ecdsa.PublicKey
}

// newAPNsKey makes a new key (fake.WriteAPNsKey in a scratch directory).
func newAPNsKey(t *testing.T) apnsKey {
	t.Helper()
	file, id, team, err := fake.WriteAPNsKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return apnsKey{pem: b, id: id, team: team, pub: publicKey(t, file)}
}

// appsFixture is an apps file, the credential files beside it and the
// fakes it points at.
type appsFixture struct {
	t    *testing.T
	apps []e2eApp
	dir  string // the apps file's directory; credential paths are relative to it
	file string
	apns *fake.APNs
	fcm  *fake.FCM
	// keys is each APNs app's key in the file (keys/<app>.p8).
	keys map[string]apnsKey
}

// newAppsFixture starts the fakes, writes every APNs app a key of its own
// (trusted by the fake, which then checks every JWT's signature), one
// service account for the FCM apps, and the apps file.
func newAppsFixture(t *testing.T, apps []e2eApp) *appsFixture {
	t.Helper()
	fx := &appsFixture{t: t, apps: apps, dir: t.TempDir(), keys: map[string]apnsKey{}}
	fx.file = filepath.Join(fx.dir, "apps.json")
	var err error
	if fx.apns, err = fake.StartAPNs(); err != nil {
		t.Fatalf("fake APNs: %v", err)
	}
	t.Cleanup(fx.apns.Close)
	if fx.fcm, err = fake.StartFCM(); err != nil {
		t.Fatalf("fake FCM: %v", err)
	}
	t.Cleanup(fx.fcm.Close)
	if _, err := fx.apns.WriteCA(fx.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(fx.dir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		switch a.platform {
		case payload.APNs:
			k := newAPNsKey(t)
			fx.keys[a.name] = k
			fx.apns.TrustKey(k.id, k.pub)
			fx.writeFile(fx.keyFile(a.name), k.pem)
		case payload.FCM:
			if _, err := fake.WriteServiceAccount(fx.dir, fx.fcm.TokenURL(), a.project); err != nil {
				t.Fatal(err)
			}
		}
	}
	fx.writeApps(fx.doc())
	return fx
}

// keyFile is the path of app's .p8 key.
func (fx *appsFixture) keyFile(app string) string {
	return filepath.Join(fx.dir, "keys", app+".p8")
}

// doc is the apps file for fx.apps and fx.keys, relative paths for the
// credential files: maps, so that a test can break one field of it.
func (fx *appsFixture) doc() map[string]any {
	var apps []any
	for _, a := range fx.apps {
		th := map[string]any{"limits": fmt.Sprintf("%d/%s", a.rules.n, a.rules.window)}
		if !a.inheritGap {
			th["min_gap"] = "0"
			if a.rules.gap > 0 {
				th["min_gap"] = a.rules.gap.String()
			}
		}
		app := map[string]any{"name": a.name, "throttle": th}
		switch a.platform {
		case payload.APNs:
			k := fx.keys[a.name]
			block := map[string]any{
				"key_file": "keys/" + a.name + ".p8", "key_id": k.id, "team_id": k.team,
				"topic": a.topic, "endpoint": fx.apns.URL, "ca_file": "apns-ca.pem",
			}
			if a.maxRate != "" {
				block["max_rate"] = a.maxRate
			}
			app["apns"] = block
		case payload.FCM:
			block := map[string]any{"credentials_file": "service-account.json", "project_id": a.project, "endpoint": fx.fcm.Endpoint()}
			if a.maxRate != "" {
				block["max_rate"] = a.maxRate
			}
			app["fcm"] = block
		}
		apps = append(apps, app)
	}
	return map[string]any{"apps": apps}
}

// writeApps replaces the apps file with doc.
func (fx *appsFixture) writeApps(doc map[string]any) {
	fx.t.Helper()
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		fx.t.Fatal(err)
	}
	fx.writeFile(fx.file, b)
}

// writeFile replaces path with data at once (a new file renamed over it),
// so a process polling it never reads half of it.
func (fx *appsFixture) writeFile(path string, data []byte) {
	fx.t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		fx.t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		fx.t.Fatal(err)
	}
}

// app returns the app named name.
func (fx *appsFixture) app(name string) e2eApp {
	i := slices.IndexFunc(fx.apps, func(a e2eApp) bool { return a.name == name })
	if i < 0 {
		fx.t.Fatalf("no app %q in the fixture", name)
	}
	return fx.apps[i]
}

// appsEnv are the settings that make the apps file the only source of
// apps: HUSH_APPS_FILE, and the HUSH_APNS_*, HUSH_FCM_* and HUSH_WEBPUSH_*
// keys the cluster sets emptied (a later KEY= wins), so there is no app
// default.
func (fx *appsFixture) appsEnv() []string {
	return []string{
		"HUSH_APPS_FILE=" + fx.file,
		"HUSH_APNS_KEY_FILE=", "HUSH_APNS_KEY_ID=", "HUSH_APNS_TEAM_ID=", "HUSH_APNS_TOPIC=",
		"HUSH_APNS_ENDPOINT=", "HUSH_APNS_CA_FILE=",
		"HUSH_FCM_CREDENTIALS_FILE=", "HUSH_FCM_PROJECT_ID=", "HUSH_FCM_ENDPOINT=",
		"HUSH_WEBPUSH_PRIVATE_KEY=", "HUSH_WEBPUSH_PUBLIC_KEY=", "HUSH_WEBPUSH_SUBJECT=", "HUSH_WEBPUSH_CA_FILE=",
	}
}

// startAppsCluster starts procs hush serve processes for apps (the
// global rules 5/2s and 300 ms gap stay in the environment: an app's
// throttle field left out takes them).
func startAppsCluster(t *testing.T, procs, concurrency int, apps []e2eApp, env ...string) (*cluster, *appsFixture) {
	t.Helper()
	needBinary(t)
	fx := newAppsFixture(t, apps)
	c := startCluster(t, clusterOptions{procs: procs, concurrency: concurrency, maxRetry: 3,
		env: append(fx.appsEnv(), env...)})
	c.apns, c.fcm = fx.apns, fx.fcm
	if c.owners == nil {
		c.owners = make(map[string]string)
	}
	return c, fx
}

// appUser is the identity of user in app: the notifications' "<app>:<user>",
// which push.user returns, so that timelines are per app and user.
func appUser(app, user string) string { return app + ":" + user }

// appOfNote is the app of a notification "<app>:<user>#<k>".
func appOfNote(n string) string { a, _, _ := strings.Cut(n, ":"); return a }

// appToken is the device token of user in app: a device's token is its
// app's, so the same user id has another token in every app.
func appToken(app e2eApp, user string) string {
	if app.platform == payload.FCM {
		return fcmToken(app.name + "-" + user)
	}
	return apnsToken(app.name + "/" + user)
}

// appJob is the k-th job of app for user: one recipient with one device of
// the app's platform, naming the app.
func (fx *appsFixture) appJob(app e2eApp, user string, k int) (payload.Job, push) {
	n := fmt.Sprintf("%s#%02d", appUser(app.name, user), k)
	tok := appToken(app, user)
	job := payload.Job{
		ID:         fmt.Sprintf("e2e-%s-%s-%02d", app.name, user, k),
		Recipients: []payload.Recipient{{UserID: user, Devices: []payload.Device{{Platform: app.platform, Token: tok}}}},
		Content: payload.Content{
			App:   app.name,
			Alert: &payload.Alert{Title: "Notification " + n, Body: "end-to-end apps test"},
			Data:  map[string]string{e2eKey: n},
		},
	}
	return job, push{app.platform, tok, n}
}

// mixedBurst is perUser jobs for each of users users in every app, the
// same user ids in every app: round k before round k+1, and within a
// round app by app, so that c.submit's round-robin gives every process
// jobs of every app.
func (fx *appsFixture) mixedBurst(users, perUser int) ([]payload.Job, []push) {
	var jobs []payload.Job
	var pushes []push
	for k := range perUser {
		for _, a := range fx.apps {
			for u := range users {
				j, p := fx.appJob(a, fmt.Sprintf("u%02d", u), k)
				jobs = append(jobs, j)
				pushes = append(pushes, p)
			}
		}
	}
	return jobs, pushes
}

// appArrival is one request a fake accepted, with the credentials it
// came with.
type appArrival struct {
	arrival
	app string // the notification's app, from data[e2eKey]
	// APNs: the apns-topic header and the provider token's key id and
	// issuer (the team).
	topic, kid, team string
	// FCM: the project of the request path.
	project string
}

// appArrivals is everything both fakes accepted, in no particular order.
// A fan-out job's notification ("*#<k>") is given its device's user from
// c.owners, which holds "<app>:<user>".
func appArrivals(c *cluster) []appArrival {
	var out []appArrival
	add := func(p payload.Platform, reqs []fake.Request) {
		for _, r := range reqs {
			n := findString(r.Body, e2eKey)
			if rest, ok := strings.CutPrefix(n, everyone+"#"); ok {
				n = c.owners[r.Token] + "#" + rest
			}
			a := appArrival{arrival: arrival{push{p, r.Token, n}, r.At, r.Status, r.Answered}, app: appOfNote(n)}
			switch p {
			case payload.APNs:
				a.topic = r.Header.Get("apns-topic")
				a.kid, a.team = jwtKid(r.Header.Get("Authorization"))
			case payload.FCM:
				a.project, _, _ = strings.Cut(strings.TrimPrefix(r.Path, "/v1/projects/"), "/")
			}
			out = append(out, a)
		}
	}
	add(payload.APNs, c.apns.Requests())
	add(payload.FCM, c.fcm.Requests())
	return out
}

// plain drops the credentials: the arrivals for the cluster's checks.
func plain(arrs []appArrival) []arrival {
	out := make([]arrival, len(arrs))
	for i, a := range arrs {
		out[i] = a.arrival
	}
	return out
}

// ofApp keeps the arrivals of app.
func ofApp(arrs []appArrival, app string) []appArrival {
	return slices.DeleteFunc(slices.Clone(arrs), func(a appArrival) bool { return a.app != app })
}

// jwtKid reads the key id (header kid) and the issuer (claim iss) of the
// provider token in an APNs Authorization header ("bearer <JWT>"); the
// fake has checked its signature.
func jwtKid(auth string) (kid, iss string) {
	_, tok, _ := strings.Cut(auth, " ")
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", ""
	}
	var h struct {
		Kid string `json:"kid"`
	}
	var c struct {
		Iss string `json:"iss"`
	}
	if b, err := base64.RawURLEncoding.DecodeString(parts[0]); err == nil {
		_ = json.Unmarshal(b, &h)
	}
	if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
		_ = json.Unmarshal(b, &c)
	}
	return h.Kid, c.Iss
}

// assertCredentials checks that every accepted request went with its own
// app's credentials: an APNs app's topic and team, a key id kidOK allows
// (nil: the app's key in fx.keys), and a token of the app; an FCM app's
// project. It returns the requests per app and key id ("rider" for FCM).
func (fx *appsFixture) assertCredentials(arrs []appArrival, kidOK func(a appArrival) bool) map[string]int {
	t := fx.t
	t.Helper()
	seen := map[string]int{}
	var bad []string
	for _, a := range sortedByAppTime(arrs) {
		i := slices.IndexFunc(fx.apps, func(x e2eApp) bool { return x.name == a.app })
		if i < 0 {
			bad = append(bad, fmt.Sprintf("%s %s (token %.12s): a notification of no known app", a.N, a.Platform, a.Token))
			continue
		}
		app := fx.apps[i]
		user := strings.TrimPrefix(a.user(), app.name+":")
		var why []string
		if a.Platform != app.platform {
			why = append(why, fmt.Sprintf("platform %s, want %s", a.Platform, app.platform))
		}
		if a.Token != appToken(app, user) {
			why = append(why, fmt.Sprintf("token %.12s is not %s's device in %s", a.Token, user, app.name))
		}
		switch app.platform {
		case payload.APNs:
			k := fx.keys[app.name]
			ok := a.kid == k.id
			if kidOK != nil {
				ok = kidOK(a)
			}
			if !ok {
				why = append(why, fmt.Sprintf("key id %q", a.kid))
			}
			if a.topic != app.topic {
				why = append(why, fmt.Sprintf("apns-topic %q, want %q", a.topic, app.topic))
			}
			if a.team != k.team {
				why = append(why, fmt.Sprintf("team (JWT iss) %q, want %q", a.team, k.team))
			}
			seen[app.name+" kid "+a.kid]++
		case payload.FCM:
			if a.project != app.project {
				why = append(why, fmt.Sprintf("project %q, want %q", a.project, app.project))
			}
			seen[app.name+" project "+a.project]++
		}
		if len(why) > 0 {
			bad = append(bad, fmt.Sprintf("%s %s at %s: %s", a.N, a.Platform, a.At.UTC().Format("15:04:05.000"), strings.Join(why, ", ")))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d requests went with another app's credentials or to another app's device: %s", len(bad), len(arrs), head(bad, 10))
	}
	return seen
}

// assertAppTimelines checks each app's rules on its own users' timelines
// (per user and per device: one device each, so the same here) with
// docs/delivery.md's tolerance.
func (fx *appsFixture) assertAppTimelines(arrs []appArrival) {
	t := fx.t
	t.Helper()
	for _, app := range fx.apps {
		mine := plain(ofApp(arrs, app.name))
		v, st := checkTimelines(mine, byUser, app.rules)
		if len(v) > 0 {
			timingErrorf(t, "app %s: %d rule violations (%d/%s, gap %s, tolerance %s): %s", app.name, len(v),
				app.rules.n, app.rules.window, app.rules.gap, app.rules.tolerance, head(v, 10))
			for _, u := range st.violating[:min(2, len(st.violating))] {
				u = strings.TrimPrefix(u, "user ")
				t.Logf("timeline of %s (offset, platform, notification, status):%s", u, timeline(mine, u))
			}
		}
		t.Logf("app %s (%d/%s, gap %s): %d user timelines; smallest span of %d consecutive pushes %s (rule: >= %s - %s); smallest gap %s (rule: >= %s - %s); most in any %s: %d",
			app.name, app.rules.n, app.rules.window, app.rules.gap, st.timelines, app.rules.n+1, st.minSpan.Round(time.Millisecond),
			app.rules.window, app.rules.tolerance, st.minGap.Round(time.Millisecond), app.rules.gap, app.rules.tolerance, app.rules.window, st.maxInWindow)
	}
}

func sortedByAppTime(arrs []appArrival) []appArrival {
	out := slices.Clone(arrs)
	slices.SortStableFunc(out, func(a, b appArrival) int { return a.At.Compare(b.At) })
	return out
}

// mostInWindow is the most instants of ats (sorted) within any window
// [t, t+w) that starts at one of them.
func mostInWindow(ats []time.Time, w time.Duration) (most int, at time.Time) {
	k := 0
	for i := range ats {
		for k < len(ats) && ats[k].Sub(ats[i]) < w {
			k++
		}
		if k-i > most {
			most, at = k-i, ats[i]
		}
	}
	return most, at
}

// rateTolerance is the most sends a cap of rate per second lets a
// provider see in any one second (docs/configuration.md, "Send rates"):
// the rate, one more at the window's two edges, and those moved by 25 ms
// either side by timers and the network.
func rateTolerance(rate float64) int {
	return int(rate) + 1 + int(math.Ceil(2*rate*0.025))
}

// sighup sends SIGHUP to every live process: reload the apps now.
func (c *cluster) sighup() {
	c.t.Helper()
	for _, p := range c.procs {
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			c.t.Fatalf("SIGHUP %s: %v", p.name, err)
		}
	}
}

// logged returns the lines of p's log (JSON, one record a line) whose msg
// is msg.
func logged(p *hushProc, msg string) []string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return nil
	}
	want := `"msg":` + strconv.Quote(msg)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, want) {
			out = append(out, l)
		}
	}
	return out
}

// reloads reads hush_apps_reloads_total{result=result} from p's /metrics
// (0 when not there yet).
func (c *cluster) reloads(p *hushProc, result string) (int, error) {
	return c.metric(p, `hush_apps_reloads_total{result="`+result+`"}`)
}

// metric reads the value of series (name{labels}, as /metrics writes
// it) from p's /metrics (0 when not there yet).
func (c *cluster) metric(p *hushProc, series string) (int, error) {
	r, err := c.do(p, http.MethodGet, "/metrics", nil, "")
	if err != nil {
		return 0, err
	}
	if r.Status != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics on %s: %d", p.name, r.Status)
	}
	prefix := series + " "
	for _, l := range strings.Split(string(r.Body), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, nil
}

// waitLogged waits until every live process logged msg more than before
// (the lines each had before), and returns each's new lines.
func (c *cluster) waitLogged(msg string, before map[string]int, timeout time.Duration) map[string][]string {
	c.t.Helper()
	got := map[string][]string{}
	c.waitFor("every process to log "+strconv.Quote(msg), timeout, func() (bool, string) {
		var missing []string
		for _, p := range c.procs {
			lines := logged(p, msg)
			if len(lines) <= before[p.name] {
				missing = append(missing, p.name)
				continue
			}
			got[p.name] = lines[before[p.name]:]
		}
		return len(missing) == 0, "not yet logged by " + strings.Join(missing, ", ")
	})
	return got
}

// logCounts is how many lines with msg each process has logged so far.
func (c *cluster) logCounts(msg string) map[string]int {
	out := map[string]int{}
	for _, p := range c.procs {
		out[p.name] = len(logged(p, msg))
	}
	return out
}
