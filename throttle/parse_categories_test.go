package throttle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/throttle"
)

func quietPtr(from, to time.Duration) *throttle.Quiet { return &throttle.Quiet{From: from, To: to} }

func TestParseCategories(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]throttle.Category
	}{
		{"empty", "", nil},
		{"only separators", " ; ;", nil},
		{"the issue's example", "marketing=2/1d,1/4h@1h;social=10/1h@30s;transactional=none", map[string]throttle.Category{
			"marketing":     {Limits: []throttle.Limit{{2, 24 * time.Hour}, {1, 4 * time.Hour}}, MinGap: time.Hour},
			"social":        {Limits: []throttle.Limit{{10, time.Hour}}, MinGap: 30 * time.Second},
			"transactional": {Quiet: quietPtr(0, 0)},
		}},
		{"options", "marketing=2/1d quiet=21:00-09:00; transactional=none global=off quiet=22:00-06:00; ops=@1m global=off quiet=off", map[string]throttle.Category{
			"marketing":     {Limits: []throttle.Limit{{2, 24 * time.Hour}}, Quiet: quietPtr(21*time.Hour, 9*time.Hour)},
			"transactional": {SkipGlobal: true, Quiet: quietPtr(22*time.Hour, 6*time.Hour)},
			"ops":           {MinGap: time.Minute, SkipGlobal: true, Quiet: quietPtr(0, 0)},
		}},
		{"spaces in the rules", "social = 10/1h, 20/1d @ 30s", map[string]throttle.Category{
			"social": {Limits: []throttle.Limit{{10, time.Hour}, {20, 24 * time.Hour}}, MinGap: 30 * time.Second},
		}},
		{"global=on is the default", "news=3/1h global=on", map[string]throttle.Category{
			"news": {Limits: []throttle.Limit{{3, time.Hour}}},
		}},
		{"required", "security=none global=off required=on; news=3/1h required=off", map[string]throttle.Category{
			"security": {SkipGlobal: true, Required: true},
			"news":     {Limits: []throttle.Limit{{3, time.Hour}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := throttle.ParseCategories(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
			// String round-trips.
			for name, k := range got {
				again, err := throttle.ParseCategories(name + "=" + k.String())
				if err != nil {
					t.Fatalf("%s=%s: %v", name, k, err)
				}
				if diff := cmp.Diff(k, again[name]); diff != "" {
					t.Errorf("%s=%s does not round-trip: -want +got:\n%s", name, k, diff)
				}
			}
		})
	}
}

func TestParseCategoriesErrors(t *testing.T) {
	tests := []struct{ name, in, msg string }{
		{"no =", "marketing", `throttle: category "marketing": want NAME=RULES, e.g. marketing=2/1d,1/4h@1h or transactional=none`},
		{"capital name", "Marketing=2/1d", `throttle: category "Marketing=2/1d": name "Marketing" must be 1 to 32 of a-z, 0-9, _ and -`},
		{"name with a colon", "a:b=2/1d", `throttle: category "a:b=2/1d": name "a:b" must be 1 to 32 of a-z, 0-9, _ and -`},
		{"twice", "a=1/1h;a=2/1h", `throttle: category "a=2/1h": defined twice`},
		{"no rules", "a=", `throttle: category "a=": no rules (write none for only the global rules)`},
		{"only options", "a=global=off", `throttle: category "a=global=off": no rules (write none for only the global rules)`},
		{"bad limit", "a=2/1x", `throttle: category "a=2/1x": limit "2/1x": window "1x" is not a duration: write a number and a unit (ms, s, m, h or d), e.g. 1m or 24h`},
		{"bad gap", "a=2/1d@-1s", `throttle: category "a=2/1d@-1s": min gap "-1s": must not be negative`},
		{"bad global", "a=none global=no", `throttle: category "a=none global=no": global=no: want global=off (exempt from the global rules) or global=on`},
		{"bad required", "a=none required=yes", `throttle: category "a=none required=yes": required=yes: want required=on (users cannot opt out of it) or required=off`},
		{"bad quiet", "a=none quiet=22-08", `throttle: category "a=none quiet=22-08": quiet=22-08: want quiet=HH:MM-HH:MM (e.g. quiet=21:00-09:00) or quiet=off`},
		{"signed count", "a=+2/1d", `throttle: category "a=+2/1d": limit "+2/1d": count "+2": write the number without a sign`},
		{"signed window", "a=2/+1d", `throttle: category "a=2/+1d": limit "2/+1d": window "+1d": write the duration without a sign`},
		{"signed gap", "a=2/1d@+1h", `throttle: category "a=2/1d@+1h": min gap "+1h": write the duration without a sign`},
		{"signed quiet", "a=none quiet=+9:+0-08:00", `throttle: category "a=none quiet=+9:+0-08:00": quiet=+9:+0-08:00: want quiet=HH:MM-HH:MM (e.g. quiet=21:00-09:00) or quiet=off`},
		{"unknown option", "a=none burst=3", `throttle: category "a=none burst=3": unknown option "burst" (options are global=, quiet= and required=)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := throttle.ParseCategories(tt.in)
			var pe *throttle.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *ParseError", err)
			}
			if err.Error() != tt.msg {
				t.Errorf("error\n  %s\nwant\n  %s", err, tt.msg)
			}
		})
	}
}

func TestParseQuiet(t *testing.T) {
	good := []struct {
		in   string
		want throttle.Quiet
	}{
		{"", throttle.Quiet{}},
		{"off", throttle.Quiet{}},
		{"22:00-08:00", throttle.Quiet{From: 22 * time.Hour, To: 8 * time.Hour}},
		{" 01:30 - 05:45 ", throttle.Quiet{From: 90 * time.Minute, To: 5*time.Hour + 45*time.Minute}},
		{"23:59:30-00:00", throttle.Quiet{From: 23*time.Hour + 59*time.Minute + 30*time.Second, To: 0}},
	}
	for _, g := range good {
		got, err := throttle.ParseQuiet(g.in)
		if err != nil || got != g.want {
			t.Errorf("ParseQuiet(%q) = %v, %v; want %v", g.in, got, err, g.want)
		}
		if again, err := throttle.ParseQuiet(got.String()); err != nil || again != got {
			t.Errorf("ParseQuiet(%q.String() = %q) = %v, %v", g.in, got, again, err)
		}
	}
	bad := []struct{ in, msg string }{
		{"22:00", `throttle: quiet hours "22:00": want HH:MM-HH:MM, e.g. 22:00-08:00, or off`},
		{"22-08", `throttle: quiet hours "22-08": start: "22" is not HH:MM`},
		{"24:00-08:00", `throttle: quiet hours "24:00-08:00": start: "24:00" is not HH:MM (00:00 to 23:59)`},
		{"22:00-8:00", `throttle: quiet hours "22:00-8:00": end: "8:00" is not HH:MM (00:00 to 23:59)`},
		{"08:00-08:00", `throttle: quiet hours "08:00-08:00": start and end are the same time (write off for no quiet hours)`},
		{"+9:+0-08:00", `throttle: quiet hours "+9:+0-08:00": start: "+9:+0" is not HH:MM (00:00 to 23:59)`},
		{"22:00-+8:00", `throttle: quiet hours "22:00-+8:00": end: "+8:00" is not HH:MM (00:00 to 23:59)`},
		{"22:00-08:+0", `throttle: quiet hours "22:00-08:+0": end: "08:+0" is not HH:MM (00:00 to 23:59)`},
	}
	for _, b := range bad {
		_, err := throttle.ParseQuiet(b.in)
		if err == nil || err.Error() != b.msg {
			t.Errorf("ParseQuiet(%q) error\n  %v\nwant\n  %s", b.in, err, b.msg)
		}
	}
}
