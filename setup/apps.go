package setup

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/fcm"
	"github.com/hushpush/hush/providers/webpush"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// appsFileKey is the key naming the apps file.
const appsFileKey = "HUSH_APPS_FILE"

// appSpec is one app as the configuration gives it, checked: what its
// senders, limiter and send rates are built from.
type appSpec struct {
	name string
	// label names the app in the apps file's errors (apps[courier]);
	// empty for the app of the HUSH_* keys, whose errors name the keys.
	label string
	apns  *apns.Config // nil: no APNs
	fcm   *fcm.Config  // nil: no FCM
	// webpush is the app's VAPID key pair and contact; nil: no Web Push.
	webpush *webpush.Config
	// egress is the policy for Web Push endpoints (HUSH_WEBPUSH_ORIGINS,
	// HUSH_WEBPUSH_PRIVATE_NETWORKS), the same for every app, dry-run
	// included.
	egress webpush.Egress
	// maxRate is the sends per second to each platform (absent: no cap),
	// maxRateText as the file writes it.
	maxRate     map[payload.Platform]float64
	maxRateText map[payload.Platform]string
	policy      throttle.Policy
	maxPending  int
	group       string // throttle_group, "" for none
	scope       string // the limiter's scope: group, else name ("" for default)
	// apiTokens act for this app (the file's api_tokens).
	apiTokens []string
	// broken: the app has problems of its own, so its credentials are not
	// loaded.
	broken bool
}

// appsConfig is what one set of apps is built from: the apps, and the
// digest of every file they were read from or name, taken before the
// senders read them (a file changed after it is seen changed again).
type appsConfig struct {
	file    string // HUSH_APPS_FILE, "" for none
	specs   []appSpec
	digests map[string]string
	ps      *problems // the apps file's problems so far
}

// envAppDefined reports whether the HUSH_* keys define the app default:
// when they set provider credentials, or when there is no apps file.
func envAppDefined(cfg Config) bool { return anyEnvCredentials(cfg) || cfg.AppsFile == "" }

func anyEnvCredentials(cfg Config) bool {
	return cfg.apnsConfigured() || cfg.fcmConfigured() || cfg.webpushConfigured()
}

// envApp is the app of the HUSH_APNS_*, HUSH_FCM_* and HUSH_THROTTLE_*
// keys (cfg is valid): default, with unscoped limiter keys, as before
// there were apps.
func envApp(cfg Config) appSpec {
	a := appSpec{name: worker.DefaultApp, maxPending: cfg.ThrottleMaxPending}
	a.policy, _ = cfg.policy() // checked by Validate
	a.egress, _ = cfg.webpushEgress()
	if cfg.apnsConfigured() {
		a.apns = &apns.Config{
			KeyFile: cfg.APNSKeyFile, KeyID: cfg.APNSKeyID, TeamID: cfg.APNSTeamID,
			CertFile: cfg.APNSCertFile, CertPassword: cfg.APNSCertPassword,
			Topic: cfg.APNSTopic, Production: cfg.APNSProduction,
			Endpoint: cfg.APNSEndpoint, CAFile: cfg.APNSCaFile,
		}
	}
	if cfg.fcmConfigured() {
		a.fcm = &fcm.Config{CredentialsFile: cfg.FCMCredentialsFile, ProjectID: cfg.FCMProjectID, Endpoint: cfg.FCMEndpoint}
	}
	if cfg.webpushConfigured() {
		a.webpush = &webpush.Config{PrivateKey: cfg.WebpushPrivateKey, PublicKey: cfg.WebpushPublicKey,
			Subject: cfg.WebpushSubject, CAFile: cfg.WebpushCaFile, Egress: a.egress}
	}
	return a
}

// credentialFiles are the files a's senders read.
func (a appSpec) credentialFiles() []string {
	var out []string
	if a.apns != nil {
		out = append(out, a.apns.KeyFile, a.apns.CertFile, a.apns.CAFile)
	}
	if a.fcm != nil {
		out = append(out, a.fcm.CredentialsFile)
	}
	if a.webpush != nil {
		out = append(out, a.webpush.CAFile)
	}
	return slices.DeleteFunc(out, func(f string) bool { return f == "" })
}

// readApps reads the apps cfg defines: with withEnv, the HUSH_* keys' app
// default when they define it, then the apps file's, checked offline
// (everything but the credential files' contents, which building the
// senders checks). The file's problems are in the result's ps; the error
// is a file that cannot be read.
func readApps(cfg Config, withEnv bool) (*appsConfig, error) {
	ac := &appsConfig{file: cfg.AppsFile, digests: map[string]string{}, ps: &problems{lines: map[string]int{}}}
	if withEnv && envAppDefined(cfg) {
		a := envApp(cfg)
		ac.specs = append(ac.specs, a)
		for _, f := range a.credentialFiles() {
			ac.digests[f] = digestFile(f)
		}
	}
	if cfg.AppsFile == "" {
		return ac, nil
	}
	data, err := readNamed(cfg.AppsFile)
	ac.digests[cfg.AppsFile] = digest(data, err)
	if err != nil {
		return ac, err
	}
	var f appsFile
	ps := ac.ps
	decodeApps(data, &f, ps)
	if len(f.Apps) == 0 && !slices.ContainsFunc(ps.list, func(p *FieldError) bool { return p.Path == "apps" }) {
		ps.at("apps", "%w", errNoApps)
	}
	dir := filepath.Dir(cfg.AppsFile)
	used := map[string]bool{} // names labelling an app, as decoding labels them
	for i, e := range f.Apps {
		a := fileApp(e, "apps["+label(i, e.Name, used)+"]", cfg, dir, ps)
		if first := "apps[" + e.Name + "]"; payload.ValidApp(e.Name) && a.label != first {
			ps.at(a.label+".name", "%q is already the name of %s (line %d): names must differ", e.Name, first, ps.lines[first])
		}
		for _, file := range namedFiles(e, dir) {
			ac.digests[file] = digestFile(file)
		}
		ac.specs = append(ac.specs, a)
	}
	checkGroups(ac.specs, ps)
	return ac, nil
}

// fileApp checks an app of the file, labelled in errors as label; its
// problems go to ps.
func fileApp(e appEntry, label string, cfg Config, dir string, ps *problems) appSpec {
	a := appSpec{name: e.Name, label: label}
	a.egress, _ = cfg.webpushEgress() // Validate has checked it
	n := len(ps.list)
	switch {
	case e.Name == "":
		ps.addf(a.label+".name", ps.lines[a.label], "missing: every app needs a name (1 to %d of a-z, 0-9, _ and -)", payload.MaxAppBytes)
	case !payload.ValidApp(e.Name):
		ps.at(a.label+".name", "%q: want 1 to %d of a-z, 0-9, _ and -", e.Name, payload.MaxAppBytes)
	case e.Name == worker.DefaultApp && anyEnvCredentials(cfg):
		ps.at(a.label+".name", "default is the app of the HUSH_APNS_* and HUSH_FCM_* keys, which set credentials: name this app otherwise, or move those keys into the file")
	}
	a.maxRate, a.maxRateText = map[payload.Platform]float64{}, map[payload.Platform]string{}
	a.apns = fileAPNs(a.label+".apns", e.APNs, dir, &a, ps)
	a.fcm = fileFCM(a.label+".fcm", e.FCM, dir, &a, ps)
	a.webpush = fileWebPush(a.label+".webpush", e.WebPush, dir, &a, ps)
	if a.webpush != nil {
		a.webpush.Egress = a.egress
	}
	if e.APNs == nil && e.FCM == nil && e.WebPush == nil {
		ps.addf(a.label, ps.lines[a.label], "neither apns nor fcm nor webpush: give the app the credentials of one or more")
	}
	a.policy, a.maxPending = fileThrottle(a.label+".throttle", e.Throttle, cfg, ps)
	a.apiTokens = fileTokens(a.label+".api_tokens", e.APITokens, cfg, ps)
	a.group, a.scope = e.ThrottleGroup, e.Name
	switch {
	case e.ThrottleGroup != "" && !throttle.ValidCategory(e.ThrottleGroup):
		ps.at(a.label+".throttle_group", "%q: want 1 to %d of a-z, 0-9, _ and -", e.ThrottleGroup, throttle.MaxCategoryLen)
	case e.ThrottleGroup != "":
		a.scope = e.ThrottleGroup
	case e.Name == worker.DefaultApp:
		a.scope = "" // the keys the HUSH_* keys' app default has always had
	}
	a.broken = len(ps.list) > n
	return a
}

// namedFiles are the credential files entry e names, resolved, whether
// or not they passed: a reload is due when one of them changes.
func namedFiles(e appEntry, dir string) []string {
	var out []string
	if e.APNs != nil {
		out = append(out, e.APNs.KeyFile, e.APNs.CertFile, e.APNs.CAFile)
	}
	if e.FCM != nil {
		out = append(out, e.FCM.CredentialsFile)
	}
	if e.WebPush != nil {
		out = append(out, e.WebPush.CAFile)
	}
	out = slices.DeleteFunc(out, func(f string) bool { return f == "" })
	for i, f := range out {
		out[i] = resolve(dir, f)
	}
	return out
}

// fileAPNs checks an app's apns block at path (nil: none) and returns its
// sender's configuration, nil when it has problems.
func fileAPNs(path string, e *apnsEntry, dir string, a *appSpec, ps *problems) *apns.Config {
	if e == nil {
		return nil
	}
	n := len(ps.list)
	keyAuth := e.KeyFile != "" || e.KeyID != "" || e.TeamID != ""
	credentials := keyAuth || e.CertFile != ""
	const how = "set key_file, key_id and team_id (token auth) or cert_file (certificate auth)"
	switch {
	case keyAuth && e.CertFile != "":
		ps.at(path+".cert_file", "set either key_file (with key_id and team_id) or cert_file, not both")
	case !credentials && e.Topic != "":
		ps.at(path+".topic", "a topic without credentials: "+how)
	case !credentials:
		ps.at(path, "no credentials: "+how)
	case keyAuth:
		for _, f := range []struct{ name, value, why string }{
			{"key_file", e.KeyFile, "required with key_id and team_id (the .p8 key)"},
			{"key_id", e.KeyID, "required with key_file (the key's id)"},
			{"team_id", e.TeamID, "required with key_file (the developer team's id)"},
		} {
			if f.value == "" {
				ps.addf(path+"."+f.name, ps.lines[path], "%s", f.why)
			}
		}
	}
	if credentials && e.Topic == "" {
		ps.addf(path+".topic", ps.lines[path], "required (the app's bundle id)")
	}
	if e.CertPassword != "" && e.CertFile == "" {
		ps.at(path+".cert_password", "only used with cert_file")
	}
	if e.CAFile != "" && e.Endpoint == "" {
		ps.at(path+".ca_file", "only used with endpoint")
	}
	if u, err := url.Parse(e.Endpoint); e.Endpoint != "" && (err != nil || u.Scheme != "https" || u.Host == "") {
		ps.at(path+".endpoint", "want an https:// URL, got %q", e.Endpoint)
	}
	rate(path, e.MaxRate, payload.APNs, a, ps)
	if len(ps.list) > n {
		readable(path, dir, ps, "key_file", e.KeyFile, "cert_file", e.CertFile, "ca_file", e.CAFile)
		return nil
	}
	return &apns.Config{
		KeyFile: resolve(dir, e.KeyFile), KeyID: e.KeyID, TeamID: e.TeamID,
		CertFile: resolve(dir, e.CertFile), CertPassword: e.CertPassword,
		Topic: e.Topic, Production: e.Production,
		Endpoint: e.Endpoint, CAFile: resolve(dir, e.CAFile),
	}
}

// fileFCM checks an app's fcm block at path (nil: none) and returns its
// sender's configuration, nil when it has problems.
func fileFCM(path string, e *fcmEntry, dir string, a *appSpec, ps *problems) *fcm.Config {
	if e == nil {
		return nil
	}
	n := len(ps.list)
	if e.CredentialsFile == "" {
		ps.addf(path+".credentials_file", ps.lines[path], "required (the service-account JSON)")
	}
	if u, err := url.Parse(e.Endpoint); e.Endpoint != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		ps.at(path+".endpoint", "want an http:// or https:// URL, got %q", e.Endpoint)
	}
	rate(path, e.MaxRate, payload.FCM, a, ps)
	if len(ps.list) > n {
		readable(path, dir, ps, "credentials_file", e.CredentialsFile)
		return nil
	}
	return &fcm.Config{CredentialsFile: resolve(dir, e.CredentialsFile), ProjectID: e.ProjectID, Endpoint: e.Endpoint}
}

// readable checks the files of a block at path that has problems of its
// own, so its credentials are not loaded: one that cannot be read is one
// more problem to report now. fields are pairs of a field and its value.
func readable(path, dir string, ps *problems, fields ...string) {
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "" {
			continue
		}
		if _, err := readNamed(resolve(dir, fields[i+1])); err != nil {
			ps.at(path+"."+fields[i], "%w", err)
		}
	}
}

// rate reads the max_rate of platform p in the block at path into a.
func rate(path, text string, p payload.Platform, a *appSpec, ps *problems) {
	if text == "" {
		return
	}
	r, err := parseRate(text)
	if err != nil {
		ps.at(path+".max_rate", "%w", err)
		return
	}
	a.maxRate[p], a.maxRateText[p] = r, text
}

// fileThrottle returns an app's limiter policy and pending cap: the
// throttle block at path over the HUSH_THROTTLE_* keys' values.
func fileThrottle(path string, e *throttleEntry, cfg Config, ps *problems) (throttle.Policy, int) {
	env, _ := cfg.policy() // checked by Validate
	if e == nil {
		return env, cfg.ThrottleMaxPending
	}
	n := len(ps.list)
	p, maxPending := env, cfg.ThrottleMaxPending
	if e.Limits != nil {
		ls, err := throttle.ParseLimits(*e.Limits)
		if err != nil {
			ps.at(path+".limits", "%w", err)
		}
		p.Limits = ls
	}
	if e.MinGap != nil {
		_, gap, err := throttle.ParseRuleSet("@" + *e.MinGap)
		if b := bounds()["ThrottleMinGap"]; err != nil {
			ps.at(path+".min_gap", "%w", err)
		} else if !b.contains(int64(gap)) {
			ps.at(path+".min_gap", "want %s (as HUSH_THROTTLE_MIN_GAP), got %s", b.text(durationType), *e.MinGap)
		}
		p.MinGap = gap
	}
	if e.QuietHours != nil {
		q, err := throttle.ParseQuiet(*e.QuietHours)
		if err != nil {
			ps.at(path+".quiet_hours", "%w", err)
		}
		p.Quiet = q
	}
	if e.Categories != nil {
		p.Categories = map[string]throttle.Category{}
		for _, name := range slices.Sorted(maps.Keys(e.Categories)) {
			at := path + ".categories." + name
			spec := e.Categories[name]
			if !throttle.ValidCategory(name) {
				ps.at(at, "the name must be 1 to %d of a-z, 0-9, _ and -", throttle.MaxCategoryLen)
				continue
			}
			if strings.Contains(spec, ";") {
				ps.at(at, "%q: one category per name: want RULES [global=off] [quiet=HH:MM-HH:MM|off] [required=on], e.g. 2/1d,1/4h@1h quiet=21:00-09:00", spec)
				continue
			}
			cats, err := throttle.ParseCategories(name + "=" + spec)
			if err != nil {
				ps.at(at, "%w", err)
				continue
			}
			p.Categories[name] = cats[name]
		}
		if len(p.Categories) == 0 {
			p.Categories = nil
		}
	}
	if e.MaxPending != nil {
		maxPending = *e.MaxPending
		if b := bounds()["ThrottleMaxPending"]; !b.contains(int64(maxPending)) {
			ps.at(path+".max_pending", "want %s (as HUSH_THROTTLE_MAX_PENDING), got %d", b.text(nil), maxPending)
		}
	}
	if len(ps.list) == n {
		// The rules as a whole: at least one limit or a gap, and each
		// category's against them, as the limiter will check them.
		if _, err := throttle.NewMemory(p, throttle.Options{MaxPending: limiterMaxPending(maxPending)}); err != nil {
			ps.at(path, "%w", err)
		}
	}
	return p, maxPending
}

// checkGroups checks the throttle groups: the apps of one share one budget
// per user, so they must have the same rules, and no app outside it may
// have the group's name (their keys would be one).
func checkGroups(specs []appSpec, ps *problems) {
	first := map[string]appSpec{}
	for _, a := range specs {
		if a.group == "" || a.scope != a.group {
			continue
		}
		for _, b := range specs {
			if b.name == a.group && b.group != a.group {
				ps.at(a.label+".throttle_group", "%q is the name of %s, which is not in the group: name the group otherwise (or put %s in it)", a.group, b.label, b.name)
			}
		}
		f, seen := first[a.group]
		if !seen {
			first[a.group] = a
			continue
		}
		if got, want := rulesText(a.policy, a.maxPending), rulesText(f.policy, f.maxPending); got != want {
			ps.at(a.label+".throttle_group", "%q shares one budget per user, so its apps need the same throttle settings: %s has %s, %s has %s",
				a.group, f.label, want, a.label, got)
		}
	}
}

// rulesText writes a limiter's settings in the notation of the
// HUSH_THROTTLE_* keys: "10/1m,100/24h min-gap 3s; quiet 22:00-08:00;
// categories marketing=2/1d quiet=21:00-09:00, social=10/1h@30s; max
// pending 100".
func rulesText(p throttle.Policy, maxPending int) string {
	parts := []string{p.String()}
	if !p.Quiet.Off() {
		parts = append(parts, "quiet "+p.Quiet.String())
	}
	if len(p.Categories) > 0 {
		var cats []string
		for _, name := range slices.Sorted(maps.Keys(p.Categories)) {
			cats = append(cats, name+"="+p.Categories[name].String())
		}
		parts = append(parts, "categories "+strings.Join(cats, ", "))
	}
	pending := "no pending cap"
	if maxPending > 0 {
		pending = fmt.Sprintf("max pending %d", maxPending)
	}
	return strings.Join(append(parts, pending), "; ")
}

// resolve is path relative to dir, the apps file's directory, unless it
// is absolute or empty.
func resolve(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// digestFile is the digest of a file's content, or of why it cannot be
// read.
func digestFile(path string) string {
	return digest(readNamed(path))
}

// maxNamedFile bounds a file the configuration names: an apps file of
// many apps, a key, a certificate or a CA bundle (the system's is a few
// hundred KiB) each fits it many times over.
const maxNamedFile = 4 << 20

// readNamed reads a file the configuration names. Only a regular file (or
// a link to one, as in a Kubernetes Secret volume) of at most
// maxNamedFile bytes is read: a device such as /dev/zero never ends, a
// named pipe may never answer, and a huge file would fill the memory. The
// file is opened without blocking (opening a named pipe waits for a
// writer otherwise) and checked by what is open, not by its name again.
func readNamed(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case fi.IsDir():
		return nil, fmt.Errorf("%s: is a directory", path)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: not a regular file", path)
	case fi.Size() > maxNamedFile:
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a configuration file may have", path, fi.Size(), maxNamedFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxNamedFile+1))
	switch {
	case err != nil:
		return nil, err
	case len(data) > maxNamedFile:
		return nil, fmt.Errorf("%s: more than the %d bytes a configuration file may have", path, maxNamedFile)
	}
	return data, nil
}

func digest(data []byte, err error) string {
	if err != nil {
		return "unreadable: " + err.Error()
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
