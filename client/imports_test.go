package client_test

import (
	"testing"

	"github.com/hushpush/hush/internal/testkit"
)

// TestImportsOnlyStdlibPayloadAndWire: the package, with everything it
// imports transitively, needs nothing beyond the standard library and
// hush's payload and wire, as doc.go promises backends.
func TestImportsOnlyStdlibPayloadAndWire(t *testing.T) {
	testkit.OnlyImports(t, "github.com/hushpush/hush/client", "github.com/hushpush/hush/payload", "github.com/hushpush/hush/wire")
}
