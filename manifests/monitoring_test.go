package manifests_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/syncer/pkg/credential"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/reachability"
	"github.com/kubestellar/syncer/test/support"
)

// The monitoring manifests. rules.yaml is the one source of truth of the alerting rules;
// prometheusrule.yaml is generated from it (TestPrometheusRuleIsRulesYAML).
const (
	rulesFile          = "monitoring/rules.yaml"
	prometheusRuleFile = "monitoring/prometheusrule.yaml"
	dashboardFile      = "monitoring/grafana-dashboard.json"
	rulesTestFile      = "testdata/rules-test.yaml"
)

var update = flag.Bool("update", false, "write "+prometheusRuleFile+" from "+rulesFile)

const prometheusRuleHeader = `# Generated from rules.yaml, the one source of truth, by
#   go test ./manifests -run TestPrometheusRuleIsRulesYAML -update
# Do not edit. The syncer's alerting rules as a PrometheusRule for the Prometheus Operator: apply it
# in a namespace your Prometheus watches for rules, with labels its ruleSelector matches (for
# kube-prometheus-stack, release: <the Helm release>). rules.yaml says what the rules expect.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: kubestellar-syncer
  labels:
    app.kubernetes.io/name: kubestellar-syncer
    app.kubernetes.io/component: alerting-rules
spec:
`

// prometheusRule renders the PrometheusRule from the rule file: its groups, comments included,
// indented under spec.
func prometheusRule(rules []byte) ([]byte, error) {
	i := bytes.Index(rules, []byte("\ngroups:\n"))
	if i < 0 {
		return nil, fmt.Errorf("%s has no top-level groups:", rulesFile)
	}
	out := bytes.NewBufferString(prometheusRuleHeader)
	for _, line := range strings.SplitAfter(string(rules[i+1:]), "\n") {
		if strings.TrimSpace(line) != "" {
			out.WriteString("  ")
		}
		out.WriteString(line)
	}
	return out.Bytes(), nil
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestPrometheusRuleIsRulesYAML: prometheusrule.yaml is exactly what rules.yaml generates, and its
// spec.groups parse to the rule file's groups. With -update it is written anew.
func TestPrometheusRuleIsRulesYAML(t *testing.T) {
	rules := read(t, rulesFile)
	want, err := prometheusRule(rules)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(prometheusRuleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := read(t, prometheusRuleFile)
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not generated from %s; run: go test ./manifests -run TestPrometheusRuleIsRulesYAML -update\n%s",
			prometheusRuleFile, rulesFile, cmp.Diff(string(want), string(got)))
	}
	var file struct {
		Groups []interface{} `json:"groups"`
	}
	var rule struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Groups []interface{} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(rules, &file); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if err := yaml.Unmarshal(got, &rule); err != nil {
		t.Fatalf("%s: %v", prometheusRuleFile, err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" {
		t.Errorf("%s is a %s %s, want a monitoring.coreos.com/v1 PrometheusRule", prometheusRuleFile, rule.APIVersion, rule.Kind)
	}
	if len(file.Groups) == 0 {
		t.Fatalf("%s has no groups", rulesFile)
	}
	if diff := cmp.Diff(file.Groups, rule.Spec.Groups); diff != "" {
		t.Errorf("the groups of %s and %s differ (-rules.yaml +prometheusrule.yaml):\n%s", rulesFile, prometheusRuleFile, diff)
	}
}

type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func alertRules(t *testing.T) []alertRule {
	t.Helper()
	var file struct {
		Groups []struct {
			Name  string      `json:"name"`
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(read(t, rulesFile), &file); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var out []alertRule
	for _, g := range file.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// TestAlertsAreExplained: the alerts docs/operations.md promises are there, each with a severity, a summary,
// a description and a runbook hint.
func TestAlertsAreExplained(t *testing.T) {
	rules := alertRules(t)
	seen := map[string]bool{}
	for _, r := range rules {
		seen[r.Alert] = true
		if r.Alert == "" || strings.TrimSpace(r.Expr) == "" {
			t.Errorf("rule %+v: want an alert with an expression", r)
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
		}
		for _, a := range []string{"summary", "description", "runbook"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
	}
	for _, name := range []string{"KubestellarSyncerDown", "KubestellarSyncerHeartbeatMissing", "KubestellarSyncerWriteErrors",
		"KubestellarSyncerConflicts", "KubestellarSyncerBacklog", "KubestellarSyncerLagHigh", "KubestellarSyncerWriteLoop",
		"KubestellarSyncerMissedDeletion", "KubestellarSyncerDeletionsHeld", "KubestellarSyncerUnreachable", "KubestellarSyncerFenceMissing"} {
		if !seen[name] {
			t.Errorf("no alert %s", name)
		}
	}
}

// TestRulesWithPromtool: promtool accepts the rule file and its unit tests (testdata/rules-test.yaml:
// each alert fires on synthetic series, and a standby replica never makes the heartbeat alert fire)
// pass. It needs PROMTOOL_BIN (`make prometheus-bin`); the e2e suite runs the same checks and
// requires it.
func TestRulesWithPromtool(t *testing.T) {
	promtool := os.Getenv("PROMTOOL_BIN")
	if promtool == "" {
		support.Skip(t, "PROMTOOL_BIN is not set: skipping promtool check/test rules (`make prometheus-bin` builds promtool; test/e2e runs these checks too)")
	}
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("PROMTOOL_BIN=%q: %v", promtool, err)
	}
	out, err := support.PromtoolCheckRules(promtool, rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(out))
	if out, err = support.PromtoolTestRules(promtool, rulesFile, rulesTestFile, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(out))
}

// dashboard is the part of the Grafana dashboard the tests look at.
type dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string      `json:"name"`
			Type       string      `json:"type"`
			Query      interface{} `json:"query"`
			Datasource *datasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	Targets    []struct {
		Datasource *datasource `json:"datasource"`
		Expr       string      `json:"expr"`
		RefID      string      `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a row's
}

func (p panel) all() []panel {
	out := []panel{p}
	for _, c := range p.Panels {
		out = append(out, c.all()...)
	}
	return out
}

// TestDashboard: the Grafana dashboard is well-formed JSON of a recent schema, takes its data
// source from the template variable ${datasource} in every panel and query, and has a panel for each
// thing docs/operations.md lists.
func TestDashboard(t *testing.T) {
	data := read(t, dashboardFile)
	if !json.Valid(data) {
		t.Fatalf("%s is not valid JSON", dashboardFile)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q, uid %q: want both", d.Title, d.UID)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d: want a recent one (36 or later)", d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Datasource != nil && v.Datasource.UID != "${datasource}" {
			t.Errorf("template variable %s: data source %+v, want uid ${datasource}", v.Name, *v.Datasource)
		}
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("no data source template variable named datasource (variables: %v)", vars)
	}
	ids := map[int]string{}
	var exprs []string
	for _, top := range d.Panels {
		for _, p := range top.all() {
			if p.Type == "row" {
				continue
			}
			if other, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share the id %d", other, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" || p.Datasource.Type != "prometheus" {
				t.Errorf("panel %q: data source %+v, want prometheus ${datasource}", p.Title, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, q := range p.Targets {
				if strings.TrimSpace(q.Expr) == "" || q.RefID == "" {
					t.Errorf("panel %q: a query without expr or refId", p.Title)
				}
				if q.Datasource == nil || q.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q, query %s: data source %+v, want uid ${datasource}", p.Title, q.RefID, q.Datasource)
				}
				exprs = append(exprs, q.Expr)
			}
		}
	}
	all := strings.Join(exprs, "\n")
	for _, want := range []string{"kubestellar_syncer_writes_total", "kubestellar_syncer_sync_latency_seconds_bucket",
		"kubestellar_syncer_objects_managed", "workqueue_depth", "kubestellar_syncer_api_requests_total", "kubestellar_syncer_reachable",
		"kubestellar_syncer_leader", "kubestellar_syncer_last_heartbeat_timestamp_seconds", "kubestellar_syncer_informers_running",
		"kubestellar_syncer_informers_synced"} {
		if !regexp.MustCompile(`\b` + want + `\b`).MatchString(all) {
			t.Errorf("no panel queries %s", want)
		}
	}
	t.Logf("%d panels, %d queries", len(ids), len(exprs))
}

// recordingRegisterer remembers the metric names of every collector registered through it.
type recordingRegisterer struct {
	prometheus.Registerer
	names map[string]bool
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return r.Registerer.Register(c)
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// syncerMetricNames are the series names the syncer's registry exposes: every family gathered from
// metrics.New and reachability.New, each of its metrics given a sample first (a vector without one is not gathered), with
// the series a histogram or summary is made of, and those of the process collector main registers
// next to them (process_start_time_seconds, ...).
func syncerMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rec := &recordingRegisterer{Registerer: reg, names: map[string]bool{}}
	m := metrics.New(rec)
	m.APIRequests.WithLabelValues("upstream", "GET", "200").Inc()
	m.Writes.WithLabelValues(metrics.Downsync, "configmaps", metrics.Created).Inc()
	m.InformersRunning.WithLabelValues("upstream").Set(1)
	m.InformersSynced.WithLabelValues("upstream").Set(1)
	m.SyncLatency.WithLabelValues(metrics.Downsync, "configmaps").Observe(0.1)
	reachability.New(rec, "upstream", "downstream")
	// A ServiceAccount token (its claims: default/syncer, an hour's life), not renewed here.
	credential.New(context.Background(), credential.Config{Bootstrap: "e30.eyJpYXQiOjE4MDAwMDAwMDAsImV4cCI6MTgwMDAwMzYwMCwia3ViZXJuZXRlcy5pbyI6eyJuYW1lc3BhY2UiOiJkZWZhdWx0Iiwic2VydmljZWFjY291bnQiOnsibmFtZSI6InN5bmNlciJ9fX0.sig", Off: "a test", Registerer: rec})
	m.ClientRequests.WithLabelValues("200", "GET", "host").Inc()
	m.ClientRequestLatency.WithLabelValues("GET", "host").Observe(0.1)
	m.ClientRateLimiterLatency.WithLabelValues("GET", "host").Observe(0.1)
	m.LastHeartbeat.SetToCurrentTime()
	m.SetObjectCounter(func(add func(direction, resource string, n int)) { add(metrics.Downsync, "configmaps", 1) })
	q := m.WorkqueueProvider()
	q.NewDepthMetric("downsync").Inc()
	q.NewAddsMetric("downsync").Inc()
	q.NewLatencyMetric("downsync").Observe(0.1)
	q.NewWorkDurationMetric("downsync").Observe(0.1)
	q.NewUnfinishedWorkSecondsMetric("downsync").Set(1)
	q.NewLongestRunningProcessorSecondsMetric("downsync").Set(1)
	q.NewRetriesMetric("downsync").Inc()

	if len(rec.names) == 0 {
		t.Fatal("metrics.New registered nothing through the recording registerer")
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	gathered := map[string]bool{}
	for _, f := range families {
		name := f.GetName()
		gathered[name] = true
		switch f.GetType().String() {
		case "HISTOGRAM", "GAUGE_HISTOGRAM":
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case "SUMMARY":
			names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
		default: // counters are named with _total already
			names[name] = true
		}
	}
	for name := range rec.names {
		if !gathered[name] {
			// Registered, but this test gave it no sample: its plain name is known, not its type.
			t.Logf("metric %s is registered but was not gathered (give it a sample in syncerMetricNames to check its _bucket/_sum/_count)", name)
			names[name] = true
		}
	}
	if len(names) < 20 {
		t.Fatalf("only %d metric names gathered: %v", len(names), names)
	}
	return names
}

// metricName matches the names of the syncer's metrics: its own, client-go's under the names
// Kubernetes components give them, and the process collector's.
var metricName = regexp.MustCompile(`\b(?:kubestellar_syncer|workqueue|rest_client|process)_[a-z_]+`)

// TestMonitoringNamesExistingMetrics: every name of the syncer's metrics (kubestellar_syncer_*,
// workqueue_*, rest_client_*, process_*) in the dashboard and the rules (queries, and the hints in
// annotations and comments) is a series the syncer exposes.
func TestMonitoringNamesExistingMetrics(t *testing.T) {
	known := syncerMetricNames(t)
	checked := 0
	for _, file := range []string{dashboardFile, rulesFile, prometheusRuleFile} {
		used := map[string]bool{}
		for _, name := range metricName.FindAllString(string(read(t, file)), -1) {
			used[name] = true
		}
		if len(used) == 0 {
			t.Errorf("%s names no metric of the syncer", file)
		}
		var unknown []string
		for name := range used {
			checked++
			if !known[name] {
				unknown = append(unknown, name)
			}
		}
		sort.Strings(unknown)
		for _, name := range unknown {
			t.Errorf("%s uses %s, which the syncer does not expose", file, name)
		}
		t.Logf("%s: %d distinct metric names, all checked", file, len(used))
	}
	t.Logf("checked %d names against the %d series names pkg/metrics registers", checked, len(known))
}
