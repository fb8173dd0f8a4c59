package worker

import "testing"

func TestGateOf(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cancelled bool
		err       error
		want      gate
	}{
		"not cancelled":                 {want: gateOpen},
		"cancelled":                     {cancelled: true, want: gateCancelled},
		"read failed":                   {err: errDropped, want: gateUnknown},
		"read failed, answer cancelled": {cancelled: true, err: errDropped, want: gateUnknown},
	} {
		t.Run(name, func(t *testing.T) {
			if got := gateOf(tc.cancelled, tc.err); got != tc.want {
				t.Errorf("gateOf(%v, %v) = %d, want %d", tc.cancelled, tc.err, got, tc.want)
			}
		})
	}
}
