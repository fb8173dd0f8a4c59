package docs_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hushpush/hush/throttle"
)

// TestLimiter: docs/limiter.md lists exactly the limiter's refusals (the
// throttle.Refused* constants) and names its key schema.
func TestLimiter(t *testing.T) {
	md := readDoc(t, "limiter.md")
	want := stringConsts(t, "../throttle", regexp.MustCompile(`^Refused[A-Z]`))
	if d := sameSet(want, firstColumn(table(t, md, "| refusal | meaning |"))); d != "" {
		t.Errorf("docs/limiter.md's refusals and throttle's Refused* constants differ %s", d)
	}
	if key := throttle.DefaultPrefix + "{<user>}"; !strings.Contains(md, "`"+key+"`") {
		t.Errorf("docs/limiter.md does not name the key schema %s", key)
	}
}
