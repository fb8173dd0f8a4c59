package testkit

import (
	"os"
	"strconv"
	"testing"
)

// SlowEnv is the environment variable that runs the slow tier locally:
// HUSH_TESTS=all. CI (CI=true) always runs it.
const SlowEnv = "HUSH_TESTS"

// InCI reports whether the tests run under CI (CI=true), where every test
// runs and every fallback away from a real Redis or a real tool is an error.
func InCI() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

// RunSlow reports whether the slow tier runs: under CI, or with
// HUSH_TESTS=all.
func RunSlow() bool { return InCI() || os.Getenv(SlowEnv) == "all" }

// Slow skips t unless the slow tier runs (RunSlow). why says what makes
// the test slow (processes it starts, a kill -9, a Redis Cluster); the skip
// message says how to run it. Plain `go test ./...` runs the fast tier,
// CI and HUSH_TESTS=all run every test. A benchmark is never skipped:
// -bench already asks for it by name.
func Slow(t testing.TB, why string) {
	t.Helper()
	if _, bench := t.(*testing.B); bench {
		return
	}
	if !RunSlow() {
		t.Skipf("slow tier (%s): run with %s=all, as CI does", why, SlowEnv)
	}
}
