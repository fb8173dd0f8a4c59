package setup

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/dryrun"
	"github.com/hushpush/hush/providers/fcm"
	"github.com/hushpush/hush/worker"
)

// newSenders builds the senders cfg asks for: APNs and FCM when their
// credentials are set, dry-run for both when HUSH_DRY_RUN is set or no
// credentials are set at all. A platform without credentials while the
// other has them gets no sender: its devices fail permanently with a clear
// reason rather than being silently "sent" nowhere.
func newSenders(ctx context.Context, cfg Config, log *slog.Logger) (map[payload.Platform]worker.Sender, func(), error) {
	closeAll := func() {}
	if cfg.DryRun || (!cfg.apnsConfigured() && !cfg.fcmConfigured()) {
		why := "HUSH_DRY_RUN is set"
		if !cfg.DryRun {
			why = "no provider credentials are configured (HUSH_APNS_KEY_FILE / HUSH_APNS_CERT_FILE, HUSH_FCM_CREDENTIALS_FILE)"
		}
		log.Warn("DRY-RUN: " + why + ": NOTHING IS SENT to APNs or FCM; pushes are only logged")
		d := dryrun.New(log)
		return map[payload.Platform]worker.Sender{payload.APNs: d, payload.FCM: d}, closeAll, nil
	}
	senders := map[payload.Platform]worker.Sender{}
	if cfg.apnsConfigured() {
		s, err := apns.New(apns.Config{
			KeyFile: cfg.APNSKeyFile, KeyID: cfg.APNSKeyID, TeamID: cfg.APNSTeamID,
			CertFile: cfg.APNSCertFile, CertPassword: cfg.APNSCertPassword,
			Topic: cfg.APNSTopic, Production: cfg.APNSProduction,
			Endpoint: cfg.APNSEndpoint, CAFile: cfg.APNSCaFile,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("APNs sender: %w", err)
		}
		// Connect now: the first pushes of a burst would otherwise wait on
		// the TLS handshake and reach APNs late for their slots.
		warmCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := s.Warm(warmCtx); err != nil {
			log.Warn("APNs not reachable at start; the first sends will connect", "err", err)
		}
		cancel()
		senders[payload.APNs] = s
		closeAll = s.Close
		log.Info("APNs sender ready", "topic", cfg.APNSTopic, "production", cfg.APNSProduction, "endpoint", cfg.APNSEndpoint)
	} else {
		log.Warn("no APNs credentials: deliveries to apns devices will fail (set HUSH_APNS_KEY_FILE or HUSH_APNS_CERT_FILE)")
	}
	if cfg.fcmConfigured() {
		s, err := fcm.New(ctx, fcm.Config{
			CredentialsFile: cfg.FCMCredentialsFile, ProjectID: cfg.FCMProjectID, Endpoint: cfg.FCMEndpoint,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("FCM sender: %w", err)
		}
		// Fetch the access token now: the first pushes of a burst would
		// otherwise all wait on it and reach FCM late for their slots.
		if r := s.Warm(); r.Err != nil {
			log.Warn("FCM access token not fetched at start; the first sends will try again", "reason", r.Reason, "credential", r.Credential, "err", r.Err)
		}
		senders[payload.FCM] = s
		log.Info("FCM sender ready", "project", cfg.FCMProjectID, "endpoint", cfg.FCMEndpoint)
	} else {
		log.Warn("no FCM credentials: deliveries to fcm devices will fail (set HUSH_FCM_CREDENTIALS_FILE)")
	}
	return senders, closeAll, nil
}
