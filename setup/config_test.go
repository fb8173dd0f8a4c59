package setup

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kelseyhightower/envconfig"
)

// clearEnv unsets every HUSH_ configuration key for the test.
func clearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HUSH_") && !strings.HasPrefix(k, "HUSH_TEST_") {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	clearEnv(t)
	c, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Concurrency: 50, Queues: map[string]int{"critical": 6, "high": 3, "normal": 1}, DeliveryShards: 1, MaxRetry: 8,
		ThrottleLimits: "10/1m,100/24h", ThrottleMinGap: 3 * time.Second, DefaultTimezone: "UTC", ThrottleBypass: []string{"critical"},
		ThrottleMaxPending: 100, MaxThrottled: time.Hour,
		HTTPAddr: ":8080", MaxBodyBytes: 8 << 20, EventsMaxlen: 100000, AppWait: 10 * time.Minute, ShutdownTimeout: 10 * time.Second,
		JobRetention: 24 * time.Hour, LogLevel: "info", LogFormat: "text",
		WebpushOrigins: []string{"fcm.googleapis.com", "updates.push.services.mozilla.com", "*.push.services.mozilla.com",
			"*.notify.windows.com", "web.push.apple.com", "*.push.apple.com"},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// A key set to the empty string is set: HUSH_THROTTLE_BYPASS= means no
// priority bypasses the limiter, not the default.
func TestLoadConfigEmptyKeyIsNotItsDefault(t *testing.T) {
	clearEnv(t)
	t.Setenv("HUSH_THROTTLE_BYPASS", "")
	t.Setenv("HUSH_CONCURRENCY", "7")
	c, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ThrottleBypass) != 0 || len(c.bypass()) != 0 {
		t.Errorf("HUSH_THROTTLE_BYPASS=\"\": bypass %q, want none", c.ThrottleBypass)
	}
	if c.Concurrency != 7 || c.ThrottleLimits != DefaultThrottleLimits {
		t.Errorf("concurrency %d limits %q: want 7 and the default", c.Concurrency, c.ThrottleLimits)
	}
}

func TestLoadConfigNamesTheBadKey(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		key  string // the key the error must name
	}{
		{"zero window", map[string]string{"HUSH_THROTTLE_LIMITS": "10/0s"}, "HUSH_THROTTLE_LIMITS"},
		{"limits garbage", map[string]string{"HUSH_THROTTLE_LIMITS": "ten a minute"}, "HUSH_THROTTLE_LIMITS"},
		{"gap not a duration", map[string]string{"HUSH_THROTTLE_MIN_GAP": "soon"}, "HUSH_THROTTLE_MIN_GAP"},
		{"negative gap", map[string]string{"HUSH_THROTTLE_MIN_GAP": "-1s"}, "HUSH_THROTTLE_MIN_GAP"},
		{"concurrency not a number", map[string]string{"HUSH_CONCURRENCY": "many"}, "HUSH_CONCURRENCY"},
		{"concurrency zero", map[string]string{"HUSH_CONCURRENCY": "0"}, "HUSH_CONCURRENCY"},
		{"held concurrency negative", map[string]string{"HUSH_HELD_CONCURRENCY": "-1"}, "HUSH_HELD_CONCURRENCY"},
		{"unknown queue", map[string]string{"HUSH_QUEUES": "critical:6,bulk:1"}, "HUSH_QUEUES"},
		{"queue weight", map[string]string{"HUSH_QUEUES": "critical:0"}, "HUSH_QUEUES"},
		{"queue syntax", map[string]string{"HUSH_QUEUES": "critical=6"}, "HUSH_QUEUES"},
		{"negative retries", map[string]string{"HUSH_MAX_RETRY": "-1"}, "HUSH_MAX_RETRY"},
		{"retention under a second", map[string]string{"HUSH_JOB_RETENTION": "10ms"}, "HUSH_JOB_RETENTION"},
		{"unknown bypass priority", map[string]string{"HUSH_THROTTLE_BYPASS": "urgent"}, "HUSH_THROTTLE_BYPASS"},
		{"category window", map[string]string{"HUSH_THROTTLE_CATEGORIES": "marketing=2/1x"}, "HUSH_THROTTLE_CATEGORIES"},
		{"category name", map[string]string{"HUSH_THROTTLE_CATEGORIES": "Marketing=2/1d"}, "HUSH_THROTTLE_CATEGORIES"},
		{"category without rules", map[string]string{"HUSH_THROTTLE_CATEGORIES": "marketing"}, "HUSH_THROTTLE_CATEGORIES"},
		{"category twice", map[string]string{"HUSH_THROTTLE_CATEGORIES": "social=1/1h; social=2/1h"}, "HUSH_THROTTLE_CATEGORIES"},
		{"category quiet hours", map[string]string{"HUSH_THROTTLE_CATEGORIES": "marketing=2/1d quiet=21:00"}, "HUSH_THROTTLE_CATEGORIES"},
		{"category option", map[string]string{"HUSH_THROTTLE_CATEGORIES": "marketing=2/1d loud=on"}, "HUSH_THROTTLE_CATEGORIES"},
		{"quiet hours one time", map[string]string{"HUSH_QUIET_HOURS": "22:00"}, "HUSH_QUIET_HOURS"},
		{"quiet hours hour 25", map[string]string{"HUSH_QUIET_HOURS": "25:00-08:00"}, "HUSH_QUIET_HOURS"},
		{"quiet hours empty window", map[string]string{"HUSH_QUIET_HOURS": "08:00-08:00"}, "HUSH_QUIET_HOURS"},
		{"unknown time zone", map[string]string{"HUSH_DEFAULT_TIMEZONE": "Mars/Base"}, "HUSH_DEFAULT_TIMEZONE"},
		{"local time zone", map[string]string{"HUSH_DEFAULT_TIMEZONE": "Local"}, "HUSH_DEFAULT_TIMEZONE"},
		{"time zone abbreviation", map[string]string{"HUSH_DEFAULT_TIMEZONE": "CEST"}, "HUSH_DEFAULT_TIMEZONE"},
		{"redis url", map[string]string{"HUSH_REDIS_URL": "http://localhost"}, "HUSH_REDIS_URL"},
		{"apns key without key id", map[string]string{"HUSH_APNS_KEY_FILE": "/k.p8", "HUSH_APNS_TEAM_ID": "T", "HUSH_APNS_TOPIC": "a.b"}, "HUSH_APNS_KEY_ID"},
		{"apns without topic", map[string]string{"HUSH_APNS_CERT_FILE": "/c.p12"}, "HUSH_APNS_TOPIC"},
		{"apns endpoint not https", map[string]string{"HUSH_APNS_ENDPOINT": "http://127.0.0.1:1"}, "HUSH_APNS_ENDPOINT"},
		{"dry run not a bool", map[string]string{"HUSH_DRY_RUN": "perhaps"}, "HUSH_DRY_RUN"},
		{"webhook scheme", map[string]string{"HUSH_WEBHOOK_URL": "ftp://example.com"}, "HUSH_WEBHOOK_URL"},
		{"webhook unsigned", map[string]string{"HUSH_WEBHOOK_URL": "https://backend.example/hooks"}, "HUSH_WEBHOOK_SECRET"},
		{"webhook secret alone", map[string]string{"HUSH_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "HUSH_WEBHOOK_SECRET"},
		{"webhook secret not whsec_", map[string]string{"HUSH_WEBHOOK_URL": "https://backend.example/hooks", "HUSH_WEBHOOK_SECRET": "hunter2"}, "HUSH_WEBHOOK_SECRET"},
		{"webhook second secret", map[string]string{"HUSH_WEBHOOK_URL": "https://backend.example/hooks", "HUSH_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw,whsec_c2hvcnQ="}, "HUSH_WEBHOOK_SECRET"},
		{"log level", map[string]string{"HUSH_LOG_LEVEL": "loud"}, "HUSH_LOG_LEVEL"},
		{"log format", map[string]string{"HUSH_LOG_FORMAT": "xml"}, "HUSH_LOG_FORMAT"},
		{"body limit", map[string]string{"HUSH_MAX_BODY_BYTES": "0"}, "HUSH_MAX_BODY_BYTES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, err := LoadConfig()
			if err == nil {
				t.Fatalf("LoadConfig accepted %v", tt.env)
			}
			if !strings.Contains(err.Error(), tt.key) {
				t.Errorf("error %q does not name %s", err, tt.key)
			}
			var ke *KeyError
			if errors.As(err, &ke) && ke.Key != tt.key {
				t.Errorf("KeyError names %s, want %s", ke.Key, tt.key)
			}
		})
	}
}

// TestLoadConfigWebhookSecret: a webhook URL needs a secret, a secret needs
// the URL, and each secret of the list is checked; the error names the
// entry, never its value.
func TestLoadConfigWebhookSecret(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	for _, tt := range []struct {
		url, secret, want string
	}{
		{"https://backend.example/hooks", "", "HUSH_WEBHOOK_SECRET: required with HUSH_WEBHOOK_URL: every webhook POST is signed (make one with: hush webhook secret)"},
		{"", secret, "HUSH_WEBHOOK_SECRET: only used with HUSH_WEBHOOK_URL"},
		{"https://backend.example/hooks", "hunter2", "HUSH_WEBHOOK_SECRET: secret 1: want whsec_<base64>"},
		{"https://backend.example/hooks", secret + ",whsec_c2hvcnQ=", "HUSH_WEBHOOK_SECRET: secret 2: the key after whsec_ is 5 bytes"},
		{"https://backend.example/hooks", secret + ", " + secret, ""},
	} {
		clearEnv(t)
		t.Setenv("HUSH_WEBHOOK_URL", tt.url)
		t.Setenv("HUSH_WEBHOOK_SECRET", tt.secret)
		_, err := LoadConfig()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("url %q secret %q: %v", tt.url, tt.secret, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("url %q secret %q: %v, want %q", tt.url, tt.secret, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("the error shows the secret: %v", err)
		}
	}
}

// TestLoadConfigWebhookTypes: HUSH_WEBHOOK_TYPES takes event types only,
// and only with HUSH_WEBHOOK_URL.
func TestLoadConfigWebhookTypes(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	for _, tt := range []struct {
		url, types, want string
	}{
		{"https://backend.example/hooks", "token_invalid, failed", ""},
		{"https://backend.example/hooks", "", ""},
		{"https://backend.example/hooks", "token_invalid,sent", `HUSH_WEBHOOK_TYPES: want each of delivered, failed, token_invalid, dropped, got "sent"`},
		{"", "failed", "HUSH_WEBHOOK_TYPES: only used with HUSH_WEBHOOK_URL"},
	} {
		clearEnv(t)
		t.Setenv("HUSH_WEBHOOK_URL", tt.url)
		if tt.url != "" {
			t.Setenv("HUSH_WEBHOOK_SECRET", secret)
		}
		t.Setenv("HUSH_WEBHOOK_TYPES", tt.types)
		c, err := LoadConfig()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("types %q: %v", tt.types, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("types %q: %v, want %q", tt.types, err, tt.want)
		case tt.want == "" && tt.types != "":
			if ts, _ := c.webhookTypes(); len(ts) != 2 {
				t.Errorf("types %q: %v, want two", tt.types, ts)
			}
		}
	}
}

// TestLoadConfigRefusesOutOfBounds: every numeric key has bounds, and a
// value past them is refused at start with the key, the value and the
// range, before it can cost memory or overflow.
func TestLoadConfigRefusesOutOfBounds(t *testing.T) {
	tests := []struct{ key, value, msg string }{
		{"HUSH_CONCURRENCY", "100000000", "HUSH_CONCURRENCY: want 1 to 10000, got 100000000"},
		{"HUSH_CONCURRENCY", "1000000000000000000", "HUSH_CONCURRENCY: want 1 to 10000, got 1000000000000000000"},
		{"HUSH_CONCURRENCY", "0", "HUSH_CONCURRENCY: want 1 to 10000, got 0"},
		{"HUSH_HELD_CONCURRENCY", "9223372036854775807", "HUSH_HELD_CONCURRENCY: want 0 to 100000, got 9223372036854775807"},
		{"HUSH_HELD_CONCURRENCY", "-1", "HUSH_HELD_CONCURRENCY: want 0 to 100000, got -1"},
		{"HUSH_QUEUES", "critical:1000000000,normal:1", `HUSH_QUEUES: queue "critical": want a weight of 1 to 100, got 1000000000`},
		{"HUSH_DELIVERY_SHARDS", "65", "HUSH_DELIVERY_SHARDS: want 1 to 64, got 65"},
		{"HUSH_MAX_RETRY", "1000000", "HUSH_MAX_RETRY: want 0 to 100, got 1000000"},
		{"HUSH_THROTTLE_MIN_GAP", "1000000h", "HUSH_THROTTLE_MIN_GAP: want 0s to 720h, got 1000000h"},
		{"HUSH_THROTTLE_MIN_GAP", "-1s", "HUSH_THROTTLE_MIN_GAP: want 0s to 720h, got -1s"},
		{"HUSH_THROTTLE_MAX_PENDING", "9223372036854775807", "HUSH_THROTTLE_MAX_PENDING: want 0 to 10000, got 9223372036854775807"},
		{"HUSH_MAX_THROTTLED", "2000h", "HUSH_MAX_THROTTLED: want 0s to 720h, got 2000h"},
		{"HUSH_MAX_BODY_BYTES", "9223372036854775807", "HUSH_MAX_BODY_BYTES: want 1 to 268435456, got 9223372036854775807"},
		{"HUSH_EVENTS_MAXLEN", "0", "HUSH_EVENTS_MAXLEN: want 1 to 100000000, got 0"},
		{"HUSH_SHUTDOWN_TIMEOUT", "2562047h", "HUSH_SHUTDOWN_TIMEOUT: want 1ms to 1h, got 2562047h"},
		{"HUSH_JOB_RETENTION", "2562047h", "HUSH_JOB_RETENTION: want 1s to 8760h, got 2562047h"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(tt.key, tt.value)
			_, err := LoadConfig()
			if err == nil {
				t.Fatalf("LoadConfig accepted %s=%s", tt.key, tt.value)
			}
			if got := err.Error(); got != tt.msg {
				t.Errorf("error\n got %s\nwant %s", got, tt.msg)
			}
		})
	}
}

// TestLoadConfigRefusesUnsendableAPIToken: a token no client can send
// (a trailing newline from echo, a space, a non-ASCII byte) is refused at
// start, naming the key and never quoting the token.
func TestLoadConfigRefusesUnsendableAPIToken(t *testing.T) {
	tests := []struct{ token, msg string }{
		{"s3cret\n", "HUSH_API_TOKEN: a newline at byte 7 of 7"},
		{"s3cret ", "HUSH_API_TOKEN: a space at byte 7 of 7"},
		{" s3cret", "HUSH_API_TOKEN: a space at byte 1 of 7"},
		{"s3c ret", "HUSH_API_TOKEN: a space at byte 4 of 7"},
		{"s3cret\r\n", "HUSH_API_TOKEN: a carriage return at byte 7 of 8"},
		{"s3crét", "HUSH_API_TOKEN: byte 0xc3 at byte 5 of 7"},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("HUSH_API_TOKEN", tt.token)
			_, err := LoadConfig()
			if err == nil {
				t.Fatalf("LoadConfig accepted HUSH_API_TOKEN=%q", tt.token)
			}
			if !strings.HasPrefix(err.Error(), tt.msg) {
				t.Errorf("error\n  %s\nwant it to start\n  %s", err, tt.msg)
			}
			if strings.Contains(err.Error(), "s3c") {
				t.Errorf("error quotes the token: %s", err)
			}
		})
	}
	clearEnv(t)
	t.Setenv("HUSH_API_TOKEN", "Zm9vYmFy-._~+/=")
	if _, err := LoadConfig(); err != nil {
		t.Errorf("a token68 token: %v", err)
	}
}

// TestEveryNumericKeyHasBounds: a numeric key added to Config without
// bounds fails here, and every bound names a field.
func TestEveryNumericKeyHasBounds(t *testing.T) {
	bs := bounds()
	ty := reflect.TypeFor[Config]()
	for i := range ty.NumField() {
		f := ty.Field(i)
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Map:
			if _, ok := bs[f.Name]; !ok {
				t.Errorf("%s (%s) has no bounds", keyOf(f), f.Type)
			}
		}
	}
	for name, b := range bs {
		if _, ok := ty.FieldByName(name); !ok {
			t.Errorf("bounds names %s, not a Config field", name)
		}
		if b.min > b.max {
			t.Errorf("%s: min %d above max %d", name, b.min, b.max)
		}
	}
	d := reflect.ValueOf(DefaultConfig())
	if err := DefaultConfig().checkBounds(); err != nil {
		t.Errorf("the defaults are out of bounds: %v (%v)", err, d)
	}
}

func TestPrintUsageListsEveryKey(t *testing.T) {
	var b bytes.Buffer
	if err := PrintUsage(&b); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{
		"HUSH_REDIS_URL", "HUSH_REDIS_CLUSTER_ADDRS", "HUSH_CONCURRENCY", "HUSH_QUEUES", "HUSH_MAX_RETRY",
		"HUSH_THROTTLE_LIMITS", "HUSH_THROTTLE_MIN_GAP", "HUSH_THROTTLE_CATEGORIES", "HUSH_QUIET_HOURS",
		"HUSH_DEFAULT_TIMEZONE", "HUSH_THROTTLE_BYPASS",
		"HUSH_APNS_KEY_FILE", "HUSH_APNS_KEY_ID", "HUSH_APNS_TEAM_ID", "HUSH_APNS_TOPIC",
		"HUSH_APNS_CERT_FILE", "HUSH_APNS_CERT_PASSWORD", "HUSH_APNS_PRODUCTION", "HUSH_APNS_ENDPOINT", "HUSH_APNS_CA_FILE",
		"HUSH_FCM_CREDENTIALS_FILE", "HUSH_FCM_PROJECT_ID", "HUSH_FCM_ENDPOINT", "HUSH_DRY_RUN", "HUSH_HTTP_ADDR",
		"HUSH_API_TOKEN", "HUSH_WEBHOOK_URL", "HUSH_WEBHOOK_SECRET", "HUSH_LOG_LEVEL", "HUSH_LOG_FORMAT",
		"HUSH_MAX_BODY_BYTES", "HUSH_EVENTS_MAXLEN", "HUSH_SHUTDOWN_TIMEOUT", "HUSH_JOB_RETENTION",
	} {
		if !strings.Contains(b.String(), key+"\t") && !strings.Contains(b.String(), key+" ") {
			t.Errorf("usage lacks %s", key)
		}
	}
	if !strings.Contains(b.String(), "10/1m,100/24h") {
		t.Errorf("usage lacks the default limits:\n%s", b.String())
	}
}

// TestLoadConfigListsEveryBadKey: mistyped values are all reported at
// once, each naming its key in hush's words (not envconfig's first
// conversion error).
func TestLoadConfigListsEveryBadKey(t *testing.T) {
	clearEnv(t)
	t.Setenv("HUSH_CONCURRENCY", "ten")
	t.Setenv("HUSH_THROTTLE_MIN_GAP", "3 seconds")
	t.Setenv("HUSH_DRY_RUN", "yes please")
	t.Setenv("HUSH_QUEUES", "critical=6")
	t.Setenv("HUSH_MAX_BODY_BYTES", "")
	_, err := LoadConfig()
	if err == nil {
		t.Fatal("LoadConfig accepted five bad values")
	}
	want := []string{
		`HUSH_CONCURRENCY: want an integer, got "ten"`,
		`HUSH_THROTTLE_MIN_GAP: want a duration such as 500ms, 3s or 1h, got "3 seconds"`,
		`HUSH_DRY_RUN: want true or false, got "yes please"`,
		`HUSH_QUEUES: want a comma list of name:integer (e.g. critical:6,high:3,normal:1), got "critical=6"`,
		`HUSH_MAX_BODY_BYTES: want an integer, got ""`,
	}
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		got = append(got, e.Error())
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if strings.Contains(err.Error(), "envconfig") || strings.Contains(err.Error(), "strconv") {
		t.Errorf("error speaks Go, not hush: %v", err)
	}
}

// TestRedisURLWithoutScheme: a host:port without redis:// says what is
// wanted instead of url.Parse's "first path segment in URL cannot contain
// colon".
func TestRedisURLWithoutScheme(t *testing.T) {
	clearEnv(t)
	t.Setenv("HUSH_REDIS_URL", "127.0.0.1:6420")
	_, err := LoadConfig()
	if err == nil || !strings.Contains(err.Error(), `HUSH_REDIS_URL: want redis://`) || !strings.Contains(err.Error(), `got "127.0.0.1:6420"`) {
		t.Errorf("LoadConfig = %v, want HUSH_REDIS_URL: want redis://... got \"127.0.0.1:6420\"", err)
	}
}

// TestKeyOfMatchesUsage: the keys checkEnv and Keys derive are the keys
// envconfig reads, in order, so no bad value slips past the check.
func TestKeyOfMatchesUsage(t *testing.T) {
	var c Config
	var b bytes.Buffer
	if err := envconfig.Usagef(envPrefix, &c, &b, "{{range .}}{{usage_key .}}\n{{end}}"); err != nil {
		t.Fatal(err)
	}
	fromEnvconfig := strings.Fields(b.String())
	var derived []string
	for _, k := range Keys() {
		derived = append(derived, k.Name)
	}
	if diff := cmp.Diff(fromEnvconfig, derived); diff != "" {
		t.Errorf("keys (-envconfig +Keys):\n%s", diff)
	}
}

// TestPrintUsageWraps: every line of serve --help's key list fits the
// terminal ($COLUMNS), and each key shows its type and default.
func TestPrintUsageWraps(t *testing.T) {
	t.Setenv("COLUMNS", "72")
	var b bytes.Buffer
	if err := PrintUsage(&b); err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(b.String()) {
		if n := len([]rune(strings.TrimRight(line, "\n"))); n > 72 && strings.Contains(strings.TrimSpace(line), " ") {
			t.Errorf("line of %d runes: %q", n, line)
		}
	}
	if !strings.Contains(b.String(), "HUSH_CONCURRENCY  (int, 1 to 10000, default 50)") || strings.Contains(b.String(), "Comma-separated") {
		t.Errorf("usage:\n%s", b.String())
	}
}

// TestJSONLogDurations: durations in JSON logs read as text, not
// nanoseconds.
func TestJSONLogDurations(t *testing.T) {
	var b bytes.Buffer
	Config{LogLevel: "info", LogFormat: "json"}.NewLogger(&b).Info("x", "timeout", 1500*time.Millisecond)
	if !strings.Contains(b.String(), `"timeout":"1.5s"`) {
		t.Errorf("log line %s, want \"timeout\":\"1.5s\"", b.String())
	}
}

// TestUnknownKeys: a HUSH_* variable serve does not read is reported with
// the key it most likely meant; test variables and real keys are not.
func TestUnknownKeys(t *testing.T) {
	environ := []string{
		"HUSH_THROTLE_LIMITS=5/1m",
		"HUSH_THROTTLE_LIMITS=10/1m",
		"HUSH_CONCURENCY=10",
		"HUSH_TEST_REDIS_URL=redis://x",
		"HUSH_E2E_LOG_DIR=/tmp",
		"HUSH_WHATEVER=1",
		"PATH=/bin",
		"HUSH_THROTLE_LIMITS=again",
	}
	want := []UnknownKey{
		{Key: "HUSH_CONCURENCY", Nearest: "HUSH_CONCURRENCY"},
		{Key: "HUSH_THROTLE_LIMITS", Nearest: "HUSH_THROTTLE_LIMITS"},
		{Key: "HUSH_WHATEVER"},
	}
	if diff := cmp.Diff(want, UnknownKeys(environ)); diff != "" {
		t.Errorf("UnknownKeys (-want +got):\n%s", diff)
	}

	var b bytes.Buffer
	WarnUnknownKeys(Config{LogFormat: "text", LogLevel: "info"}.NewLogger(&b), []string{"HUSH_THROTLE_LIMITS=5/1m"})
	if got, want := b.String(), `level=WARN msg="unknown configuration key, ignored" key=HUSH_THROTLE_LIMITS did_you_mean=HUSH_THROTTLE_LIMITS`; !strings.Contains(got, want) {
		t.Errorf("log\n  %s\nwant it to hold\n  %s", got, want)
	}
}
