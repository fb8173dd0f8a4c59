package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
)

// The monitoring files deploy/ ships, relative to this package.
const (
	promRulesFile = "../../deploy/prometheus/hush-rules.yaml"
	dashboardFile = "../../deploy/grafana/hush-dashboard.json"
)

// mayBeEmpty are the series a small load on a healthy hush does not make:
// a query is allowed to return nothing only when it names one of them.
// Each is a failure the test does not stage, because staging it would
// break the process under test.
var mayBeEmpty = map[string]string{
	"hush_late_sends_total":       "only a process too slow for its slots (saturated CPU, a pause) counts late sends",
	"hush_events_dropped_total":   "only a Redis refusing the stream's writes drops events",
	"hush_webhook_posts_total":    "only a process with HUSH_WEBHOOK_URL posts events",
	"hush_app_waiting_deliveries": "only a delivery whose app, or the app's sender for its platform, its process lacks (an apps file rolled out process by process) waits for its app",
}

// TestE2EPrometheusQueries runs a real Prometheus scraping a real hush serve
// under a small load that moves every counter the monitoring reads
// (deliveries in every common state, deferrals, a provider's throttling, a
// refused key, a dead token, an apps reload), loads deploy/'s alerting
// rules into it, and evaluates every dashboard query and every operand of
// every alert expression: each must name only metrics hush exports and
// return data, except those naming mayBeEmpty's series. Prometheus must
// evaluate every rule without error, and the refused key must raise
// HushCredentialsRefused.
func TestE2EPrometheusQueries(t *testing.T) {
	needBinary(t)
	prom := needPrometheus(t)
	c := startCluster(t, clusterOptions{procs: 1, concurrency: 8, maxRetry: 3})
	p := c.procs[0]

	pr := startPrometheus(t, prom, p.addr)

	// The load: bursts beyond the rules (allowed, waited, deferred), pushes
	// with a ttl shorter than their slot (expired), a dead FCM token, an APNs
	// key the provider refuses, and APNs throttling.
	b := burst{prefix: "prom", users: 3, perUser: 3 * e2eN}
	jobs, _ := b.jobs()
	for k := range 2 * e2eN {
		j, _ := notificationJob("prom-expiring", k)
		j.TTL = payload.Duration(time.Second)
		jobs = append(jobs, j)
	}
	c.fcm.Script(fcmToken("prom-dead"), fake.Unregistered())
	c.apns.Script(apnsToken("prom-refused"), fake.APNsReason(403, "InvalidProviderToken"), fake.APNsReason(403, "InvalidProviderToken"))
	c.apns.Script(apnsToken("prom-throttled"), fake.TooMany(time.Second))
	for _, u := range []string{"prom-dead", "prom-refused", "prom-throttled"} {
		j, _ := notificationJob(u, 0)
		jobs = append(jobs, j)
	}
	c.submit(jobs, c.procs, "")
	c.sighup()

	queries := monitoringQueries(t)
	exported := map[string]bool{}
	empty := map[string]string{}
	waitExplained(t, 3*time.Minute, func() bool {
		clear(empty)
		for q, where := range queries {
			if n, err := pr.count(q); err != nil {
				t.Fatalf("%s: %s: %v", where, q, err)
			} else if n == 0 && allowedEmpty(q) == "" {
				empty[q] = where
			}
		}
		return len(empty) == 0
	}, func() string {
		var lines []string
		for q, where := range empty {
			lines = append(lines, fmt.Sprintf("%s: %s", where, q))
		}
		slices.Sort(lines)
		return "queries that return nothing:\n" + strings.Join(lines, "\n")
	})

	r, err := c.do(p, http.MethodGet, "/metrics", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)`).FindAllStringSubmatch(string(r.Body), -1) {
		exported[m[1]] = true
	}
	for q, where := range queries {
		for _, name := range metricNames(q) {
			if !exported[name] && allowedEmpty(name) == "" {
				t.Errorf("%s names %s, which hush does not export (its /metrics has no such family)", where, name)
			}
		}
	}

	waitExplained(t, 2*time.Minute, func() bool {
		return pr.alertActive("HushCredentialsRefused")
	}, func() string { return "HushCredentialsRefused is neither pending nor firing after a refused APNs key" })
	for _, bad := range pr.unhealthyRules() {
		t.Error(bad)
	}
}

// needPrometheus returns the prometheus binary's path: the test skips
// without one, and fails under CI=true (.ci/run installs Debian's
// prometheus package).
func needPrometheus(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("prometheus")
	if err == nil {
		return path
	}
	if testkit.InCI() {
		t.Fatalf("CI=true but no prometheus on PATH (.ci/run installs Debian's prometheus): %v", err)
	}
	t.Skipf("no prometheus on PATH (Debian's prometheus package): %v", err)
	return ""
}

// promServer is a Prometheus process of the test's own.
type promServer struct {
	t    *testing.T
	base string // http://127.0.0.1:port
	http *http.Client
}

// startPrometheus starts Prometheus scraping target every second, with
// deploy/'s rules loaded, and waits until it is ready.
func startPrometheus(t *testing.T, bin, target string) *promServer {
	t.Helper()
	dir := t.TempDir()
	rules, err := filepath.Abs(promRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: hush
    static_configs:
      - targets: [%q]
`, rules, target)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("--- last lines of prometheus's log (%s) ---\n%s", logPath, tail(logPath, 30))
		}
	})
	s := &promServer{t: t, base: "http://" + addr, http: &http.Client{Timeout: 10 * time.Second}}
	waitExplained(t, time.Minute, func() bool {
		select {
		case <-exited:
			t.Fatalf("prometheus exited:\n%s", tail(logPath, 30))
		default:
		}
		resp, err := s.http.Get(s.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return "prometheus not ready:\n" + tail(logPath, 30) })
	return s
}

// freeAddr is a loopback address with a port nobody listened on a moment
// ago (Prometheus does not report the port it picks for :0).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// api GETs one Prometheus API path and decodes its data into out.
func (s *promServer) api(path string, q url.Values, out any) error {
	resp, err := s.http.Get(s.base + path + "?" + q.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("GET %s: %s", path, r.Error)
	}
	return json.Unmarshal(r.Data, out)
}

// count evaluates query now and returns how many series it gives.
func (s *promServer) count(query string) (int, error) {
	var data struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	}
	if err := s.api("/api/v1/query", url.Values{"query": {query}}, &data); err != nil {
		return 0, err
	}
	if data.ResultType == "scalar" {
		return 1, nil
	}
	return len(data.Result), nil
}

type promRule struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
	State     string `json:"state"`
}

func (s *promServer) rules() []promRule {
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	if err := s.api("/api/v1/rules", nil, &data); err != nil {
		s.t.Fatal(err)
	}
	var out []promRule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// alertActive reports whether the alert is pending or firing.
func (s *promServer) alertActive(name string) bool {
	for _, r := range s.rules() {
		if r.Name == name {
			return r.State == "pending" || r.State == "firing"
		}
	}
	s.t.Fatalf("Prometheus has no rule %s (rules loaded: %v)", name, s.rules())
	return false
}

// unhealthyRules describes each loaded rule Prometheus could not evaluate.
func (s *promServer) unhealthyRules() []string {
	var out []string
	for _, r := range s.rules() {
		if r.Health != "ok" {
			out = append(out, fmt.Sprintf("rule %s: health %q: %s", r.Name, r.Health, r.LastError))
		}
	}
	return out
}

// monitoringQueries returns every query deploy/ ships, with where it is
// from: each dashboard target and template variable, with Grafana's
// variables given the values "All" gives them, and each operand of each
// alert expression (alertOperands).
func monitoringQueries(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	src, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(src, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	grafana := strings.NewReplacer("$__rate_interval", "1m", "$app", ".*", "$job", ".*")
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			out[grafana.Replace(q.Expr)] = "dashboard panel " + strconv.Quote(p.Title)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((\w+),\s*(\w+)\)$`)
	for _, v := range d.Templating.List {
		q, ok := v.Query.(map[string]any)
		if !ok {
			continue
		}
		m := labelValues.FindStringSubmatch(fmt.Sprint(q["query"]))
		if m == nil {
			t.Fatalf("dashboard variable %s: query %v is not label_values(metric, label)", v.Name, q["query"])
		}
		out[fmt.Sprintf("count by (%s) (%s)", m[2], m[1])] = "dashboard variable " + v.Name
	}

	rules, err := os.ReadFile(promRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alertExprs(string(rules)) {
		for _, op := range alertOperands(a.expr) {
			out[op] = "alert " + a.name
		}
	}
	if len(out) == 0 {
		t.Fatal("no queries found in deploy/'s monitoring files")
	}
	return out
}

type alertExpr struct{ name, expr string }

// alertExprs reads the alerts of a rules file as hush writes it: "- alert:
// Name" followed by "expr:" on one line, or "expr: >-" and an indented
// block (the main module has no YAML parser; deploy's tests decode the
// file strictly).
func alertExprs(src string) []alertExpr {
	var out []alertExpr
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if name, ok := strings.CutPrefix(l, "- alert: "); ok {
			out = append(out, alertExpr{name: name})
			continue
		}
		e, ok := strings.CutPrefix(l, "expr: ")
		if !ok || len(out) == 0 {
			continue
		}
		if e == ">-" {
			indent := len(lines[i+1]) - len(strings.TrimLeft(lines[i+1], " "))
			var block []string
			for i+1 < len(lines) && len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) >= indent && strings.TrimSpace(lines[i+1]) != "" {
				i++
				block = append(block, strings.TrimSpace(lines[i]))
			}
			e = strings.Join(block, " ")
		}
		out[len(out)-1].expr = e
	}
	return out
}

// alertOperands splits an alert expression at its top-level comparison and
// set operators (an alert's expression returns nothing while all is well,
// by design: what must return data is what it compares) and returns the
// operands that are queries, their vector matching modifiers dropped.
func alertOperands(expr string) []string {
	var parts []string
	depth, start := 0, 0
	inString := false
	for i := 0; i < len(expr); i++ {
		ch := expr[i]
		switch {
		case inString:
			if ch == '\\' {
				i++
			} else if ch == '"' {
				inString = false
			}
			continue
		case ch == '"':
			inString = true
		case ch == '(' || ch == '{' || ch == '[':
			depth++
		case ch == ')' || ch == '}' || ch == ']':
			depth--
		}
		if depth != 0 {
			continue
		}
		for _, op := range []string{">=", "<=", "==", "!=", ">", "<", " and ", " or ", " unless "} {
			if strings.HasPrefix(expr[i:], op) {
				parts = append(parts, expr[start:i])
				i += len(op) - 1
				start = i + 1
				break
			}
		}
	}
	parts = append(parts, expr[start:])
	modifier := regexp.MustCompile(`^(bool\s+|(on|ignoring|group_left|group_right)\s*\([^)]*\)\s*)+`)
	number := regexp.MustCompile(`^[0-9.e+-]+$`)
	var out []string
	for _, p := range parts {
		p = strings.TrimSpace(modifier.ReplaceAllString(strings.TrimSpace(p), ""))
		if p != "" && !number.MatchString(p) {
			out = append(out, p)
		}
	}
	return out
}

// metricNames lists the metrics a query names (a histogram's by its
// family name, without _bucket, _sum or _count).
func metricNames(query string) []string {
	var out []string
	for _, n := range regexp.MustCompile(`\b(hush|process|go)_[a-z_]+\b`).FindAllString(query, -1) {
		out = append(out, regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(n, ""))
	}
	return out
}

// allowedEmpty returns why query may return nothing: the reason of the
// mayBeEmpty series it names, "" when none.
func allowedEmpty(query string) string {
	for series, why := range mayBeEmpty {
		if strings.Contains(query, series) {
			return why
		}
	}
	return ""
}

// waitExplained polls cond until it holds, failing the test with why()
// once timeout has passed.
func waitExplained(t *testing.T, timeout time.Duration, cond func() bool, why func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, why())
		}
		time.Sleep(250 * time.Millisecond)
	}
}
