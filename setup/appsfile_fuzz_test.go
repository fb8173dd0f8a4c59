package setup

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzAppsFile reads any text as an apps file, offline (readApps: no
// credential is loaded, no provider called). The answer is bounded: the
// file is read, its problems are at most a few per byte and their text a
// small multiple of the file's, and it comes back without a panic, also
// when the file names a device such as /dev/zero. Without -fuzz, `go test`
// runs the seed corpus in testdata/fuzz/FuzzAppsFile:
//
//	go test -run '^$' -fuzz FuzzAppsFile -fuzztime 60s ./setup/
func FuzzAppsFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := DefaultConfig()
		cfg.AppsFile = filepath.Join(t.TempDir(), "apps.yaml")
		if err := os.WriteFile(cfg.AppsFile, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ac, err := readApps(cfg, false)
		if err != nil {
			t.Fatalf("readApps: %v", err)
		}
		if n := len(ac.ps.list); n > 2*len(data)+2 {
			t.Errorf("%d problems from %d bytes", n, len(data))
		}
		text := 0
		for _, p := range ac.ps.list {
			text += len(p.Error())
		}
		if limit := 64*len(data) + 4096; text > limit {
			t.Errorf("problems of %d bytes from %d bytes (limit %d)", text, len(data), limit)
		}
		if len(ac.ps.list) == 0 && len(ac.specs) == 0 {
			t.Errorf("no problem and no app")
		}
		for _, a := range ac.specs {
			if a.broken {
				continue
			}
			if b := bounds()["ThrottleMaxPending"]; !b.contains(int64(a.maxPending)) {
				t.Errorf("app %s: max_pending %d accepted, out of %s", a.name, a.maxPending, b.text(nil))
			}
			if b := bounds()["ThrottleMinGap"]; !b.contains(int64(a.policy.MinGap)) {
				t.Errorf("app %s: min_gap %s accepted, out of %s", a.name, a.policy.MinGap, b.text(durationType))
			}
			if err := a.policy.Validate(); err != nil {
				t.Errorf("app %s: invalid rules accepted: %v", a.name, err)
			}
		}
	})
}
