package deploy

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// knownKeys are the HUSH_* environment variables hush reads
// (docs/configuration.md; hush serve --help). TestKnownKeysMatchConfig keeps
// this list equal to the fields of setup.Config.
var knownKeys = []string{
	"HUSH_API_TOKEN",
	"HUSH_API_TOKENS",
	"HUSH_APP_WAIT",
	"HUSH_APPS_FILE",
	"HUSH_APNS_CA_FILE",
	"HUSH_APNS_CERT_FILE",
	"HUSH_APNS_CERT_PASSWORD",
	"HUSH_APNS_ENDPOINT",
	"HUSH_APNS_KEY_FILE",
	"HUSH_APNS_KEY_ID",
	"HUSH_APNS_PRODUCTION",
	"HUSH_APNS_TEAM_ID",
	"HUSH_APNS_TOPIC",
	"HUSH_CONCURRENCY",
	"HUSH_DEFAULT_TIMEZONE",
	"HUSH_DELIVERY_SHARDS",
	"HUSH_DRY_RUN",
	"HUSH_EVENTS_MAXLEN",
	"HUSH_FCM_CREDENTIALS_FILE",
	"HUSH_FCM_ENDPOINT",
	"HUSH_FCM_PROJECT_ID",
	"HUSH_HELD_CONCURRENCY",
	"HUSH_HTTP_ADDR",
	"HUSH_JOB_RETENTION",
	"HUSH_LOG_FORMAT",
	"HUSH_LOG_LEVEL",
	"HUSH_MAX_BODY_BYTES",
	"HUSH_MAX_RETRY",
	"HUSH_MAX_THROTTLED",
	"HUSH_QUEUES",
	"HUSH_QUIET_HOURS",
	"HUSH_REDIS_ALLOW_EVICTION",
	"HUSH_REDIS_CLUSTER_ADDRS",
	"HUSH_REDIS_SENTINEL_ADDRS",
	"HUSH_REDIS_SENTINEL_MASTER",
	"HUSH_REDIS_SENTINEL_PASSWORD",
	"HUSH_REDIS_URL",
	"HUSH_SHUTDOWN_TIMEOUT",
	"HUSH_THROTTLE_BYPASS",
	"HUSH_THROTTLE_CATEGORIES",
	"HUSH_THROTTLE_MAX_PENDING",
	"HUSH_THROTTLE_LIMITS",
	"HUSH_THROTTLE_MIN_GAP",
	"HUSH_WEBHOOK_SECRET",
	"HUSH_WEBHOOK_TYPES",
	"HUSH_WEBHOOK_URL",
	"HUSH_WEBPUSH_CA_FILE",
	"HUSH_WEBPUSH_ORIGINS",
	"HUSH_WEBPUSH_PRIVATE_KEY",
	"HUSH_WEBPUSH_PRIVATE_NETWORKS",
	"HUSH_WEBPUSH_PUBLIC_KEY",
	"HUSH_WEBPUSH_SUBJECT",
}

func isKnownKey(name string) bool { return slices.Contains(knownKeys, name) }

// configFile declares setup.Config, the struct envconfig fills.
const configFile = "../setup/config.go"

// TestKnownKeysMatchConfig derives the keys from setup.Config's fields the
// way envconfig does, so a key added to or renamed in hush fails here until
// the list above (and the manifests) follow.
func TestKnownKeysMatchConfig(t *testing.T) {
	got, err := configKeys(configFile, "Config", "HUSH")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(knownKeys))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("knownKeys differ from the fields of setup.Config in %s (-knownKeys +config.go):\n%s", configFile, diff)
	}
}

func TestEnvconfigKey(t *testing.T) {
	tests := []struct {
		field, tag, want string
	}{
		{"APNSKeyID", `split_words:"true"`, "HUSH_APNS_KEY_ID"},
		{"RedisClusterAddrs", `split_words:"true"`, "HUSH_REDIS_CLUSTER_ADDRS"},
		{"HTTPAddr", `split_words:"true"`, "HUSH_HTTP_ADDR"},
		{"FCMCredentialsFile", `split_words:"true"`, "HUSH_FCM_CREDENTIALS_FILE"},
		{"APNSCaFile", `split_words:"true"`, "HUSH_APNS_CA_FILE"},
		{"EventsMaxlen", `split_words:"true"`, "HUSH_EVENTS_MAXLEN"},
		{"Concurrency", `default:"50"`, "HUSH_CONCURRENCY"},
		{"DryRun", ``, "HUSH_DRYRUN"},
		{"RedisURL", `envconfig:"REDIS_ADDRESS" split_words:"true"`, "HUSH_REDIS_ADDRESS"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			if got := envconfigKey("HUSH", tt.field, reflect.StructTag(tt.tag)); got != tt.want {
				t.Errorf("envconfigKey(%q, %q) = %q, want %q", tt.field, tt.tag, got, tt.want)
			}
		})
	}
}

// configKeys parses file and returns the sorted environment keys envconfig
// derives from the exported fields of the named struct type.
func configKeys(file, typeName, prefix string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var st *ast.StructType
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == typeName {
			st, _ = ts.Type.(*ast.StructType)
		}
		return st == nil
	})
	if st == nil {
		return nil, fmt.Errorf("%s: no struct type %s", file, typeName)
	}
	var keys []string
	for _, field := range st.Fields.List {
		var tag reflect.StructTag
		if field.Tag != nil {
			s, err := strconv.Unquote(field.Tag.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: tag %s: %w", file, field.Tag.Value, err)
			}
			tag = reflect.StructTag(s)
		}
		if tag.Get("ignored") == "true" {
			continue
		}
		for _, name := range field.Names {
			if name.IsExported() {
				keys = append(keys, envconfigKey(prefix, name.Name, tag))
			}
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// The word splitting of github.com/kelseyhightower/envconfig v1.4.0
// (envconfig.go, gatherInfo).
var (
	gatherRegexp  = regexp.MustCompile("([^A-Z]+|[A-Z]+[^A-Z]+|[A-Z]+)")
	acronymRegexp = regexp.MustCompile("([A-Z]+)([A-Z][^A-Z]+)")
)

// envconfigKey is the variable envconfig reads for a field of a plain
// (not nested) struct.
func envconfigKey(prefix, field string, tag reflect.StructTag) string {
	key := field
	if tag.Get("split_words") == "true" {
		var words []string
		for _, w := range gatherRegexp.FindAllString(field, -1) {
			if m := acronymRegexp.FindStringSubmatch(w); len(m) == 3 {
				words = append(words, m[1], m[2])
			} else {
				words = append(words, w)
			}
		}
		key = strings.Join(words, "_")
	}
	if alt := tag.Get("envconfig"); alt != "" {
		key = alt
	}
	return strings.ToUpper(prefix + "_" + key)
}
