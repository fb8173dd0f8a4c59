package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hushpush/hush/internal/testkit"
)

// hushBin is the hush binary the end-to-end tests run as separate
// processes. TestMain builds it once (without -race: the processes under
// test are the product, the race detector runs on the test process) and sets
// it before any test starts, when the slow tier runs; nothing writes it
// afterwards.
var hushBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if !testkit.RunSlow() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "hush-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		os.Exit(1)
	}
	hushBin = filepath.Join(dir, "hush")
	build := exec.Command("go", "build", "-o", hushBin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build -o %s . failed: %v\n%s", hushBin, err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// needBinary skips a multi-process test unless the slow tier runs.
func needBinary(t *testing.T) {
	t.Helper()
	testkit.Slow(t, "starts hush serve processes")
}
