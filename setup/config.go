package setup

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/webpush"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/webhook"
	"github.com/hushpush/hush/worker"
)

// Config is hush's configuration, read from HUSH_* environment variables.
// Field names map to keys with split_words (APNSKeyID is HUSH_APNS_KEY_ID).
type Config struct {
	RedisURL          string   `split_words:"true" desc:"redis://, rediss:// or unix:// URL; empty: an embedded in-memory Redis (development only, data lost on exit)"`
	RedisClusterAddrs []string `split_words:"true" desc:"comma list of host:port; when set, Redis Cluster is used (HUSH_REDIS_URL's user, password and TLS still apply)"`

	RedisSentinelAddrs    []string `split_words:"true" desc:"comma list of host:port of Redis Sentinels; when set, the master HUSH_REDIS_SENTINEL_MASTER names is found through them and followed across failovers (HUSH_REDIS_URL's user, password, DB and TLS still apply to the data nodes)"`
	RedisSentinelMaster   string   `split_words:"true" desc:"the master's name in the Sentinels' configuration (sentinel monitor <name> ...); required with HUSH_REDIS_SENTINEL_ADDRS"`
	RedisSentinelPassword string   `split_words:"true" desc:"password of the Sentinels themselves (their requirepass), when they have one"`
	RedisAllowEviction    bool     `split_words:"true" desc:"true: serve on a Redis whose maxmemory-policy is not noeviction (it may drop queued tasks, job records and limiter entries, docs/operations.md#eviction), with /readyz ready and saying so; false: hush serve refuses to start on one, and /readyz is not ready when a node turns out to be one"`

	Concurrency     int            `desc:"concurrent deliveries per process"`
	HeldConcurrency int            `split_words:"true" desc:"held tasks (a fan-out chunk's deferred pushes, or a batch's deferred single-recipient jobs, woken together about a second before their slots) that may wait for their slots at once per process, in slots of their own beside HUSH_CONCURRENCY's; a waiting held task holds no send permit; unset or 0: 10 x HUSH_CONCURRENCY"`
	Queues          map[string]int `desc:"queues to serve and their weights; queues are named after priorities (critical, high, normal)"`
	DeliveryShards  int            `split_words:"true" desc:"spread each priority's job, chunk and delivery tasks over this many queues (<priority>.0 ...) by job id and user hash, so that on Redis Cluster one queue's node is not the ceiling; 1: no shard queues"`
	MaxRetry        int            `split_words:"true" desc:"retries for transient provider failures before a delivery is archived"`

	ThrottleLimits     string        `split_words:"true" desc:"per-user rolling-window caps, N/window comma list"`
	ThrottleMinGap     time.Duration `split_words:"true" desc:"minimum gap between two pushes to the same user"`
	ThrottleCategories string        `split_words:"true" desc:"categories a job may name, each with rules of its own (docs/limiter.md): NAME=RULES [global=off] [quiet=HH:MM-HH:MM or quiet=off] [required=on] items separated by semicolons; RULES are caps and an optional @gap, like 2/1d,1/4h@1h, or none; global=off exempts the category from the global rules; required=on keeps users from opting out of it; empty: none. Example: marketing=2/1d,1/4h@1h quiet=21:00-09:00; social=10/1h@30s; transactional=none global=off"`
	QuietHours         string        `split_words:"true" desc:"quiet hours HH:MM[:SS]-HH:MM[:SS] in each user's own wall-clock time, e.g. 22:00-08:00: pushes falling inside are held until they end, not dropped (unless they expire); a category's quiet= overrides them, and a category named transactional ignores them unless it says quiet=; empty or off: none"`
	DefaultTimezone    string        `split_words:"true" desc:"IANA time zone, e.g. Europe/Berlin, of the quiet hours of recipients whose job gives no timezone (empty: UTC); not Local, the machine's own zone, which differs from one server to the next"`
	ThrottleBypass     []string      `split_words:"true" desc:"priorities that skip the limiter (comma list; empty: none)"`
	ThrottleMaxPending int           `split_words:"true" desc:"most held (booked, not yet sent) pushes one user may have; a delivery beyond it is dropped with reason throttle_full (0: no cap; a decision for a user holding P bookings costs about 1 to 2 µs of Redis CPU more per booking it holds)"`
	MaxThrottled       time.Duration `split_words:"true" desc:"most time a delivery may spend throttled by a provider (429 without end) before it is archived; its expiry ends it sooner (0: only its expiry)"`

	AppsFile string `split_words:"true" desc:"YAML or JSON file listing the apps hush delivers for, each with its own APNs, FCM and Web Push credentials, throttle rules and send rates (docs/configuration.md#apps; hush apps check FILE checks one); reloaded within a minute when it or a credential file changes, and on SIGHUP. The HUSH_APNS_*, HUSH_FCM_* and HUSH_WEBPUSH_* keys, when they set credentials, define one more app, default; empty: default is the only app"`

	APNSKeyFile      string `split_words:"true" desc:"APNs token auth: .p8 key file"`
	APNSKeyID        string `split_words:"true" desc:"APNs token auth: key id"`
	APNSTeamID       string `split_words:"true" desc:"APNs token auth: team id"`
	APNSTopic        string `split_words:"true" desc:"APNs topic (the app's bundle id); required with APNs credentials"`
	APNSCertFile     string `split_words:"true" desc:"APNs certificate auth (.p12), alternative to the key"`
	APNSCertPassword string `split_words:"true" desc:"password of the .p12 certificate"`
	APNSProduction   bool   `split_words:"true" desc:"false: APNs sandbox host"`
	APNSEndpoint     string `split_words:"true" desc:"send APNs requests to another host (a proxy, a test server)"`
	APNSCaFile       string `split_words:"true" desc:"PEM CA bundle trusted for HUSH_APNS_ENDPOINT"`

	FCMCredentialsFile string `split_words:"true" desc:"FCM service-account JSON (its token_uri is honoured)"`
	FCMProjectID       string `split_words:"true" desc:"FCM project id; default: the service account's"`
	FCMEndpoint        string `split_words:"true" desc:"send FCM requests to another endpoint (a proxy, a test server)"`

	WebpushPrivateKey      string   `split_words:"true" desc:"Web Push VAPID private key, base64url of its 32-byte scalar (hush webpush keys makes a pair); keep it secret"`
	WebpushPublicKey       string   `split_words:"true" desc:"optional: the VAPID public key web apps subscribe with, checked against the private key"`
	WebpushSubject         string   `split_words:"true" desc:"contact a push service can reach you at, mailto: or https: (the VAPID JWT's sub); required with HUSH_WEBPUSH_PRIVATE_KEY"`
	WebpushCaFile          string   `split_words:"true" desc:"PEM CA bundle trusted for push services besides the system's (a private push service, a test server)"`
	WebpushOrigins         []string `split_words:"true" desc:"push-service hosts a Web Push subscription's endpoint may name (comma list): host (port 443), host:port, *.domain (any host under it), or public for any host whose addresses are public unicast (UnifiedPush distributors); default: the browser vendors' push services"`
	WebpushPrivateNetworks []string `split_words:"true" desc:"comma list of CIDR prefixes a Web Push endpoint may resolve to although not public unicast, e.g. 127.0.0.0/8 for a local test server (its host must still be allowed by HUSH_WEBPUSH_ORIGINS); empty: none"`

	DryRun bool `split_words:"true" desc:"log what would be sent; no provider is called"`

	HTTPAddr      string `split_words:"true" desc:"API, health and metrics listener"`
	APIToken      string `split_words:"true" desc:"when set, the API requires Authorization: Bearer <token> (the scheme in any case), and this token acts for every app; visible ASCII only: a newline or space, such as the one echo leaves, is refused at start"`
	APITokens     string `split_words:"true" desc:"tokens that act for some apps only, space separated, each APP[,APP...]:TOKEN (courier:tok1 shop,shop-lite:tok2); each app must be configured; when set, the API requires a token; an apps file's api_tokens add more"`
	MaxBodyBytes  int64  `split_words:"true" desc:"largest accepted POST /v1/notifications (or :batch) body in bytes"`
	WebhookURL    string `split_words:"true" desc:"optional: events are also POSTed here as JSON, signed by the Standard Webhooks specification (needs HUSH_WEBHOOK_SECRET)"`
	WebhookSecret string `split_words:"true" desc:"the whsec_ secrets that sign each webhook POST, comma separated (during a rotation, the old and the new: each adds a signature); hush webhook secret makes one"`
	WebhookTypes  string `split_words:"true" desc:"optional: the event types POSTed to HUSH_WEBHOOK_URL, comma separated (delivered, failed, token_invalid, dropped); empty: every type (the hush:events stream and GET /v1/events hold every type whatever it says)"`
	EventsMaxlen  int64  `split_words:"true" desc:"approximate cap of the hush:events stream"`

	AppWait         time.Duration `split_words:"true" desc:"how long a delivery waits for its app, or the app's sender for its platform, when the process running it lacks them (an apps file rolled out process by process) before it fails"`
	ShutdownTimeout time.Duration `split_words:"true" desc:"how long in-flight deliveries may take to finish on shutdown before they are handed back to the queue"`
	JobRetention    time.Duration `split_words:"true" desc:"how long a finished job's id answers duplicates and its status stays readable (up to a quarter longer); a finished job then keeps about 100 bytes in Redis, its other records are deleted when it finishes. Every process must use the same: a change forgets the finished jobs kept until then"`

	LogLevel  string `split_words:"true" desc:"debug, info, warn or error"`
	LogFormat string `split_words:"true" desc:"text or json"`
}

const envPrefix = "hush"

// HeldSlots is HUSH_HELD_CONCURRENCY with its default applied.
func (c Config) HeldSlots() int {
	if c.HeldConcurrency > 0 {
		return c.HeldConcurrency
	}
	return worker.DefaultHeldConcurrency(c.Concurrency)
}

// LoadConfig reads the configuration from the environment and validates it.
// Errors name the offending key.
func LoadConfig() (Config, error) {
	if err := checkEnv(os.LookupEnv); err != nil {
		return Config{}, err
	}
	c := DefaultConfig() // a key the environment does not set keeps its default
	if err := envconfig.Process(envPrefix, &c); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// KeyError is a configuration value that cannot be used.
type KeyError struct {
	Key string // e.g. HUSH_THROTTLE_LIMITS
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

func keyErr(key string, format string, args ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, args...)}
}

var knownPriorities = map[string]payload.Priority{
	string(payload.PriorityCritical): payload.PriorityCritical,
	string(payload.PriorityHigh):     payload.PriorityHigh,
	string(payload.PriorityNormal):   payload.PriorityNormal,
}

// Validate checks every value; the error joins one *KeyError per bad key.
func (c Config) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.RedisURL != "" {
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			add(keyErr("HUSH_REDIS_URL", "want redis://[user:password@]host:port[/db], rediss://... (TLS) or unix:///path, got %q (%v)", c.RedisURL, err))
		}
	}
	for _, a := range c.RedisClusterAddrs {
		if strings.TrimSpace(a) == "" || !strings.Contains(a, ":") {
			add(keyErr("HUSH_REDIS_CLUSTER_ADDRS", "%q is not host:port", a))
		}
	}
	add(c.validateSentinel())
	add(c.checkBounds())
	if len(c.Queues) == 0 {
		add(keyErr("HUSH_QUEUES", "no queue listed"))
	}
	weight := bounds()["Queues"]
	for _, name := range slices.Sorted(maps.Keys(c.Queues)) {
		if _, ok := knownPriorities[name]; !ok {
			add(keyErr("HUSH_QUEUES", "unknown queue %q (queues are the priorities critical, high, normal)", name))
		}
		if w := c.Queues[name]; !weight.contains(int64(w)) {
			add(keyErr("HUSH_QUEUES", "queue %q: want a weight of %s, got %d", name, weight.text(nil), w))
		}
	}
	if bounds()["ThrottleMinGap"].contains(int64(c.ThrottleMinGap)) {
		// A gap out of bounds is reported by checkBounds alone.
		add(errOf(c.globalRules()))
	}
	add(errOf(c.categories()))
	add(errOf(c.quietHours()))
	add(errOf(c.defaultLocation()))
	for _, p := range c.ThrottleBypass {
		if _, ok := knownPriorities[strings.TrimSpace(p)]; !ok && strings.TrimSpace(p) != "" {
			add(keyErr("HUSH_THROTTLE_BYPASS", "unknown priority %q (critical, high, normal)", p))
		}
	}
	add(c.validateAPNs())
	add(c.validateFCM())
	add(c.validateWebpush())
	if c.HTTPAddr == "" {
		add(keyErr("HUSH_HTTP_ADDR", "must not be empty"))
	}
	add(checkAPIToken(c.APIToken))
	add(errOf(c.apiTokens()))
	if c.WebhookURL != "" {
		u, err := url.Parse(c.WebhookURL)
		if err != nil {
			add(&KeyError{Key: "HUSH_WEBHOOK_URL", Err: err})
		} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(keyErr("HUSH_WEBHOOK_URL", "want an http:// or https:// URL, got %q", c.WebhookURL))
		}
	}
	add(errOf(c.webhookSecrets()))
	add(errOf(c.webhookTypes()))
	if _, err := parseLevel(c.LogLevel); err != nil {
		add(&KeyError{Key: "HUSH_LOG_LEVEL", Err: err})
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		add(keyErr("HUSH_LOG_FORMAT", "want text or json, got %q", c.LogFormat))
	}
	return errors.Join(errs...)
}

// checkBounds refuses every int and duration key whose value is outside
// its bounds; the error joins one *KeyError per key.
func (c Config) checkBounds() error {
	var errs []error
	v, t := reflect.ValueOf(c), reflect.TypeFor[Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		b, ok := bounds()[f.Name]
		if !ok || (f.Type.Kind() != reflect.Int && f.Type.Kind() != reflect.Int64) {
			continue
		}
		if n := v.Field(i).Int(); !b.contains(n) {
			got := strconv.FormatInt(n, 10)
			if f.Type == durationType {
				got = shortDuration(time.Duration(n))
			}
			errs = append(errs, keyErr(keyOf(f), "want %s, got %s", b.text(f.Type), got))
		}
	}
	return errors.Join(errs...)
}

// checkAPIToken refuses a HUSH_API_TOKEN that no client can send as
// "Authorization: Bearer <token>": one with a byte outside visible ASCII,
// most often the newline of a Secret written with echo. Such a token
// would answer every /v1 call 401; it is refused rather than trimmed, so
// that the token the server checks is the one the operator wrote. The
// error never quotes the token.
// webhookSecrets are HUSH_WEBHOOK_SECRET's secrets: required with
// HUSH_WEBHOOK_URL, since an unsigned event would let anyone who reaches the
// backend's URL forge one (a token_invalid that deletes a good token), and
// refused without it, where nothing would use them.
func (c *Config) webhookSecrets() ([]webhook.Secret, error) {
	switch {
	case c.WebhookURL == "" && c.WebhookSecret == "":
		return nil, nil
	case c.WebhookURL == "":
		return nil, keyErr("HUSH_WEBHOOK_SECRET", "only used with HUSH_WEBHOOK_URL")
	case strings.TrimSpace(c.WebhookSecret) == "":
		return nil, keyErr("HUSH_WEBHOOK_SECRET", "required with HUSH_WEBHOOK_URL: every webhook POST is signed (make one with: hush webhook secret)")
	}
	s, err := webhook.ParseSecrets(c.WebhookSecret)
	if err != nil {
		return nil, &KeyError{Key: "HUSH_WEBHOOK_SECRET", Err: err}
	}
	return s, nil
}

// webhookTypes are HUSH_WEBHOOK_TYPES's event types, nil for every type;
// refused without HUSH_WEBHOOK_URL, where nothing would use them.
func (c *Config) webhookTypes() ([]string, error) {
	if strings.TrimSpace(c.WebhookTypes) == "" {
		return nil, nil
	}
	if c.WebhookURL == "" {
		return nil, keyErr("HUSH_WEBHOOK_TYPES", "only used with HUSH_WEBHOOK_URL")
	}
	var ts []string
	for t := range strings.SplitSeq(c.WebhookTypes, ",") {
		t = strings.TrimSpace(t)
		if !worker.IsEventType(t) {
			return nil, keyErr("HUSH_WEBHOOK_TYPES", "want each of %s, got %q", worker.EventTypesText(), t)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

func checkAPIToken(token string) error {
	if err := tokenBytes(token); err != nil {
		return &KeyError{Key: "HUSH_API_TOKEN", Err: err}
	}
	return nil
}

// tokenBytes refuses a token with a byte outside visible ASCII (see
// checkAPIToken), every API token's rule. The error never quotes the
// token.
func tokenBytes(token string) error {
	for i := range len(token) {
		if b := token[i]; b < 0x21 || b > 0x7e {
			return fmt.Errorf("%s at byte %d of %d: a token is visible ASCII only (a value written with echo ends with a newline: use printf or echo -n)", byteName(b), i+1, len(token))
		}
	}
	return nil
}

// byteName names a byte an operator cannot see.
func byteName(b byte) string {
	switch b {
	case '\n':
		return "a newline"
	case '\r':
		return "a carriage return"
	case '\t':
		return "a tab"
	case ' ':
		return "a space"
	}
	return fmt.Sprintf("byte 0x%02x", b)
}

// validateSentinel checks the HUSH_REDIS_SENTINEL_* keys and how they combine
// with HUSH_REDIS_URL and HUSH_REDIS_CLUSTER_ADDRS.
func (c Config) validateSentinel() error {
	var errs []error
	for _, a := range c.RedisSentinelAddrs {
		a = strings.TrimSpace(a)
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			errs = append(errs, keyErr("HUSH_REDIS_SENTINEL_ADDRS", "%q is not host:port", a))
		}
	}
	sentinel := len(c.RedisSentinelAddrs) > 0
	switch {
	case sentinel && len(c.RedisClusterAddrs) > 0:
		errs = append(errs, keyErr("HUSH_REDIS_SENTINEL_ADDRS", "cannot be combined with HUSH_REDIS_CLUSTER_ADDRS: set one of them"))
	case sentinel && strings.TrimSpace(c.RedisSentinelMaster) == "":
		errs = append(errs, keyErr("HUSH_REDIS_SENTINEL_MASTER", "required with HUSH_REDIS_SENTINEL_ADDRS (the name in the Sentinels' \"sentinel monitor <name>\")"))
	case !sentinel && c.RedisSentinelMaster != "":
		errs = append(errs, keyErr("HUSH_REDIS_SENTINEL_ADDRS", "required with HUSH_REDIS_SENTINEL_MASTER (the Sentinels' host:port list)"))
	case !sentinel && c.RedisSentinelPassword != "":
		errs = append(errs, keyErr("HUSH_REDIS_SENTINEL_PASSWORD", "only used with HUSH_REDIS_SENTINEL_ADDRS"))
	}
	if u, err := url.Parse(c.RedisURL); err == nil && c.RedisURL != "" {
		if u.Query().Has("master_name") {
			errs = append(errs, keyErr("HUSH_REDIS_URL", "go-redis's Sentinel URL form (master_name=...) is not read: set HUSH_REDIS_SENTINEL_ADDRS and HUSH_REDIS_SENTINEL_MASTER, and keep HUSH_REDIS_URL for the data nodes' user, password, DB and TLS"))
		} else if sentinel && u.Scheme == "unix" {
			errs = append(errs, keyErr("HUSH_REDIS_URL", "a unix:// URL cannot be used with HUSH_REDIS_SENTINEL_ADDRS (the Sentinels name the master's host:port)"))
		}
	}
	return errors.Join(errs...)
}

func (c Config) validateAPNs() error {
	keyAuth := c.APNSKeyFile != "" || c.APNSKeyID != "" || c.APNSTeamID != ""
	switch {
	case keyAuth && c.APNSCertFile != "":
		return keyErr("HUSH_APNS_CERT_FILE", "set either the token key (HUSH_APNS_KEY_FILE) or a certificate, not both")
	case keyAuth && c.APNSKeyFile == "":
		return keyErr("HUSH_APNS_KEY_FILE", "required with HUSH_APNS_KEY_ID / HUSH_APNS_TEAM_ID")
	case keyAuth && c.APNSKeyID == "":
		return keyErr("HUSH_APNS_KEY_ID", "required with HUSH_APNS_KEY_FILE")
	case keyAuth && c.APNSTeamID == "":
		return keyErr("HUSH_APNS_TEAM_ID", "required with HUSH_APNS_KEY_FILE")
	case (keyAuth || c.APNSCertFile != "") && c.APNSTopic == "":
		return keyErr("HUSH_APNS_TOPIC", "required with APNs credentials (the app's bundle id)")
	case c.APNSCaFile != "" && c.APNSEndpoint == "":
		return keyErr("HUSH_APNS_CA_FILE", "only used with HUSH_APNS_ENDPOINT")
	}
	if c.APNSEndpoint != "" {
		if u, err := url.Parse(c.APNSEndpoint); err != nil || u.Scheme != "https" || u.Host == "" {
			return keyErr("HUSH_APNS_ENDPOINT", "want an https:// URL, got %q", c.APNSEndpoint)
		}
	}
	return nil
}

func (c Config) validateFCM() error {
	if c.FCMEndpoint != "" {
		if u, err := url.Parse(c.FCMEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return keyErr("HUSH_FCM_ENDPOINT", "want an http:// or https:// URL, got %q", c.FCMEndpoint)
		}
	}
	return nil
}

// webpushEgress is the egress policy of every app's Web Push sender.
func (c Config) webpushEgress() (webpush.Egress, error) {
	e := webpush.Egress{Origins: c.WebpushOrigins}
	for _, n := range c.WebpushPrivateNetworks {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		p, err := netip.ParsePrefix(n)
		if err != nil {
			return webpush.Egress{}, keyErr("HUSH_WEBPUSH_PRIVATE_NETWORKS", "%q is not a CIDR prefix like 127.0.0.0/8", n)
		}
		e.PrivateNetworks = append(e.PrivateNetworks, p.Masked())
	}
	return e, nil
}

// apnsConfigured reports whether APNs credentials are set.
func (c Config) apnsConfigured() bool { return c.APNSKeyFile != "" || c.APNSCertFile != "" }

// validateWebpush checks the HUSH_WEBPUSH_* keys that go together and the
// egress policy; the key pair and the subject themselves are checked by
// webpush.New.
func (c Config) validateWebpush() error {
	e, err := c.webpushEgress()
	if err != nil {
		return err
	}
	if _, err := webpush.NewEgressPolicy(e); err != nil {
		return &KeyError{Key: "HUSH_WEBPUSH_ORIGINS", Err: err}
	}
	if c.WebpushPrivateKey != "" {
		if c.WebpushSubject == "" {
			return keyErr("HUSH_WEBPUSH_SUBJECT", "required with HUSH_WEBPUSH_PRIVATE_KEY: a mailto: or https: URI a push service can reach you at")
		}
		return nil
	}
	for _, k := range []struct{ name, value string }{
		{"HUSH_WEBPUSH_PUBLIC_KEY", c.WebpushPublicKey},
		{"HUSH_WEBPUSH_SUBJECT", c.WebpushSubject},
		{"HUSH_WEBPUSH_CA_FILE", c.WebpushCaFile},
	} {
		if k.value != "" {
			return keyErr(k.name, "only used with HUSH_WEBPUSH_PRIVATE_KEY")
		}
	}
	return nil
}

// webpushConfigured reports whether Web Push credentials are set.
func (c Config) webpushConfigured() bool { return c.WebpushPrivateKey != "" }

// fcmConfigured reports whether FCM credentials are set.
func (c Config) fcmConfigured() bool { return c.FCMCredentialsFile != "" }

// policy is the limiter's whole policy: the global rules, the categories
// and the quiet hours. Each part is checked by its own parser; the error
// joins one *KeyError per bad key.
func (c Config) policy() (throttle.Policy, error) {
	p, errRules := c.globalRules()
	cats, errCats := c.categories()
	quiet, errQuiet := c.quietHours()
	if err := errors.Join(errRules, errCats, errQuiet); err != nil {
		return throttle.Policy{}, err
	}
	p.Categories, p.Quiet = cats, quiet
	return p, nil
}

// globalRules are HUSH_THROTTLE_LIMITS and HUSH_THROTTLE_MIN_GAP.
func (c Config) globalRules() (throttle.Policy, error) {
	if c.ThrottleMinGap < 0 {
		return throttle.Policy{}, keyErr("HUSH_THROTTLE_MIN_GAP", "must not be negative, got %s", c.ThrottleMinGap)
	}
	p, err := throttle.ParsePolicy(c.ThrottleLimits, c.ThrottleMinGap.String())
	if err != nil {
		return throttle.Policy{}, &KeyError{Key: "HUSH_THROTTLE_LIMITS", Err: err}
	}
	return p, nil
}

// categories are HUSH_THROTTLE_CATEGORIES (nil when empty).
func (c Config) categories() (map[string]throttle.Category, error) {
	cats, err := throttle.ParseCategories(c.ThrottleCategories)
	if err != nil {
		return nil, &KeyError{Key: "HUSH_THROTTLE_CATEGORIES", Err: err}
	}
	return cats, nil
}

// quietHours are HUSH_QUIET_HOURS (the zero Quiet when empty or off).
func (c Config) quietHours() (throttle.Quiet, error) {
	q, err := throttle.ParseQuiet(c.QuietHours)
	if err != nil {
		return throttle.Quiet{}, &KeyError{Key: "HUSH_QUIET_HOURS", Err: err}
	}
	return q, nil
}

// defaultLocation is HUSH_DEFAULT_TIMEZONE's zone (UTC when empty). A name
// is checked by the rule a recipient's timezone is (payload's, on the
// built-in zone database), so the default is valid wherever a job's zone
// would be; "Local" is refused in a server's words first.
func (c Config) defaultLocation() (*time.Location, error) {
	switch name := c.DefaultTimezone; name {
	case "":
		return time.UTC, nil
	case "Local", "localtime":
		return nil, keyErr("HUSH_DEFAULT_TIMEZONE", "%q is this machine's own zone, which differs from one server to the next (want an IANA name such as Europe/Berlin)", name)
	}
	loc, err := payload.Recipient{Timezone: c.DefaultTimezone}.Location()
	if err != nil {
		return nil, &KeyError{Key: "HUSH_DEFAULT_TIMEZONE", Err: err}
	}
	return loc, nil
}

// errOf is the error of a (value, error) pair.
func errOf[T any](_ T, err error) error { return err }

func (c Config) bypass() []payload.Priority {
	var out []payload.Priority
	for _, p := range c.ThrottleBypass {
		if pr, ok := knownPriorities[strings.TrimSpace(p)]; ok && !slices.Contains(out, pr) {
			out = append(out, pr)
		}
	}
	return out
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("want debug, info, warn or error, got %q", s)
	}
	return l, nil
}

// NewLogger returns the slog logger HUSH_LOG_LEVEL and HUSH_LOG_FORMAT ask
// for, writing to w.
func (c Config) NewLogger(w io.Writer) *slog.Logger {
	level, err := parseLevel(c.LogLevel)
	if err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationText}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// durationText writes durations as text ("1.5s"), not as JSON's integer
// nanoseconds.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
