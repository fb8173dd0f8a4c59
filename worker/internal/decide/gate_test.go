package decide

import (
	"errors"
	"testing"
)

func TestGateOf(t *testing.T) {
	t.Parallel()
	errDropped := errors.New("injected: connection dropped")
	for name, tc := range map[string]struct {
		cancelled bool
		err       error
		want      Gate
	}{
		"not cancelled":                 {want: GateOpen},
		"cancelled":                     {cancelled: true, want: GateCancelled},
		"read failed":                   {err: errDropped, want: GateUnknown},
		"read failed, answer cancelled": {cancelled: true, err: errDropped, want: GateUnknown},
	} {
		t.Run(name, func(t *testing.T) {
			if got := GateOf(tc.cancelled, tc.err); got != tc.want {
				t.Errorf("GateOf(%v, %v) = %d, want %d", tc.cancelled, tc.err, got, tc.want)
			}
		})
	}
}
