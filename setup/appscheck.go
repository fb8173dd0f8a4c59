package setup

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/webpush"
)

// AppInfo describes one app of a checked apps file, without its secrets.
type AppInfo struct {
	Name string
	APNs *APNsInfo // nil: no APNs
	FCM  *FCMInfo  // nil: no FCM
	// WebPush is nil when the app has no Web Push.
	WebPush *WebPushInfo
	// Rules are its limiter's settings in the notation of the
	// HUSH_THROTTLE_* keys ("10/1m,100/24h min-gap 3s; quiet 22:00-08:00;
	// max pending 100").
	Rules string
	// Group is its throttle_group ("" for none); LimiterKey is a user's
	// limiter key, which the apps of a group share.
	Group      string
	LimiterKey string
}

// APNsInfo is an app's APNs configuration.
type APNsInfo struct {
	Topic      string
	Production bool
	// Auth is "token key ABC123DEFG, team TEAM123456" or "certificate
	// /etc/hush/keys/courier.p12".
	Auth     string
	Endpoint string // "" for Apple's
	// MaxRate is the max_rate as written ("" for none), PerSecond the
	// sends per second it allows.
	MaxRate   string
	PerSecond float64
}

// FCMInfo is an app's FCM configuration.
type FCMInfo struct {
	Project   string
	Endpoint  string // "" for Google's
	MaxRate   string
	PerSecond float64
}

// WebPushInfo is an app's Web Push configuration, without its private
// key.
type WebPushInfo struct {
	// PublicKey is the VAPID public key, the applicationServerKey web apps
	// subscribe with.
	PublicKey string
	Subject   string
	MaxRate   string
	PerSecond float64
}

// CheckAppsFile checks the apps file at path as hush serve would read it
// with cfg, offline: its syntax, every field, and that its credential
// files can be read and parse (a .p8 key signs, a .p12 opens with its
// password, a service-account JSON parses); nothing is sent and no
// connection is made. cfg's HUSH_THROTTLE_* keys fill the throttle fields
// an app leaves out, and its HUSH_APNS_* and HUSH_FCM_* keys say whether
// the name default is taken.
//
// It returns the file's apps, or an *AppsFileError listing every problem,
// or the error reading the file.
func CheckAppsFile(ctx context.Context, cfg Config, path string) ([]AppInfo, error) {
	cfg.AppsFile, cfg.DryRun = path, false
	g, err := buildApps(ctx, cfg, nil, false, false, slog.New(slog.DiscardHandler))
	if err != nil {
		if ke, ok := errors.AsType[*KeyError](err); ok && ke.Key == appsFileKey {
			return nil, ke.Err
		}
		return nil, err
	}
	defer g.close()
	out := make([]AppInfo, 0, len(g.specs))
	for _, a := range g.specs {
		info := AppInfo{Name: a.name, Rules: rulesText(a.policy, a.maxPending), Group: a.group, LimiterKey: limiterKey(a.scope)}
		if c := a.apns; c != nil {
			info.APNs = &APNsInfo{Topic: c.Topic, Production: c.Production, Endpoint: c.Endpoint,
				MaxRate: a.maxRateText[payload.APNs], PerSecond: a.maxRate[payload.APNs]}
			if c.KeyFile != "" {
				info.APNs.Auth = "token key " + c.KeyID + ", team " + c.TeamID
			} else {
				info.APNs.Auth = "certificate " + c.CertFile
			}
		}
		if c := a.fcm; c != nil {
			info.FCM = &FCMInfo{Project: c.ProjectID, Endpoint: c.Endpoint,
				MaxRate: a.maxRateText[payload.FCM], PerSecond: a.maxRate[payload.FCM]}
			if info.FCM.Project == "" {
				info.FCM.Project = serviceAccountProject(c.CredentialsFile)
			}
		}
		if c := a.webpush; c != nil {
			info.WebPush = &WebPushInfo{PublicKey: c.PublicKey, Subject: c.Subject,
				MaxRate: a.maxRateText[payload.WebPush], PerSecond: a.maxRate[payload.WebPush]}
			if k, err := webpush.ParseVAPIDKey(c.PrivateKey); err == nil {
				info.WebPush.PublicKey = k.PublicKey()
			}
		}
		out = append(out, info)
	}
	return out, nil
}

// serviceAccountProject is the project_id a service-account JSON names
// ("" when it cannot be read: the sender's check has said why).
func serviceAccountProject(file string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	var sa struct {
		ProjectID string `json:"project_id"`
	}
	_ = json.Unmarshal(data, &sa)
	return sa.ProjectID
}
