package testkit

import "testing"

func TestSlowRunsOnlyWhenAsked(t *testing.T) {
	tests := []struct {
		name, ci, tiers string
		runs            bool
	}{
		{"plain go test", "", "", false},
		{"CI", "true", "", true},
		{"HUSH_TESTS=all", "", "all", true},
		{"another HUSH_TESTS", "", "fast", false},
		{"CI=false", "false", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			t.Setenv(SlowEnv, tt.tiers)
			ran := false
			t.Run("slow", func(t *testing.T) {
				Slow(t, "a test of Slow")
				ran = true
			})
			if ran != tt.runs {
				t.Errorf("CI=%q %s=%q: the slow test ran: %v, want %v", tt.ci, SlowEnv, tt.tiers, ran, tt.runs)
			}
		})
	}
}
