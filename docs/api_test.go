package docs_test

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"

	"github.com/hushpush/hush/docs"
	"github.com/hushpush/hush/wire"
)

// TestAPIRoutes: docs/api.md's route table lists exactly the operations of
// docs/openapi.yaml, which worker/httpapi's tests keep equal to the
// handler's routes.
func TestAPIRoutes(t *testing.T) {
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	var want []string
	for path, item := range m.Model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().KeysFromOldest() {
			want = append(want, strings.ToUpper(method)+" "+path)
		}
	}
	got := firstColumn(table(t, readDoc(t, "api.md"), "| route | what it does |"))
	if d := sameSet(want, got); d != "" {
		t.Errorf("docs/api.md's routes and docs/openapi.yaml's operations differ %s", d)
	}
}

// TestAPIAnswers: docs/api.md lists every job state and every JSON field of
// the job status (wire.JobStatus) and of the limiter status
// (wire.ThrottleStatus), and no other.
func TestAPIAnswers(t *testing.T) {
	md := readDoc(t, "api.md")
	states := stringConsts(t, "../wire", regexp.MustCompile(`^State[A-Z]`))
	if d := sameSet(states, firstColumn(table(t, md, "| job state | meaning |"))); d != "" {
		t.Errorf("docs/api.md's job states and wire's State* constants differ %s", d)
	}
	for _, c := range []struct {
		typ    reflect.Type
		header string
	}{
		{reflect.TypeFor[wire.JobStatus](), "| job status field | meaning |"},
		{reflect.TypeFor[wire.ThrottleStatus](), "| throttle status field | meaning |"},
	} {
		var want []string
		for _, f := range jsonFields(c.typ, "") {
			if !strings.Contains(f, ".") {
				want = append(want, f) // the parts of remaining and entries are shown inline
			}
		}
		if d := sameSet(want, firstColumn(table(t, md, c.header))); d != "" {
			t.Errorf("docs/api.md's table %q and %s differ %s", c.header, c.typ, d)
		}
	}
}
