package deploy

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

const composeFile = "compose.yaml"

// compose mirrors the part of the Compose specification compose.yaml uses.
// It is decoded strictly, so a misspelt or unexpected key fails the test;
// add a field here when compose.yaml needs a new one. Environment values are
// strings: quote numbers and booleans in compose.yaml.
type compose struct {
	Name     string                    `json:"name"`
	Services map[string]composeService `json:"services"`
	Volumes  map[string]*struct{}      `json:"volumes"`
}

type composeService struct {
	Image       string   `json:"image"`
	Command     []string `json:"command,omitempty"`
	Ports       []string `json:"ports,omitempty"`
	Volumes     []string `json:"volumes,omitempty"`
	Healthcheck *struct {
		Test     []string `json:"test"`
		Interval string   `json:"interval"`
		Timeout  string   `json:"timeout"`
		Retries  int      `json:"retries"`
	} `json:"healthcheck,omitempty"`
	Build *struct {
		Context    string            `json:"context"`
		Dockerfile string            `json:"dockerfile"`
		Args       map[string]string `json:"args"`
	} `json:"build,omitempty"`
	DependsOn map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on,omitempty"`
	Environment     map[string]string `json:"environment,omitempty"`
	ReadOnly        bool              `json:"read_only,omitempty"`
	CapDrop         []string          `json:"cap_drop,omitempty"`
	SecurityOpt     []string          `json:"security_opt,omitempty"`
	StopGracePeriod string            `json:"stop_grace_period,omitempty"`
}

// composeDiffers are ConfigMap keys compose.yaml may set differently, and why.
var composeDiffers = map[string]string{
	"HUSH_LOG_FORMAT":      "text reads better in a terminal than json",
	"HUSH_APNS_PRODUCTION": "no APNs credentials locally",
}

const (
	ruleCompose          rule = "compose.yaml: Redis 7 and hush built from ../Dockerfile, with the ConfigMap's settings"
	ruleComposeRedisPort rule = "compose.yaml publishes nothing on host port 6379, where a local Redis listens"
	ruleComposeDryRun    rule = "compose.yaml starts hush in dry-run, with no provider credential"
)

func loadCompose(t *testing.T) *compose {
	t.Helper()
	src, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := decodeStrict(src, &c); err != nil {
		t.Fatalf("%s: %v", composeFile, err)
	}
	return &c
}

func configMapFor(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	b, err := loadBundle(overlayProduction)
	if err != nil {
		t.Fatal(err)
	}
	cm := b.configMap("hush-config")
	if cm == nil {
		t.Fatal("no ConfigMap hush-config")
	}
	return cm
}

// checkCompose checks c against the rules of compose.yaml and the
// ConfigMap it mirrors.
func checkCompose(c *compose, cm *corev1.ConfigMap) []violation {
	ch := &checker{}
	if got := sortedKeys(c.Services); !slices.Equal(got, []string{"hush", "redis"}) {
		ch.errorf(ruleCompose, "services %v, want hush and redis", got)
		return ch.found
	}
	redis, hush := c.Services["redis"], c.Services["hush"]
	if !strings.HasPrefix(redis.Image, "redis:7") {
		ch.errorf(ruleCompose, "redis image %q is not Redis 7", redis.Image)
	}
	if redis.Healthcheck == nil {
		ch.errorf(ruleCompose, "redis has no healthcheck for hush to wait on")
	}
	if hush.DependsOn["redis"].Condition != "service_healthy" {
		ch.errorf(ruleCompose, "hush does not wait for a healthy redis")
	}
	if b := hush.Build; b == nil {
		ch.errorf(ruleCompose, "hush is not built")
	} else {
		df := filepath.Join(b.Context, b.Dockerfile)
		if b.Dockerfile == "" {
			df = filepath.Join(b.Context, "Dockerfile")
		}
		if filepath.Clean(df) != filepath.Clean(dockerfilePath) {
			ch.errorf(ruleCompose, "hush is built from %s, want %s", df, dockerfilePath)
		}
		if b.Args["VERSION"] == "" {
			ch.errorf(ruleCompose, "no VERSION build arg")
		}
	}
	for _, k := range sortedKeys(hush.Environment) {
		if !isKnownKey(k) {
			ch.errorf(ruleEnvKeys, "compose hush: %s is not a HUSH_* key hush reads", k)
		}
	}
	if u, err := url.Parse(hush.Environment["HUSH_REDIS_URL"]); err != nil || u.Hostname() != "redis" {
		ch.errorf(ruleCompose, "HUSH_REDIS_URL %q does not point at the redis service", hush.Environment["HUSH_REDIS_URL"])
	}
	for _, k := range sortedKeys(cm.Data) {
		if _, ok := composeDiffers[k]; ok {
			continue
		}
		if got, ok := hush.Environment[k]; !ok || got != cm.Data[k] {
			ch.errorf(ruleCompose, "%s is %q (set: %t), the ConfigMap says %q", k, got, ok, cm.Data[k])
		}
	}
	for _, name := range sortedKeys(c.Services) {
		for _, spec := range c.Services[name].Ports {
			lo, hi, err := composeHostPorts(spec)
			if err != nil {
				ch.errorf(ruleCompose, "%s: ports %q: %v", name, spec, err)
			} else if lo <= redisDefaultPort && redisDefaultPort <= hi {
				ch.errorf(ruleComposeRedisPort, "%s publishes %q: hush reaches Redis on the compose network", name, spec)
			}
		}
	}
	if dry, err := strconv.ParseBool(hush.Environment["HUSH_DRY_RUN"]); err != nil || !dry {
		ch.errorf(ruleComposeDryRun, "HUSH_DRY_RUN is %q, want true: there are no provider credentials here", hush.Environment["HUSH_DRY_RUN"])
	}
	for _, k := range providerCredentialKeys {
		if _, ok := hush.Environment[k]; ok {
			ch.errorf(ruleComposeDryRun, "hush sets %s", k)
		}
	}
	grace, err := time.ParseDuration(hush.StopGracePeriod)
	shutdown, err2 := time.ParseDuration(valueOr(hush.Environment, "HUSH_SHUTDOWN_TIMEOUT", defaultShutdown.String()))
	if err != nil || err2 != nil || grace < shutdown+httpShutdown {
		ch.errorf(ruleGrace, "stop_grace_period %q does not cover HUSH_SHUTDOWN_TIMEOUT + %s", hush.StopGracePeriod, httpShutdown)
	}
	return ch.found
}

// composeHostPorts returns the host ports a short-syntax ports entry
// ("[IP:][HOST:]CONTAINER[/PROTOCOL]", each port maybe a range) publishes
// on; with no HOST part Docker picks an ephemeral port, and lo > hi.
func composeHostPorts(spec string) (lo, hi int, err error) {
	s, _, _ := strings.Cut(spec, "/")
	if strings.HasPrefix(s, "[") { // [IPv6]:HOST:CONTAINER
		_, rest, ok := strings.Cut(s, "]:")
		if !ok {
			return 0, 0, fmt.Errorf("unclosed IPv6 address")
		}
		s = rest
	}
	parts := strings.Split(s, ":")
	var host string
	switch len(parts) {
	case 1: // CONTAINER
		return 1, 0, nil
	case 2: // HOST:CONTAINER
		host = parts[0]
	case 3: // IP:HOST:CONTAINER
		host = parts[1]
	default:
		return 0, 0, fmt.Errorf("not [IP:][HOST:]CONTAINER")
	}
	if host == "" {
		return 1, 0, nil
	}
	first, last, isRange := strings.Cut(host, "-")
	if lo, err = strconv.Atoi(first); err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(last); err != nil {
			return 0, 0, err
		}
	}
	return lo, hi, nil
}

func TestComposeHostPorts(t *testing.T) {
	tests := []struct {
		spec   string
		lo, hi int
	}{
		{"6379", 1, 0},
		{"16379:6379", 16379, 16379},
		{"127.0.0.1:6379:6379", 6379, 6379},
		{"127.0.0.1::6379", 1, 0},
		{"[::1]:6379:6379/tcp", 6379, 6379},
		{"6370-6380:6370-6380", 6370, 6380},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			lo, hi, err := composeHostPorts(tt.spec)
			if err != nil || lo != tt.lo || hi != tt.hi {
				t.Errorf("composeHostPorts(%q) = %d, %d, %v; want %d, %d", tt.spec, lo, hi, err, tt.lo, tt.hi)
			}
		})
	}
	for _, bad := range []string{"a:6379", "1:2:3:4", "[::1:6379"} {
		if _, _, err := composeHostPorts(bad); err == nil {
			t.Errorf("composeHostPorts(%q): no error", bad)
		}
	}
}

func TestCompose(t *testing.T) {
	for _, v := range checkCompose(loadCompose(t), configMapFor(t)) {
		t.Error(v)
	}
}

func TestComposeChecksCatchMistakes(t *testing.T) {
	addPort := func(c *compose, service, spec string) {
		s := c.Services[service]
		s.Ports = append(s.Ports, spec)
		c.Services[service] = s
	}
	tests := []struct {
		name   string
		mutate func(c *compose)
		want   []rule
	}{
		{"old Redis", func(c *compose) { s := c.Services["redis"]; s.Image = "redis:6"; c.Services["redis"] = s }, []rule{ruleCompose}},
		{"throttle differs from the ConfigMap", func(c *compose) { c.Services["hush"].Environment["HUSH_THROTTLE_MIN_GAP"] = "1s" }, []rule{ruleCompose}},
		{"ConfigMap key missing", func(c *compose) { delete(c.Services["hush"].Environment, "HUSH_QUEUES") }, []rule{ruleCompose}},
		{"unknown key", func(c *compose) { c.Services["hush"].Environment["HUSH_REDIS"] = "redis:6379" }, []rule{ruleEnvKeys}},
		{"Redis on localhost", func(c *compose) { c.Services["hush"].Environment["HUSH_REDIS_URL"] = "redis://127.0.0.1:6379/0" }, []rule{ruleCompose}},
		{"short stop grace period", func(c *compose) { s := c.Services["hush"]; s.StopGracePeriod = "10s"; c.Services["hush"] = s }, []rule{ruleGrace}},
		{"other Dockerfile", func(c *compose) { c.Services["hush"].Build.Dockerfile = "Dockerfile.dev" }, []rule{ruleCompose}},
		{"no redis service", func(c *compose) { delete(c.Services, "redis") }, []rule{ruleCompose}},
		{"Redis on the host's 6379", func(c *compose) { addPort(c, "redis", "127.0.0.1:6379:6379") }, []rule{ruleComposeRedisPort}},
		{"Redis on every interface's 6379", func(c *compose) { addPort(c, "redis", "6379:6379") }, []rule{ruleComposeRedisPort}},
		{"Redis in a host port range", func(c *compose) { addPort(c, "redis", "6370-6380:6370-6380") }, []rule{ruleComposeRedisPort}},
		{"hush on the host's 6379", func(c *compose) { addPort(c, "hush", "6379:8080") }, []rule{ruleComposeRedisPort}},
		{"Redis on another host port", func(c *compose) { addPort(c, "redis", "127.0.0.1:16379:6379") }, nil},
		{"Redis on an ephemeral host port", func(c *compose) { addPort(c, "redis", "6379") }, nil},
		{"unparsable port", func(c *compose) { addPort(c, "redis", "redis:6379") }, []rule{ruleCompose}},
		{"not dry-run", func(c *compose) { delete(c.Services["hush"].Environment, "HUSH_DRY_RUN") }, []rule{ruleComposeDryRun}},
		{"dry-run off", func(c *compose) { c.Services["hush"].Environment["HUSH_DRY_RUN"] = "false" }, []rule{ruleComposeDryRun}},
		{"a provider credential", func(c *compose) {
			c.Services["hush"].Environment["HUSH_FCM_CREDENTIALS_FILE"] = "/run/secrets/sa.json"
		}, []rule{ruleComposeDryRun}},
	}
	cm := configMapFor(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loadCompose(t)
			tt.mutate(c)
			var got []rule
			for _, v := range checkCompose(c, cm) {
				if !slices.Contains(got, v.rule) {
					got = append(got, v.rule)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rules broken (-want +got):\n%s", diff)
			}
		})
	}
}

// TestComposeDecodesStrictly: a misspelt key in compose.yaml is an error.
func TestComposeDecodesStrictly(t *testing.T) {
	src, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), "    environment:", "    enviroment:", 1)
	if bad == string(src) {
		t.Fatal("compose.yaml has no environment: update this test")
	}
	var c compose
	if err := decodeStrict([]byte(bad), &c); err == nil {
		t.Error("a misspelt key decoded without error")
	}
}
