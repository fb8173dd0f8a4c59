package setup

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/dryrun"
	"github.com/hushpush/hush/providers/fcm"
	"github.com/hushpush/hush/worker"
)

// senderSpec is how setup builds the sender of one platform.
type senderSpec struct {
	platform payload.Platform
	// name is the provider's name in log lines and errors: "APNs".
	name       string
	configured func(Config) bool
	// envKeys are the keys that configure the provider, named when none
	// is set.
	envKeys []string
	// build returns the sender, warmed up, and its close function (nil when
	// there is nothing to close).
	build func(ctx context.Context, cfg Config, log *slog.Logger) (worker.Sender, func(), error)
}

// senderTable lists every platform's sender, in the order they are built.
//
// To add a provider: write its sender package under providers/, add its
// platform to payload's platforms table, then add an entry here saying when
// it is configured, by which keys, and how to build it (with its warm-up).
var senderTable = []senderSpec{
	{
		platform:   payload.APNs,
		name:       "APNs",
		configured: Config.apnsConfigured,
		envKeys:    []string{"HUSH_APNS_KEY_FILE", "HUSH_APNS_CERT_FILE"},
		build:      buildAPNs,
	},
	{
		platform:   payload.FCM,
		name:       "FCM",
		configured: Config.fcmConfigured,
		envKeys:    []string{"HUSH_FCM_CREDENTIALS_FILE"},
		build:      buildFCM,
	},
}

// newSenders builds the senders cfg asks for: each provider's when its
// credentials are set, dry-run for every platform when HUSH_DRY_RUN is set
// or no credentials are set at all. A platform without credentials while
// another has them gets no sender: its devices fail permanently with a clear
// reason rather than being silently "sent" nowhere.
func newSenders(ctx context.Context, cfg Config, log *slog.Logger) (map[payload.Platform]worker.Sender, func(), error) {
	if cfg.DryRun || !anyConfigured(cfg) {
		why := "HUSH_DRY_RUN is set"
		if !cfg.DryRun {
			why = "no provider credentials are configured (" + allKeys() + ")"
		}
		log.Warn("DRY-RUN: " + why + ": NOTHING IS SENT to " + allNames() + "; pushes are only logged")
		d := dryrun.New(log)
		out := make(map[payload.Platform]worker.Sender, len(senderTable))
		for _, s := range senderTable {
			out[s.platform] = d
		}
		return out, func() {}, nil
	}
	out := map[payload.Platform]worker.Sender{}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	for _, s := range senderTable {
		if !s.configured(cfg) {
			log.Warn(fmt.Sprintf("no %s credentials: deliveries to %s devices will fail (set %s)",
				s.name, s.platform, strings.Join(s.envKeys, " or ")))
			continue
		}
		sender, closeFn, err := s.build(ctx, cfg, log)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s sender: %w", s.name, err)
		}
		out[s.platform] = sender
		if closeFn != nil {
			closers = append(closers, closeFn)
		}
	}
	return out, closeAll, nil
}

func anyConfigured(cfg Config) bool {
	for _, s := range senderTable {
		if s.configured(cfg) {
			return true
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

func buildAPNs(ctx context.Context, cfg Config, log *slog.Logger) (worker.Sender, func(), error) {
	s, err := apns.New(apns.Config{
		KeyFile: cfg.APNSKeyFile, KeyID: cfg.APNSKeyID, TeamID: cfg.APNSTeamID,
		CertFile: cfg.APNSCertFile, CertPassword: cfg.APNSCertPassword,
		Topic: cfg.APNSTopic, Production: cfg.APNSProduction,
		Endpoint: cfg.APNSEndpoint, CAFile: cfg.APNSCaFile,
	})
	if err != nil {
		return nil, nil, err
	}
	// Connect now: the first pushes of a burst would otherwise wait on
	// the TLS handshake and reach APNs late for their slots.
	warmCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := s.Warm(warmCtx); err != nil {
		log.Warn("APNs not reachable at start; the first sends will connect", "err", err)
	}
	cancel()
	log.Info("APNs sender ready", "topic", cfg.APNSTopic, "production", cfg.APNSProduction, "endpoint", cfg.APNSEndpoint)
	return s, s.Close, nil
}

func buildFCM(ctx context.Context, cfg Config, log *slog.Logger) (worker.Sender, func(), error) {
	s, err := fcm.New(ctx, fcm.Config{
		CredentialsFile: cfg.FCMCredentialsFile, ProjectID: cfg.FCMProjectID, Endpoint: cfg.FCMEndpoint,
	})
	if err != nil {
		return nil, nil, err
	}
	// Fetch the access token now: the first pushes of a burst would
	// otherwise all wait on it and reach FCM late for their slots.
	if r := s.Warm(); r.Err != nil {
		log.Warn("FCM access token not fetched at start; the first sends will try again", "reason", r.Reason, "credential", r.Credential, "err", r.Err)
	}
	log.Info("FCM sender ready", "project", cfg.FCMProjectID, "endpoint", cfg.FCMEndpoint)
	return s, nil, nil
}
