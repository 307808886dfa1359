package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
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

// TestPrometheusScrapesSyncer: the real Prometheus server (Debian's package) scrapes the syncer's
// /metrics and answers PromQL over it: the target is up, downsync writes and the sync-latency
// histogram are there.
func TestPrometheusScrapesSyncer(t *testing.T) {
	bin := os.Getenv("PROMETHEUS_BIN")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the Prometheus server is missing (PROMETHEUS_BIN=%q; `make prometheus-bin` fetches it, `make test-e2e` sets it): %v", bin, err)
	}
	f := newFixture(t)
	ns := f.namespace("ns")
	for i := 0; i < 5; i++ {
		f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("c%d", i), map[string]interface{}{"k": "v"}))
	}
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	p := f.startSyncer()
	f.waitFor(f.down, gvrConfigMaps, ns, "c4", hasMark)

	dir := t.TempDir()
	config := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n- job_name: kubestellar-syncer\n  static_configs:\n  - targets: [%q]\n", p.metricsAddr)
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

	for _, q := range []struct {
		query string
		min   float64
	}{
		{`up{job="kubestellar-syncer"}`, 1},
		{`sum(kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="created"})`, 5},
		{`sum(kubestellar_syncer_sync_latency_seconds_count{direction="downsync",resource="configmaps"})`, 5},
		{`kubestellar_syncer_objects_managed{direction="downsync",resource="configmaps"}`, 5},
		{`sum(kubestellar_syncer_workqueue_adds_total{name="downsync"})`, 5},
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
