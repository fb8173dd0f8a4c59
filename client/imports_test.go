package client_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportsOnlyStdlibPayloadAndWire: the package, with everything it
// imports transitively, needs nothing beyond the standard library and
// hush's payload and wire, as doc.go promises backends.
func TestImportsOnlyStdlibPayloadAndWire(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := []string{"github.com/hushpush/hush/client", "github.com/hushpush/hush/payload", "github.com/hushpush/hush/wire"}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		if !slices.Contains(allowed, dep) {
			t.Errorf("client depends on %s; it may import only the standard library, %s and %s", dep, allowed[1], allowed[2])
		}
	}
	if !slices.Contains(deps, allowed[0]) {
		t.Errorf("go list -deps did not list the package itself: %q", deps)
	}
}
