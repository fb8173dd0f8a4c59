package docs_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hushpush/hush/worker"
)

// TestEvents: docs/events.md lists every event type (the worker's Event*
// constants, the job store's) and every JSON field of worker.Event, and
// no other; the fields it gives each type are real ones; it names the
// stream.
func TestEvents(t *testing.T) {
	md := readDoc(t, "events.md")
	fields := jsonFields(reflect.TypeFor[worker.Event](), "")
	if d := sameSet(fields, firstColumn(table(t, md, "| field | type | meaning |"))); d != "" {
		t.Errorf("docs/events.md's fields and worker.Event differ %s", d)
	}
	types := table(t, md, "| type | when | fields |")
	want := stringConsts(t, "../worker/internal/store", regexp.MustCompile(`^Event[A-Z]`))
	if d := sameSet(want, firstColumn(types)); d != "" {
		t.Errorf("docs/events.md's types and the worker's Event* constants differ %s", d)
	}
	// A field followed by a parenthesis, "`replaced_by` (collapsed
	// only)", is one only some events of the type carry.
	field := func(f string) (name string, optional bool) {
		f = strings.TrimSpace(f)
		if i := strings.Index(f, " ("); i >= 0 {
			return unquote(f[:i]), true
		}
		return unquote(f), false
	}
	for _, r := range types {
		for f := range strings.SplitSeq(r[2], ",") {
			if f, _ := field(f); !slices.Contains(fields, f) {
				t.Errorf("docs/events.md gives %s the field %q, which worker.Event does not have", r[0], f)
			}
		}
	}
	// Every example event carries exactly the fields its type's row lists,
	// less those only some carry (app among them: every event names its
	// job's app).
	listed, optional := map[string][]string{}, map[string][]string{}
	for _, r := range types {
		for f := range strings.SplitSeq(r[2], ",") {
			name, opt := field(f)
			if opt {
				optional[unquote(r[0])] = append(optional[unquote(r[0])], name)
			} else {
				listed[unquote(r[0])] = append(listed[unquote(r[0])], name)
			}
		}
	}
	examples := regexp.MustCompile(`(?m)^\{"type":.*\}$`).FindAllString(md, -1)
	if len(examples) == 0 {
		t.Error("docs/events.md has no example events")
	}
	for _, ex := range examples {
		var got map[string]any
		if err := json.Unmarshal([]byte(ex), &got); err != nil {
			t.Errorf("example %s: %v", ex, err)
			continue
		}
		typ, _ := got["type"].(string)
		for _, f := range optional[typ] {
			delete(got, f)
		}
		if d := sameSet(listed[typ], slices.Collect(maps.Keys(got))); d != "" {
			t.Errorf("example %s and the fields listed for %s differ %s", ex, typ, d)
		}
		if !slices.Contains(listed[typ], "app") {
			t.Errorf("docs/events.md does not list app among %s's fields; every event carries it", typ)
		}
	}
	if !strings.Contains(md, "`"+worker.EventsStream+"`") {
		t.Errorf("docs/events.md does not name the stream %s", worker.EventsStream)
	}
}
