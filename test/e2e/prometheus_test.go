package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/test/support"
)

// promQuery runs an instant query against a Prometheus server's HTTP API and returns the first
// sample's value.
func promQuery(addr, query string) (float64, error) {
	body, err := httpGet("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0, err
	}
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]interface{} `json:"value"`
			} `json:"result"`
		} `json:"data"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		return 0, fmt.Errorf("%w: %s", err, body)
	}
	if resp.Status != "success" {
		return 0, fmt.Errorf("query failed: %s", resp.Error)
	}
	if len(resp.Data.Result) == 0 {
		return 0, fmt.Errorf("no samples yet")
	}
	s, _ := resp.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}

// startPrometheus runs the Prometheus server bin with config (the text of prometheus.yml) in dir and
// returns its address. It is stopped when the test ends, and its log printed if the test failed.
func startPrometheus(t *testing.T, bin, dir, config string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(logFile.Name())
			t.Logf("prometheus log:\n%s", data)
		}
	})
	return addr
}

// promAPI GETs a path of a Prometheus server's HTTP API and decodes the response's data into out;
// a status other than success is an error with Prometheus's message.
func promAPI(addr, path string, out interface{}) error {
	body, err := httpGet("http://" + addr + path)
	if err != nil {
		return err
	}
	var resp struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		return fmt.Errorf("%w: %s", err, body)
	}
	if resp.Status != "success" {
		return fmt.Errorf("%s: %s", path, resp.Error)
	}
	return json.Unmarshal(resp.Data, out)
}

// promAlert is an alert as /api/v1/alerts lists it.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"` // pending or firing
}

func promAlerts(addr string) ([]promAlert, error) {
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	err := promAPI(addr, "/api/v1/alerts", &data)
	return data.Alerts, err
}

// findAlert finds the alert of that name whose labels include labels.
func findAlert(alerts []promAlert, name string, labels map[string]string) (promAlert, bool) {
	for _, a := range alerts {
		if a.Labels["alertname"] != name {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && a.Labels[k] == v
		}
		if match {
			return a, true
		}
	}
	return promAlert{}, false
}

// TestPrometheusScrapesSyncer: the real Prometheus server (built from its module), given the scrape job of
// manifests/monitoring/scrape-config.yaml, discovers the syncer's Pod (syncer-gen's manifest) through
// the edge apiserver (kubernetes_sd_configs), scrapes it and answers PromQL over it: the target is
// up, downsync writes and the sync-latency histogram are there.
func TestPrometheusScrapesSyncer(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("PROMETHEUS_BIN")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the Prometheus server is missing (PROMETHEUS_BIN=%q; `make prometheus-bin` builds it, `make test-e2e` sets it): %v", bin, err)
	}
	f := newFixture(t)
	ns := f.namespace("ns")
	for i := 0; i < 5; i++ {
		f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("c%d", i), map[string]interface{}{"k": "v"}))
	}
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	id, _, d := bootstrapPod(t, f, f.name, bootstrap.RBACBroad)
	f.waitFor(f.down, gvrConfigMaps, ns, "c4", hasMark)

	job, err := os.ReadFile(filepath.Join(repoRoot, "manifests", "monitoring", "scrape-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Outside the cluster: the edge's kubeconfig, and only this test's syncer.
	sd := "  - role: pod\n"
	if !strings.Contains(string(job), sd) {
		t.Fatalf("scrape-config.yaml has no %q", sd)
	}
	// And a token of the scraper's ServiceAccount, bound to the metrics-reader ClusterRole, where a
	// Prometheus in the cluster reads its own.
	const inCluster = "credentials_file: /var/run/secrets/kubernetes.io/serviceaccount/token"
	if !strings.Contains(string(job), inCluster) {
		t.Fatalf("scrape-config.yaml has no %q", inCluster)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(d.scraperToken()), 0o600); err != nil {
		t.Fatal(err)
	}
	config := "global:\n  scrape_interval: 1s\n" + strings.Replace(strings.Replace(string(job), sd,
		sd+"    kubeconfig_file: "+env.Downstream.Kubeconfig+"\n    namespaces:\n      names: ["+id+"]\n", 1),
		inCluster, "credentials_file: "+tokenFile, 1)
	addr := startPrometheus(t, bin, t.TempDir(), config)
	pod := d.pod()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the syncer's pod (restarted %d times):\n%s", d.restarts(pod.Name), d.describe())
		}
	})

	for _, q := range []struct {
		query string
		min   float64
	}{
		{`up{job="kubestellar-syncer",pod="` + pod.Name + `",instance=~".*:` + strconv.Itoa(bootstrap.MetricsPort) + `"}`, 1},
		{`kubestellar_syncer_objects_managed{direction="downsync",resource="configmaps"}`, 5},
		// At least one: under load a create that timed out but landed is taken over by an update.
		{`sum(kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="created"})`, 1},
		{`sum(kubestellar_syncer_sync_latency_seconds_count{direction="downsync",resource="configmaps"})`, 1},
		{`sum(workqueue_adds_total{job="kubestellar-syncer",name="downsync"})`, 5},
		{`sum(rest_client_requests_total{job="kubestellar-syncer",code="200"})`, 1},
		{`sum(rest_client_request_duration_seconds_count{job="kubestellar-syncer"})`, 1},
	} {
		eventually(t, 60*time.Second, "Prometheus answers "+q.query, func() (bool, string) {
			v, err := promQuery(addr, q.query)
			if err != nil {
				return false, err.Error()
			}
			return v >= q.min, fmt.Sprintf("%s = %v, want >= %v", q.query, v, q.min)
		})
	}
}

// forClause matches the `for:` duration of an alerting rule in a rule file.
var forClause = regexp.MustCompile(`(?m)^(\s+for:\s*)\S+\s*$`)

// TestPrometheusAlerts: the production alerting rules (manifests/monitoring/rules.yaml) pass
// `promtool check rules` and their promtool unit tests, load into the real Prometheus server, and
// fire on real syncers: a target that does not answer makes KubestellarSyncerDown fire, and a
// partitioned upstream KubestellarSyncerUnreachable{side="upstream"}, its annotations rendered. A
// standby replica, which exports leader 0 and no heartbeat time, does not look dead (it exports
// build_info and the reachability of the downstream, where its Lease is) and never makes
// KubestellarSyncerHeartbeatMissing fire. Every query of the Grafana dashboard is valid PromQL.
func TestPrometheusAlerts(t *testing.T) {
	bin, promtool := os.Getenv("PROMETHEUS_BIN"), os.Getenv("PROMTOOL_BIN")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the Prometheus server is missing (PROMETHEUS_BIN=%q; `make prometheus-bin` builds it, `make test-e2e` sets it): %v", bin, err)
	}
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("promtool is missing (PROMTOOL_BIN=%q; `make prometheus-bin` builds it, `make test-e2e` sets it): %v", promtool, err)
	}
	rulesPath := filepath.Join(repoRoot, "manifests", "monitoring", "rules.yaml")
	out, err := support.PromtoolCheckRules(promtool, rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(out))
	if out, err = support.PromtoolTestRules(promtool, rulesPath, filepath.Join(repoRoot, "manifests", "testdata", "rules-test.yaml"), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(out))

	// A leader whose upstream goes through a proxy (to partition it), and a standby of the same sync
	// target. Default Lease timings: the leader must not lose its Lease on a busy machine.
	f := newFixture(t)
	ns := f.namespace("ns")
	leaseNS := f.name + "-lease"
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", leaseNS, nil))
	t.Cleanup(func() { f.delete(f.down, gvrNamespaces, "", leaseNS) })
	f.create(f.up, gvrConfigMaps, configMap(ns, "c0", map[string]interface{}{"k": "v"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	u, err := url.Parse(upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := startProxy(t, u.Host)
	args := withArgs("--upstream-kubeconfig="+proxiedKubeconfig(t, upstream, px.addr), "--heartbeat-period=2s",
		"--leader-elect", "--leader-elect-resource-namespace="+leaseNS)
	leader := f.startSyncer(args)
	f.waitFor(f.down, gvrConfigMaps, ns, "c0", hasMark)
	eventually(t, 30*time.Second, "the first syncer leads and beats", func() (bool, string) {
		m := leader.metrics()
		return m["kubestellar_syncer_leader{}"] == 1 && m["kubestellar_syncer_last_heartbeat_timestamp_seconds{}"] > 0, fmt.Sprint(m["kubestellar_syncer_leader{}"])
	})
	standby := f.startSyncer(args)
	eventually(t, 30*time.Second, "the second syncer stands by", func() (bool, string) {
		code, body := standby.probe("/readyz")
		return code == 200 && strings.Contains(body, "standby"), fmt.Sprintf("/readyz %d %s", code, body)
	})
	m := standby.metrics()
	leading, hasLeader := m["kubestellar_syncer_leader{}"]
	heartbeat, hasHeartbeat := m["kubestellar_syncer_last_heartbeat_timestamp_seconds{}"]
	if !hasLeader || leading != 0 || hasHeartbeat {
		t.Fatalf("the standby exports leader %v (exported: %v) and heartbeat %v (exported: %v), want leader 0 and no heartbeat time",
			leading, hasLeader, heartbeat, hasHeartbeat)
	}
	if m[`kubestellar_syncer_reachable{side="downstream"}`] != 1 {
		t.Errorf("the standby does not export its downstream as reachable: %v", m)
	}
	build := false
	for k, v := range m {
		build = build || (strings.HasPrefix(k, "kubestellar_syncer_build_info{") && v == 1)
	}
	if !build {
		t.Errorf("the standby exports no build_info: %v", m)
	}
	dead := freeAddr(t) // nothing listens there

	// The production rule file with every `for:` cut to 1s, so that an alert fires within the test's
	// time; expressions, labels and annotations are the file's own.
	rules, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(forClause.FindAll(rules, -1)); n == 0 {
		t.Fatal("no `for:` in the rule file: the test's rewrite does not match it any more")
	}
	dir := t.TempDir()
	fastRules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(fastRules, forClause.ReplaceAll(rules, []byte("${1}1s")), 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [%q]\n"+
		"scrape_configs:\n- job_name: kubestellar-syncer\n  static_configs:\n  - targets: [%q, %q, %q]\n",
		fastRules, leader.metricsAddr, standby.metricsAddr, dead)
	addr := startPrometheus(t, bin, dir, config)

	var groups struct {
		Groups []struct {
			Rules []struct {
				Name   string `json:"name"`
				Health string `json:"health"`
				State  string `json:"state"`
			} `json:"rules"`
		} `json:"groups"`
	}
	want := bytes.Count(rules, []byte("\n  - alert: "))
	eventually(t, 60*time.Second, "Prometheus loads the rules", func() (bool, string) {
		if err := promAPI(addr, "/api/v1/rules", &groups); err != nil {
			return false, err.Error()
		}
		n := 0
		for _, g := range groups.Groups {
			n += len(g.Rules)
		}
		return n == want, fmt.Sprintf("%d rules loaded, want %d (rules.yaml's)", n, want)
	})
	eventually(t, 60*time.Second, "KubestellarSyncerDown fires for the target that does not answer", func() (bool, string) {
		alerts, err := promAlerts(addr)
		if err != nil {
			return false, err.Error()
		}
		a, ok := findAlert(alerts, "KubestellarSyncerDown", map[string]string{"instance": dead})
		return ok && a.State == "firing", fmt.Sprintf("%+v", alerts)
	})
	// The standby is scraped, as a standby with no heartbeat time: what the heartbeat rule must not
	// fire on (the check after the partition below).
	eventually(t, 30*time.Second, "Prometheus sees the standby, with no heartbeat time", func() (bool, string) {
		v, err := promQuery(addr, fmt.Sprintf(`kubestellar_syncer_leader{instance=%q} == 0 unless on (job, instance) kubestellar_syncer_last_heartbeat_timestamp_seconds`,
			standby.metricsAddr))
		return err == nil && v == 0, fmt.Sprintf("%v %v", v, err)
	})

	px.stop() // partition: the leader's upstream refuses connections
	var fired promAlert
	eventually(t, 60*time.Second, "KubestellarSyncerUnreachable fires for the leader's upstream", func() (bool, string) {
		alerts, err := promAlerts(addr)
		if err != nil {
			return false, err.Error()
		}
		a, ok := findAlert(alerts, "KubestellarSyncerUnreachable", map[string]string{"instance": leader.metricsAddr, "side": "upstream"})
		fired = a
		return ok && a.State == "firing", fmt.Sprintf("%+v", alerts)
	})
	if s := fired.Annotations["summary"]; !strings.Contains(s, leader.metricsAddr) || !strings.Contains(s, "upstream") {
		t.Errorf("the summary %q does not name the instance and the side", s)
	}
	if d := fired.Annotations["description"]; !strings.Contains(d, "the mailbox workspace") || strings.Contains(d, "{{") {
		t.Errorf("the description is not rendered for the upstream: %q", d)
	}
	if fired.Labels["severity"] != "critical" {
		t.Errorf("severity %q, want critical", fired.Labels["severity"])
	}

	// By now every rule has been evaluated every second for many seconds with `for: 1s`.
	alerts, err := promAlerts(addr)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := findAlert(alerts, "KubestellarSyncerHeartbeatMissing", nil); ok {
		t.Errorf("KubestellarSyncerHeartbeatMissing is %s for %s (the standby is %s)", a.State, a.Labels["instance"], standby.metricsAddr)
	}
	if err := promAPI(addr, "/api/v1/rules", &groups); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Health != "ok" {
				t.Errorf("rule %s: health %q", r.Name, r.Health)
			}
		}
	}

	// The dashboard's queries, its template variables given values, are valid PromQL.
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "manifests", "monitoring", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$__rate_interval", "1m", "$job", "kubestellar-syncer", "$instance", ".*")
	queries := 0
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
			queries++
			var result json.RawMessage
			if err := promAPI(addr, "/api/v1/query?query="+url.QueryEscape(vars.Replace(q.Expr)), &result); err != nil {
				t.Errorf("dashboard panel %q: %v", p.Title, err)
			}
		}
	}
	t.Logf("%d dashboard queries accepted by Prometheus", queries)
}
