package providers_test

import (
	"testing"

	"github.com/hushpush/hush/providers"
)

func TestOutcomeString(t *testing.T) {
	tests := []struct {
		o    providers.Outcome
		want string
	}{
		{providers.Delivered, "delivered"},
		{providers.TokenInvalid, "token_invalid"},
		{providers.Throttled, "throttled"},
		{providers.Transient, "transient"},
		{providers.Permanent, "permanent"},
		{providers.Outcome(42), "outcome(42)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.o.String(); got != tt.want {
				t.Errorf("Outcome(%d).String() = %q, want %q", int(tt.o), got, tt.want)
			}
		})
	}
}
