package worker

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hushpush/hush/internal/redismetrics"
)

// TestOperationsListsEveryMetric: docs/operations.md's metrics table has
// one row per hush_ metric the worker (and hush serve beside it) registers, with its labels, and no
// row for a metric it does not: an operator building dashboards and
// alerts from the table finds every series /metrics serves.
func TestOperationsListsEveryMetric(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	registered := map[string]string{} // name -> labels, sorted, comma-separated
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		e.w.m.reg.Describe(ch)
		// hush serve registers the Redis client's metrics beside the
		// worker's (Options.Metrics, setup/serve.go).
		redismetrics.New().Describe(ch)
		close(ch)
	}()
	descRE := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		if !strings.HasPrefix(m[1], "hush_") {
			continue // the Go runtime's and the process's own
		}
		registered[m[1]] = sortedLabels(m[2])
	}
	if len(registered) == 0 {
		t.Fatal("no hush_ metric registered")
	}

	readme, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "**Metrics** (`/metrics`):")
	if !ok {
		t.Fatal("docs/operations.md: no **Metrics** (`/metrics`) table")
	}
	table, _, _ = strings.Cut(table, "\n\n\n")
	rowRE := regexp.MustCompile("(?m)^\\| `(hush_[a-z_]+)(?:\\{([^}]*)\\})?` \\|")
	listed := map[string]string{}
	for _, m := range rowRE.FindAllStringSubmatch(table, -1) {
		if _, dup := listed[m[1]]; dup {
			t.Errorf("docs/operations.md lists %s twice", m[1])
		}
		listed[m[1]] = sortedLabels(m[2])
	}
	for name, labels := range registered {
		got, ok := listed[name]
		switch {
		case !ok:
			t.Errorf("docs/operations.md's metrics table lacks %s{%s}", name, labels)
		case got != labels:
			t.Errorf("docs/operations.md lists %s{%s}, the worker registers it with {%s}", name, got, labels)
		}
	}
	for name := range listed {
		if _, ok := registered[name]; !ok {
			t.Errorf("docs/operations.md lists %s, which the worker does not register", name)
		}
	}
}

// sortedLabels is a comma-separated label list, its labels sorted and
// unquoted.
func sortedLabels(s string) string {
	var out []string
	for l := range strings.SplitSeq(s, ",") {
		if l = strings.Trim(strings.TrimSpace(l), `"`); l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
