package setup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/dryrun"
	"github.com/hushpush/hush/providers/fcm"
	"github.com/hushpush/hush/providers/webpush"
	"github.com/hushpush/hush/worker"
)

// senderSpec is how setup builds the sender of one platform.
type senderSpec struct {
	platform payload.Platform
	// name is the provider's name in log lines and errors: "APNs".
	name string
	// block is the provider's block of an app in the apps file: "apns".
	block      string
	configured func(appSpec) bool
	// envKeys are the keys that configure the provider, named when none
	// is set.
	envKeys []string
	// build returns app a's sender, warmed up when warm, and its close
	// function (nil when there is nothing to close).
	build func(ctx context.Context, a appSpec, warm bool, log *slog.Logger) (worker.Sender, func(), error)
	// field is the field of the provider's configuration that err, from
	// build, is about, and why ("" when err is about no single field).
	field func(err error) (string, error)
	// files are the files app a's sender reads, each with its field
	// (the apps file's name, and the HUSH_<BLOCK>_<FIELD> key's); a
	// path may be empty.
	files func(a appSpec) []namedFile
}

// namedFile is a file a provider's configuration names in field.
type namedFile struct{ field, path string }

// unreadable reads, with readNamed, every file sender s of app a would
// read, and returns the first one's field that cannot be read, and why:
// so a device, a named pipe or a huge file is refused before the
// provider's SDK reads it whole.
func (s senderSpec) unreadable(a appSpec) (string, error) {
	for _, f := range s.files(a) {
		if f.path == "" {
			continue
		}
		if _, err := readNamed(f.path); err != nil {
			return f.field, err
		}
	}
	return "", nil
}

// envKey is the HUSH_* key of field in the block of s: HUSH_APNS_KEY_FILE.
func (s senderSpec) envKey(field string) string {
	return "HUSH_" + strings.ToUpper(s.block+"_"+field)
}

// senderTable lists every platform's sender, in the order they are built.
//
// To add a provider: write its sender package under providers/, add its
// platform to payload's platforms table, its block to the apps file
// (appEntry), then add an entry here saying when it is configured, by
// which keys, and how to build it (with its warm-up).
var senderTable = []senderSpec{
	{
		platform:   payload.APNs,
		name:       "APNs",
		block:      "apns",
		configured: func(a appSpec) bool { return a.apns != nil },
		envKeys:    []string{"HUSH_APNS_KEY_FILE", "HUSH_APNS_CERT_FILE"},
		build:      buildAPNs,
		field:      fieldOf[*apns.FieldError](func(e *apns.FieldError) (string, error) { return e.Field, e.Err }),
		files: func(a appSpec) []namedFile {
			return []namedFile{{"key_file", a.apns.KeyFile}, {"cert_file", a.apns.CertFile}, {"ca_file", a.apns.CAFile}}
		},
	},
	{
		platform:   payload.FCM,
		name:       "FCM",
		block:      "fcm",
		configured: func(a appSpec) bool { return a.fcm != nil },
		envKeys:    []string{"HUSH_FCM_CREDENTIALS_FILE"},
		build:      buildFCM,
		field:      fieldOf[*fcm.FieldError](func(e *fcm.FieldError) (string, error) { return e.Field, e.Err }),
		files:      func(a appSpec) []namedFile { return []namedFile{{"credentials_file", a.fcm.CredentialsFile}} },
	},
	{
		platform:   payload.WebPush,
		name:       "Web Push",
		block:      "webpush",
		configured: func(a appSpec) bool { return a.webpush != nil },
		envKeys:    []string{"HUSH_WEBPUSH_PRIVATE_KEY"},
		build:      buildWebPush,
		field:      fieldOf[*webpush.FieldError](func(e *webpush.FieldError) (string, error) { return e.Field, e.Err }),
		files:      func(a appSpec) []namedFile { return []namedFile{{"ca_file", a.webpush.CAFile}} },
	},
}

// fieldOf reads a provider's field error E with parts.
func fieldOf[E error](parts func(E) (string, error)) func(error) (string, error) {
	return func(err error) (string, error) {
		if e, ok := errors.AsType[E](err); ok {
			return parts(e)
		}
		return "", err
	}
}

// newSenders builds app a's senders: each provider's when a has its
// credentials, dry-run ones when dryRun (see dryRunSenders). An app of the apps
// file has its credentials loaded even in dry-run, so a bad one is found
// before it is needed. A platform without credentials gets no sender: its
// devices fail permanently with a clear reason rather than being silently
// "sent" nowhere (for the HUSH_* keys' app, serve warns).
//
// A file app's bad credential is a problem added to ps (the senders are
// then nil); the error is the HUSH_* keys' app's, naming the keys.
func newSenders(ctx context.Context, a appSpec, dryRun, warm bool, log *slog.Logger, ps *problems) (map[payload.Platform]worker.Sender, func(), error) {
	if dryRun && a.label == "" {
		return dryRunSenders(a, log), func() {}, nil
	}
	out := map[payload.Platform]worker.Sender{}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	failed := false
	for _, s := range senderTable {
		if !s.configured(a) {
			if a.label == "" && !dryRun {
				log.Warn(fmt.Sprintf("no %s credentials: jobs with %s devices are refused at submission (set %s)",
					s.name, s.platform, strings.Join(s.envKeys, " or ")))
			}
			continue
		}
		if field, err := s.unreadable(a); err != nil {
			if a.label == "" {
				closeAll()
				return nil, nil, fmt.Errorf("%s sender: %w", s.name, &KeyError{Key: s.envKey(field), Err: err})
			}
			path := a.label + "." + s.block + "." + field
			ps.add(path, ps.lines[path], err)
			failed = true
			continue
		}
		sender, closeFn, err := s.build(ctx, a, warm && !dryRun, log)
		if err != nil {
			if a.label == "" {
				closeAll()
				return nil, nil, fmt.Errorf("%s sender: %w", s.name, err)
			}
			path := a.label + "." + s.block
			if field, why := s.field(err); field != "" {
				ps.add(path+"."+field, ps.lines[path+"."+field], why)
			} else {
				ps.add(path, ps.lines[path], err)
			}
			failed = true
			continue
		}
		out[s.platform] = sender
		if closeFn != nil {
			closers = append(closers, closeFn)
		}
	}
	if failed || dryRun {
		closeAll()
	}
	switch {
	case failed:
		return nil, func() {}, nil
	case dryRun:
		return dryRunSenders(a, log), func() {}, nil
	}
	return out, closeAll, nil
}

// dryRunSenders is app a's dry-run senders: one for each platform a has
// credentials for, so that a dry-run submission is refused exactly where
// production refuses it. An app with no credentials at all (the HUSH_*
// keys' app of a quickstart; an apps-file app always has some) gets one
// for every platform.
func dryRunSenders(a appSpec, log *slog.Logger) map[payload.Platform]worker.Sender {
	d := dryrun.New(log)
	out := make(map[payload.Platform]worker.Sender, len(senderTable))
	for _, s := range senderTable {
		if s.configured(a) {
			out[s.platform] = d
		}
	}
	if len(out) == 0 {
		for _, s := range senderTable {
			out[s.platform] = d
		}
	}
	if _, ok := out[payload.WebPush]; ok {
		if p, err := webpush.NewEgressPolicy(a.egress); err == nil { // Validate has checked it
			out[payload.WebPush] = dryRunWebPush{Sender: d, egress: p}
		}
	}
	return out
}

// dryRunWebPush is the dry-run sender of Web Push devices: it refuses at
// submit the endpoints the egress policy refuses, as webpush.Sender does.
type dryRunWebPush struct {
	worker.Sender
	egress *webpush.EgressPolicy
}

func (d dryRunWebPush) CheckToken(token string) error { return d.egress.CheckToken(token) }

// warnDryRun says loudly that nothing is sent, and why.
func warnDryRun(cfg Config, log *slog.Logger) {
	why := "HUSH_DRY_RUN is set"
	if !cfg.DryRun {
		why = "no provider credentials are configured (" + allKeys() + ")"
	}
	log.Warn("DRY-RUN: " + why + ": NOTHING IS SENT to " + allNames() + "; pushes are only logged")
}

// anyConfigured reports whether one of specs has provider credentials.
func anyConfigured(specs []appSpec) bool {
	for _, a := range specs {
		for _, s := range senderTable {
			if s.configured(a) {
				return true
			}
		}
	}
	return false
}

// allKeys lists every provider's keys: "HUSH_APNS_KEY_FILE /
// HUSH_APNS_CERT_FILE, HUSH_FCM_CREDENTIALS_FILE".
func allKeys() string {
	keys := make([]string, len(senderTable))
	for i, s := range senderTable {
		keys[i] = strings.Join(s.envKeys, " / ")
	}
	return strings.Join(keys, ", ")
}

// allNames lists every provider's name: "APNs or FCM".
func allNames() string {
	names := make([]string, len(senderTable))
	for i, s := range senderTable {
		names[i] = s.name
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	last := len(names) - 1
	return strings.Join(names[:last], ", ") + " or " + names[last]
}

func buildAPNs(ctx context.Context, a appSpec, warm bool, log *slog.Logger) (worker.Sender, func(), error) {
	s, err := apns.New(*a.apns)
	if err != nil {
		return nil, nil, err
	}
	if !warm {
		return s, s.Close, nil
	}
	// Connect now: the first pushes of a burst would otherwise wait on
	// the TLS handshake and reach APNs late for their slots.
	warmCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := s.Warm(warmCtx); err != nil {
		log.Warn("APNs not reachable at start; the first sends will connect", "app", a.name, "err", err)
	}
	cancel()
	log.Info("APNs sender ready", "app", a.name, "topic", a.apns.Topic, "production", a.apns.Production, "endpoint", a.apns.Endpoint)
	return s, s.Close, nil
}

func buildFCM(ctx context.Context, a appSpec, warm bool, log *slog.Logger) (worker.Sender, func(), error) {
	s, err := fcm.New(ctx, *a.fcm)
	if err != nil {
		return nil, nil, err
	}
	if !warm {
		return s, nil, nil
	}
	// Fetch the access token now: the first pushes of a burst would
	// otherwise all wait on it and reach FCM late for their slots.
	if r := s.Warm(); r.Err != nil {
		log.Warn("FCM access token not fetched at start; the first sends will try again", "app", a.name, "reason", r.Reason, "credential", r.Credential, "err", r.Err)
	}
	log.Info("FCM sender ready", "app", a.name, "project", s.Project(), "endpoint", a.fcm.Endpoint)
	return s, nil, nil
}

func buildWebPush(_ context.Context, a appSpec, warm bool, log *slog.Logger) (worker.Sender, func(), error) {
	s, err := webpush.New(*a.webpush)
	if err != nil {
		return nil, nil, err
	}
	if warm {
		// Nothing to warm: each push service is its own origin, connected
		// on its first push.
		log.Info("Web Push sender ready", "app", a.name, "public_key", s.PublicKey(), "subject", a.webpush.Subject)
	}
	return s, s.Close, nil
}
