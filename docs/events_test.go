package docs_test

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hushpush/hush/worker"
)

// TestEvents: docs/events.md lists every event type (the worker's Event*
// constants) and every JSON field of worker.Event, and no other; the
// fields it gives each type are real ones; it names the stream.
func TestEvents(t *testing.T) {
	md := readDoc(t, "events.md")
	fields := jsonFields(reflect.TypeFor[worker.Event](), "")
	if d := sameSet(fields, firstColumn(table(t, md, "| field | type | meaning |"))); d != "" {
		t.Errorf("docs/events.md's fields and worker.Event differ %s", d)
	}
	types := table(t, md, "| type | when | fields |")
	want := stringConsts(t, "../worker", regexp.MustCompile(`^Event[A-Z]`))
	if d := sameSet(want, firstColumn(types)); d != "" {
		t.Errorf("docs/events.md's types and the worker's Event* constants differ %s", d)
	}
	for _, r := range types {
		for f := range strings.SplitSeq(r[2], ",") {
			if f = unquote(strings.TrimSpace(f)); !slices.Contains(fields, f) {
				t.Errorf("docs/events.md gives %s the field %q, which worker.Event does not have", r[0], f)
			}
		}
	}
	if !strings.Contains(md, "`"+worker.EventsStream+"`") {
		t.Errorf("docs/events.md does not name the stream %s", worker.EventsStream)
	}
}
