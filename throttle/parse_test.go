package throttle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/throttle"
)

func TestParseLimits(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []throttle.Limit
	}{
		{"empty", "", nil},
		{"one", "10/1m", []throttle.Limit{{10, time.Minute}}},
		{"several with spaces", " 10/1m , 100/24h,3/500ms ", []throttle.Limit{{10, time.Minute}, {100, 24 * time.Hour}, {3, 500 * time.Millisecond}}},
		{"days", "1000/7d", []throttle.Limit{{1000, 7 * 24 * time.Hour}}},
		{"go duration", "5/1m30s", []throttle.Limit{{5, 90 * time.Second}}},
		{"spaces inside", "5 / 2s", []throttle.Limit{{5, 2 * time.Second}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := throttle.ParseLimits(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func TestParseLimitsErrors(t *testing.T) {
	tests := []struct {
		name, in, bad, msg string
	}{
		{"zero window", "10/0s", "10/0s", `throttle: limit "10/0s": window must be positive`},
		{"negative window", "10/1m,5/-1s", "5/-1s", `throttle: limit "5/-1s": window must be positive`},
		{"zero count", "0/1m", "0/1m", `throttle: limit "0/1m": count must be positive`},
		{"negative count", "-3/1m", "-3/1m", `throttle: limit "-3/1m": count must be positive`},
		{"no slash", "10", "10", `throttle: limit "10": want N/W, e.g. 10/1m`},
		{"count not a number", "ten/1m", "ten/1m", `throttle: limit "ten/1m": count "ten" is not an integer`},
		{"bad unit", "10/1x", "10/1x", `throttle: limit "10/1x": window "1x" is not a duration: write a number and a unit (ms, s, m, h or d), e.g. 1m or 24h`},
		{"rules separated by a semicolon", "10/1m;100/24h", "10/1m;100/24h", `throttle: limit "10/1m;100/24h": window "1m;100/24h" is not a duration: write a number and a unit (ms, s, m, h or d), e.g. 1m or 24h; separate rules with commas, e.g. "10/1m,100/24h"`},
		{"missing unit", "10/5", "10/5", `throttle: limit "10/5": window "5" is not a duration: write a number and a unit (ms, s, m, h or d), e.g. 1m or 24h`},
		{"bad days", "10/1.5d", "10/1.5d", `throttle: limit "10/1.5d": window "1.5d" is not a duration: write a number and a unit (ms, s, m, h or d), e.g. 1m or 24h`},
		{"sub-millisecond", "10/1500us", "10/1500us", `throttle: limit "10/1500us": window must be a whole number of milliseconds`},
		{"stray comma", "10/1m,,5/1h", "", `throttle: limit "": empty item (stray comma?)`},
		{"empty window", "10/", "10/", `throttle: limit "10/": window "" is not a duration: write a number and a unit (ms, s, m, h or d), e.g. 1m or 24h`},
		{"signed count", "+5/1m", "+5/1m", `throttle: limit "+5/1m": count "+5": write the number without a sign`},
		{"signed window", "5/+1m", "5/+1m", `throttle: limit "5/+1m": window "+1m": write the duration without a sign`},
		{"signed days", "5/+7d", "5/+7d", `throttle: limit "5/+7d": window "+7d": write the duration without a sign`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := throttle.ParseLimits(tt.in)
			var pe *throttle.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want *ParseError", err, err)
			}
			if pe.Text != tt.bad {
				t.Errorf("ParseError.Text = %q, want %q", pe.Text, tt.bad)
			}
			if got := err.Error(); got != tt.msg {
				t.Errorf("message\n got %s\nwant %s", got, tt.msg)
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	tests := []struct {
		name, limits, gap string
		want              throttle.Policy
		wantString        string
	}{
		{"limits and gap", "10/1m,100/24h", "3s", throttle.Policy{Limits: []throttle.Limit{{10, time.Minute}, {100, 24 * time.Hour}}, MinGap: 3 * time.Second}, "10/1m,100/24h min-gap 3s"},
		{"gap only", "", "250ms", throttle.Policy{MinGap: 250 * time.Millisecond}, "min-gap 250ms"},
		{"gap zero", "1/1s", "0", throttle.Policy{Limits: []throttle.Limit{{1, time.Second}}}, "1/1s"},
		{"gap empty", "1/1s", "", throttle.Policy{Limits: []throttle.Limit{{1, time.Second}}}, "1/1s"},
		{"gap in days", "1/1s", "1d", throttle.Policy{Limits: []throttle.Limit{{1, time.Second}}, MinGap: 24 * time.Hour}, "1/1s min-gap 24h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := throttle.ParsePolicy(tt.limits, tt.gap)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
			if s := got.String(); s != tt.wantString {
				t.Errorf("String() = %q, want %q", s, tt.wantString)
			}
		})
	}
}

func TestParsePolicyErrors(t *testing.T) {
	tests := []struct {
		name, limits, gap string
		wantParse         bool // a *ParseError; else ErrInvalidPolicy
	}{
		{"bad limit", "10/0s", "1s", true},
		{"gap not a duration", "10/1m", "abc", true},
		{"negative gap", "10/1m", "-1s", true},
		{"sub-millisecond gap", "10/1m", "10us", true},
		{"signed gap", "10/1m", "+1s", true},
		{"nothing at all", "", "", false},
		{"nothing but a zero gap", " ", "0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := throttle.ParsePolicy(tt.limits, tt.gap)
			var pe *throttle.ParseError
			switch {
			case err == nil:
				t.Fatal("no error")
			case tt.wantParse && !errors.As(err, &pe):
				t.Errorf("error %v (%T), want *ParseError", err, err)
			case !tt.wantParse && !errors.Is(err, throttle.ErrInvalidPolicy):
				t.Errorf("error %v, want ErrInvalidPolicy", err)
			}
		})
	}
}

func TestLimitStringRoundTrips(t *testing.T) {
	for _, l := range []throttle.Limit{
		{10, time.Minute}, {100, 24 * time.Hour}, {3, 1500 * time.Millisecond},
		{1, 90 * time.Second}, {7, 7 * 24 * time.Hour}, {2, time.Millisecond}, {5, time.Hour + time.Millisecond},
	} {
		t.Run(l.String(), func(t *testing.T) {
			got, err := throttle.ParseLimits(l.String())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]throttle.Limit{l}, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
	if got := (throttle.Limit{N: 10, Window: time.Minute}).String(); got != "10/1m" {
		t.Errorf("String() = %q, want 10/1m", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		p    throttle.Policy
	}{
		{"zero N", throttle.Policy{Limits: []throttle.Limit{{0, time.Minute}}}},
		{"negative N", throttle.Policy{Limits: []throttle.Limit{{-1, time.Minute}}}},
		{"zero window", throttle.Policy{Limits: []throttle.Limit{{1, 0}}}},
		{"negative window", throttle.Policy{Limits: []throttle.Limit{{1, -time.Second}}}},
		{"sub-millisecond window", throttle.Policy{Limits: []throttle.Limit{{1, time.Microsecond}}}},
		{"negative gap", throttle.Policy{Limits: []throttle.Limit{{1, time.Second}}, MinGap: -time.Second}},
		{"empty", throttle.Policy{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Validate(); !errors.Is(err, throttle.ErrInvalidPolicy) {
				t.Errorf("Validate() = %v, want ErrInvalidPolicy", err)
			}
			if _, err := throttle.NewMemory(tt.p, throttle.Options{}); !errors.Is(err, throttle.ErrInvalidPolicy) {
				t.Errorf("NewMemory: %v, want ErrInvalidPolicy", err)
			}
			// No connection is made: the policy is rejected first.
			if _, err := throttle.NewRedis(nil, tt.p, throttle.Options{}); !errors.Is(err, throttle.ErrInvalidPolicy) {
				t.Errorf("NewRedis: %v, want ErrInvalidPolicy", err)
			}
		})
	}
	if err := (throttle.Policy{MinGap: time.Second}).Validate(); err != nil {
		t.Errorf("gap-only policy: %v", err)
	}
}
