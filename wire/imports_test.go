package wire_test

import (
	"testing"

	"github.com/hushpush/hush/internal/testkit"
)

// TestImportsOnlyStdlib: the package, with everything it imports
// transitively, needs nothing beyond the standard library, as doc.go
// promises the client that shares it.
func TestImportsOnlyStdlib(t *testing.T) {
	testkit.OnlyImports(t, "github.com/hushpush/hush/wire")
}
