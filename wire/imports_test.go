package wire_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyStdlib: the package, with everything it imports
// transitively, needs nothing beyond the standard library, as doc.go
// promises the client that shares it.
func TestImportsOnlyStdlib(t *testing.T) {
	const self = "github.com/hushpush/hush/wire"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		if dep != self {
			t.Errorf("wire depends on %s; it may import only the standard library", dep)
		}
	}
	if len(deps) == 0 {
		t.Errorf("go list -deps did not list the package itself")
	}
}
