package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The monitoring files, relative to this package: the alerting rules as a
// plain Prometheus rules file with its promtool unit tests, and the Grafana
// dashboard. The production overlay carries the same rules as a
// PrometheusRule.
const (
	rulesFile     = "prometheus/hush-rules.yaml"
	rulesTestFile = "prometheus/hush-rules.test.yaml"
	dashboardFile = "grafana/hush-dashboard.json"
	metricsDoc    = "../docs/operations.md" // its Metrics table lists what hush exports
)

// prometheusRule is the Prometheus Operator's monitoring.coreos.com/v1
// PrometheusRule, as far as hush's overlay uses it (decoded strictly, so a
// field it does not have is an error).
type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`
}

// ruleGroup is one group of a Prometheus rules file.
type ruleGroup struct {
	Name     string      `json:"name"`
	Interval string      `json:"interval,omitempty"`
	Rules    []alertRule `json:"rules"`
}

// alertRule is one alerting rule (hush ships no recording rules).
type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// readRulesFile decodes the plain rules file strictly.
func readRulesFile(t *testing.T) []ruleGroup {
	t.Helper()
	src, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []ruleGroup `json:"groups"`
	}
	if err := decodeStrict(src, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return f.Groups
}

// TestPrometheusRuleIsTheRulesFile: the production overlay's PrometheusRule
// holds exactly the rules file's groups, so neither drifts from the rules
// promtool checks.
func TestPrometheusRuleIsTheRulesFile(t *testing.T) {
	b, err := loadBundle(overlayProduction)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.rules) != 1 {
		t.Fatalf("production renders %d PrometheusRules, want 1", len(b.rules))
	}
	if diff := cmp.Diff(readRulesFile(t), b.rules[0].Spec.Groups); diff != "" {
		t.Errorf("PrometheusRule groups differ from %s (-file +PrometheusRule):\n%s", rulesFile, diff)
	}
}

// TestRulesHaveRunbooks: every alert says how bad it is and what to do.
func TestRulesHaveRunbooks(t *testing.T) {
	for _, g := range readRulesFile(t) {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a rule without an alert name (hush ships alerting rules only)", g.Name)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, s)
			}
			for _, k := range []string{"summary", "description", "runbook"} {
				if strings.TrimSpace(r.Annotations[k]) == "" {
					t.Errorf("%s: no %s annotation", r.Alert, k)
				}
			}
		}
	}
}

// needTool returns the path of a binary the test needs; it skips the test
// when the binary is missing, and fails it under CI=true (.ci/run installs
// it).
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatalf("CI=true but no %s on PATH (.ci/run installs Debian's %s): %v", name, pkg, err)
	}
	t.Skipf("no %s on PATH (Debian's %s package): %v", name, pkg, err)
	return ""
}

// TestPromtool: Prometheus's own checker accepts the rules file, and the
// alerts fire as hush-rules.test.yaml says on its series.
func TestPromtool(t *testing.T) {
	promtool := needTool(t, "promtool", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", filepath.Base(rulesFile)},
		{"test", "rules", filepath.Base(rulesTestFile)},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = filepath.Dir(rulesFile)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	src, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(src, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// TestDashboard: every panel has its own id and place, reads the
// dashboard's Prometheus data source, and has a query.
func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: want both (Grafana imports by uid)", d.UID, d.Title)
	}
	ids := map[int]string{}
	for _, p := range d.Panels {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v does not fit the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %q, want ${datasource} (the dashboard's variable)", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q, query %s: empty", p.Title, q.RefID)
			}
		}
	}
}

// metricName matches the hush metrics a query names; histogramSuffix is
// what PromQL adds to a histogram's name.
var (
	metricName      = regexp.MustCompile(`\bhush_[a-z_]+\b`)
	histogramSuffix = regexp.MustCompile(`_(bucket|sum|count)$`)
	documentedName  = regexp.MustCompile("(?m)^\\| `(hush_[a-z_]+)")
)

// TestMonitoringNamesDocumentedMetrics: every hush metric the dashboard and
// the rules name is in docs/operations.md's Metrics table. (cmd/hush's
// TestE2EPrometheusQueries checks the same queries against a running hush.)
func TestMonitoringNamesDocumentedMetrics(t *testing.T) {
	doc, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range documentedName.FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1])
	}
	if len(documented) == 0 {
		t.Fatalf("%s: no metrics table found", metricsDoc)
	}
	queries := map[string]string{} // query -> where
	for _, g := range readRulesFile(t) {
		for _, r := range g.Rules {
			queries[r.Expr] = rulesFile + " " + r.Alert
		}
	}
	d := readDashboard(t)
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			queries[q.Expr] = dashboardFile + " " + p.Title
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			queries[q["query"].(string)] = dashboardFile + " variable " + v.Name
		}
	}
	for q, where := range queries {
		for _, name := range metricName.FindAllString(q, -1) {
			if !slices.Contains(documented, name) && !slices.Contains(documented, histogramSuffix.ReplaceAllString(name, "")) {
				t.Errorf("%s names %s, which %s does not list", where, name, metricsDoc)
			}
		}
	}
}
