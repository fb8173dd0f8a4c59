package setup

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// The limiter's keys beyond the global rules: HUSH_THROTTLE_CATEGORIES,
// HUSH_QUIET_HOURS and HUSH_DEFAULT_TIMEZONE.

// TestLimiterKeysGoodValues: each key's accepted values, read from the
// environment, give the policy and the default zone Serve runs with.
func TestLimiterKeysGoodValues(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		wantCats map[string]throttle.Category
		wantQ    throttle.Quiet
		wantZone string
	}{
		{name: "defaults", env: nil, wantZone: "UTC"},
		{
			name: "categories",
			env:  map[string]string{"HUSH_THROTTLE_CATEGORIES": "marketing=2/1d,1/4h@1h quiet=21:00-09:00; social=10/1h@30s; transactional=none global=off"},
			wantCats: map[string]throttle.Category{
				"marketing":     {Limits: []throttle.Limit{{N: 2, Window: 24 * time.Hour}, {N: 1, Window: 4 * time.Hour}}, MinGap: time.Hour, Quiet: &throttle.Quiet{From: 21 * time.Hour, To: 9 * time.Hour}},
				"social":        {Limits: []throttle.Limit{{N: 10, Window: time.Hour}}, MinGap: 30 * time.Second},
				"transactional": {SkipGlobal: true, Quiet: &throttle.Quiet{}}, // no quiet hours unless it says quiet=
			},
			wantZone: "UTC",
		},
		{
			name:     "categories with spaces and a trailing semicolon",
			env:      map[string]string{"HUSH_THROTTLE_CATEGORIES": " digest=@5m quiet=off ; "},
			wantCats: map[string]throttle.Category{"digest": {MinGap: 5 * time.Minute, Quiet: &throttle.Quiet{}}},
			wantZone: "UTC",
		},
		{name: "categories empty", env: map[string]string{"HUSH_THROTTLE_CATEGORIES": ""}, wantZone: "UTC"},
		{
			name:     "quiet hours across midnight",
			env:      map[string]string{"HUSH_QUIET_HOURS": "22:00-08:00"},
			wantQ:    throttle.Quiet{From: 22 * time.Hour, To: 8 * time.Hour},
			wantZone: "UTC",
		},
		{
			name:     "quiet hours within a day",
			env:      map[string]string{"HUSH_QUIET_HOURS": "12:30-14:00"},
			wantQ:    throttle.Quiet{From: 12*time.Hour + 30*time.Minute, To: 14 * time.Hour},
			wantZone: "UTC",
		},
		{name: "quiet hours off", env: map[string]string{"HUSH_QUIET_HOURS": "off"}, wantZone: "UTC"},
		{name: "time zone", env: map[string]string{"HUSH_DEFAULT_TIMEZONE": "Europe/Berlin"}, wantZone: "Europe/Berlin"},
		{name: "time zone three parts", env: map[string]string{"HUSH_DEFAULT_TIMEZONE": "America/Argentina/Buenos_Aires"}, wantZone: "America/Argentina/Buenos_Aires"},
		{name: "time zone empty", env: map[string]string{"HUSH_DEFAULT_TIMEZONE": ""}, wantZone: "UTC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := LoadConfig()
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.policy()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantCats, p.Categories); diff != "" {
				t.Errorf("categories (-want +got):\n%s", diff)
			}
			if p.Quiet != tt.wantQ {
				t.Errorf("quiet hours %s, want %s", p.Quiet, tt.wantQ)
			}
			loc, err := c.defaultLocation()
			if err != nil {
				t.Fatal(err)
			}
			if loc.String() != tt.wantZone {
				t.Errorf("default zone %s, want %s", loc, tt.wantZone)
			}
		})
	}
}

// TestLimiterKeysAllBadAtOnce: the three keys' bad values are reported in
// one error, each naming its key and the reason.
func TestLimiterKeysAllBadAtOnce(t *testing.T) {
	clearEnv(t)
	t.Setenv("HUSH_THROTTLE_CATEGORIES", "marketing=2/1x")
	t.Setenv("HUSH_QUIET_HOURS", "25:00-08:00")
	t.Setenv("HUSH_DEFAULT_TIMEZONE", "Mars/Base")
	_, err := LoadConfig()
	if err == nil {
		t.Fatal("LoadConfig accepted three bad values")
	}
	want := []string{
		`HUSH_THROTTLE_CATEGORIES: throttle: category "marketing=2/1x": limit "2/1x": window "1x" is not a duration: write a number and a unit (ms, s, m, h or d), e.g. 1m or 24h`,
		`HUSH_QUIET_HOURS: throttle: quiet hours "25:00-08:00": start: "25:00" is not HH:MM (00:00 to 23:59)`,
		`HUSH_DEFAULT_TIMEZONE: unknown time zone "Mars/Base" (want an IANA name such as Europe/Berlin)`,
	}
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		got = append(got, e.Error())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	var pe *throttle.ParseError
	if !errors.As(err, &pe) {
		t.Errorf("error %v does not carry the parser's *throttle.ParseError", err)
	}
}

// TestDefaultTimezoneLocal: "Local" (and its zoneinfo link) is refused in
// a server's words: it is whatever zone the machine happens to have.
func TestDefaultTimezoneLocal(t *testing.T) {
	for _, name := range []string{"Local", "localtime"} {
		_, err := Config{DefaultTimezone: name}.defaultLocation()
		want := `HUSH_DEFAULT_TIMEZONE: "` + name + `" is this machine's own zone, which differs from one server to the next (want an IANA name such as Europe/Berlin)`
		if err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %s", name, err, want)
		}
	}
}

// TestServePolicy: the policy and options Serve gives the limiter carry
// the global rules, the categories and the quiet hours, and the collapse
// margin the worker needs; a bad key among them stops it naming each.
func TestServePolicy(t *testing.T) {
	c := DefaultConfig()
	c.ThrottleCategories = "marketing=2/1d quiet=21:00-09:00; transactional=none global=off"
	c.QuietHours = "22:00-08:00"
	c.ThrottleMaxPending = 7
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	got, err := c.policy()
	if err != nil {
		t.Fatal(err)
	}
	want := throttle.Policy{
		Limits: []throttle.Limit{{N: 10, Window: time.Minute}, {N: 100, Window: 24 * time.Hour}},
		MinGap: 3 * time.Second,
		Quiet:  throttle.Quiet{From: 22 * time.Hour, To: 8 * time.Hour},
		Categories: map[string]throttle.Category{
			"marketing":     {Limits: []throttle.Limit{{N: 2, Window: 24 * time.Hour}}, Quiet: &throttle.Quiet{From: 21 * time.Hour, To: 9 * time.Hour}},
			"transactional": {SkipGlobal: true, Quiet: &throttle.Quiet{}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("policy (-want +got):\n%s", diff)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("the policy does not validate: %v", err)
	}
	if o := envApp(c).limiterOptions(); o.MaxPending != 7 || o.Scope != "" || o.CollapseMargin != worker.CollapseMargin {
		t.Errorf("limiter options %+v, want MaxPending 7 and CollapseMargin %s", o, worker.CollapseMargin)
	}

	c.ThrottleLimits, c.ThrottleCategories, c.QuietHours = "10/0s", "x=", "8-9"
	_, err = c.policy()
	for _, key := range []string{"HUSH_THROTTLE_LIMITS", "HUSH_THROTTLE_CATEGORIES", "HUSH_QUIET_HOURS"} {
		if err == nil || !strings.Contains(err.Error(), key+": ") {
			t.Errorf("policy error %v does not name %s", err, key)
		}
	}
}

// TestCategoryNameRulesAgree: a name HUSH_THROTTLE_CATEGORIES accepts
// (throttle's rule) is one a job may name (payload's), and the reverse, so
// no configured category is unusable.
func TestCategoryNameRulesAgree(t *testing.T) {
	names := []string{"", "a", "marketing", "social_2", "re-engage", "Marketing", "a.b", "a b", "é",
		strings.Repeat("x", 32), strings.Repeat("x", 33)}
	for _, n := range names {
		if th, pl := throttle.ValidCategory(n), payload.ValidCategory(n); th != pl {
			t.Errorf("%q: throttle.ValidCategory %v, payload.ValidCategory %v", n, th, pl)
		}
	}
	if !slices.ContainsFunc(names, throttle.ValidCategory) {
		t.Error("no valid name among the cases")
	}
}

// HUSH_THROTTLE_MAX_PENDING's values reach the limiter as the cap they
// document: its 0 (no cap) as throttle.NoMaxPending, since the limiter's
// own zero is its default cap, which is the key's default.
func TestServeMaxPending(t *testing.T) {
	if DefaultThrottleMaxPending != throttle.DefaultMaxPending {
		t.Errorf("HUSH_THROTTLE_MAX_PENDING's default %d, the limiter's %d", DefaultThrottleMaxPending, throttle.DefaultMaxPending)
	}
	for _, tt := range []struct{ env, want int }{{0, throttle.NoMaxPending}, {7, 7}, {DefaultThrottleMaxPending, DefaultThrottleMaxPending}} {
		c := DefaultConfig()
		c.ThrottleMaxPending = tt.env
		if got := envApp(c).limiterOptions().MaxPending; got != tt.want {
			t.Errorf("HUSH_THROTTLE_MAX_PENDING=%d: limiter MaxPending %d, want %d", tt.env, got, tt.want)
		}
	}
}
