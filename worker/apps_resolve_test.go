package worker

import (
	"testing"
	"time"

	"github.com/hushpush/hush/throttle"
)

// TestResolveNamesWhatIsMissing: a request that names no app gets the
// only app, or the one named default; with several and none of them
// default the error says an app is required and lists them, rather than
// blaming an app "default" nobody named.
func TestResolveNamesWhatIsMissing(t *testing.T) {
	lim, err := throttle.NewMemory(throttle.Policy{MinGap: time.Second}, throttle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	apps := func(names ...string) *Apps {
		var as []App
		for _, n := range names {
			as = append(as, App{Name: n, Limiter: lim})
		}
		a, err := NewApps(as...)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	tests := []struct {
		name    string
		apps    *Apps
		ask     string
		want    string // the app resolved
		wantErr string
	}{
		{"the only app", apps("shop"), "", "shop", ""},
		{"default among several", apps("default", "shop"), "", "default", ""},
		{"none named among several", apps("courier", "shop"), "", "", "required: none named, and this deployment serves several apps (configured: courier, shop)"},
		{"an unknown one", apps("courier", "shop"), "nope", "", `unknown app "nope" (configured: courier, shop)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.apps.Resolve(tt.ask)
			switch {
			case tt.wantErr != "":
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("resolve(%q) error %v, want %q", tt.ask, err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("resolve(%q): %v", tt.ask, err)
			case got.Name != tt.want:
				t.Errorf("resolve(%q) = %s, want %s", tt.ask, got.Name, tt.want)
			}
		})
	}
}
