package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/syncer/test/support"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/syncer/manifests"
	"github.com/kubestellar/syncer/test/testenv"
)

// The mailbox's habitat: what every real upstream (a kcp workspace above all) has that a bare
// kube-apiserver in a lab does not — controllers that make objects in every namespace, APIs that
// come by binding, CRDs established some seconds after they are accepted.

// TestSystemObjectsIdle: a SyncerConfig selecting every ConfigMap and ServiceAccount of a namespace,
// and upsyncing every ConfigMap of it, syncs the user's objects, leaves each side's own
// kube-root-ca.crt and ServiceAccount default alone (both sides' controllers make them), and then
// idles with no writes at all and Ready=True.
func TestSystemObjectsIdle(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.up, gvrConfigMaps, configMap(ns, "app", map[string]interface{}{"k": "v"}))
	f.create(f.up, gvrServiceAccounts, obj("v1", "ServiceAccount", ns, "builder", nil))
	// The upstream's own controllers make these in every namespace.
	upCA := f.waitFor(f.up, gvrConfigMaps, ns, "kube-root-ca.crt", nil)
	f.waitFor(f.up, gvrServiceAccounts, ns, "default", nil)

	spec := nsScope([]string{ns}, resource("", "v1", "configmaps"), resource("", "v1", "serviceaccounts"))
	spec["upsync"] = []interface{}{map[string]interface{}{"apiGroup": "", "resources": []interface{}{"configmaps"},
		"namespaces": []interface{}{ns}, "names": []interface{}{"*"}}}
	f.syncerConfig(f.name, spec)
	// A heartbeat slow enough to leave the second of stillness waitSettled looks for between beats.
	p := f.startSyncer(withArgs("--heartbeat-period=3s"))
	f.waitFor(f.down, gvrConfigMaps, ns, "app", hasMark)
	f.waitFor(f.down, gvrServiceAccounts, ns, "builder", hasMark)
	edgeCA := f.waitFor(f.down, gvrConfigMaps, ns, "kube-root-ca.crt", nil)
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		st, reason, msg := conditionOf(o, "Ready")
		return st == "True", fmt.Sprintf("Ready %s %s %q", st, reason, msg)
	})
	p.waitSettled()

	// Quiet window: for its whole length, no write in any direction (the heartbeat is a status write
	// of the SyncerConfig, not counted here).
	const quietWindow = 10 * time.Second
	writes := func() string {
		var out []string
		for k, v := range p.metrics() {
			if strings.HasPrefix(k, "kubestellar_syncer_writes_total{") {
				out = append(out, fmt.Sprintf("%s=%v", k, v))
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	before := writes()
	consistently(t, quietWindow, "no writes while idle", func() (bool, string) {
		now := writes()
		return now == before, fmt.Sprintf("writes went from %s to %s", before, now)
	})

	for _, side := range []struct {
		name string
		c    clients
		want *unstructured.Unstructured
	}{{"edge", f.down, edgeCA}, {"upstream", f.up, upCA}} {
		got := f.waitFor(side.c, gvrConfigMaps, ns, "kube-root-ca.crt", nil)
		if ok, _ := hasMark(got); ok || got.GetAnnotations()["edge.kubestellar.io/upsynced"] != "" {
			t.Errorf("%s kube-root-ca.crt carries a syncer mark: %v", side.name, got.GetAnnotations())
		}
		if fmt.Sprint(got.Object["data"]) != fmt.Sprint(side.want.Object["data"]) {
			t.Errorf("%s kube-root-ca.crt was overwritten", side.name)
		}
	}
	if sa := f.waitFor(f.down, gvrServiceAccounts, ns, "default", nil); sa.GetAnnotations()["edge.kubestellar.io/downsynced"] != "" {
		t.Errorf("the edge's ServiceAccount default was written by the syncer: %v", sa.GetAnnotations())
	}
	cfg := f.waitFor(f.up, gvrSyncerConfig, "", f.name, nil)
	if st, reason, msg := conditionOf(cfg, "Ready"); st != "True" {
		t.Errorf("Ready = %s %s %q after the idle window", st, reason, msg)
	}
}

// TestAPIBoundAfterStart (kcp): an API bound into the mailbox after the syncer started is noticed by
// the APIBinding, not the discovery refresh (set to an hour here): its objects reach the edge within
// seconds. Until then the config's condition says the API is missing, not that its name is wrong.
func TestAPIBoundAfterStart(t *testing.T) {
	if !upstreamIsKCP() {
		support.SkipBecause(t, "APIBindings are kcp's: run with E2E_UPSTREAM=kcp")
	}
	f := newFixture(t)
	group := f.name + ".e2e.example.com"
	crd := widgetCRD(group, nil)
	f.create(f.down, gvrCRDs, crd.DeepCopy())
	t.Cleanup(func() { f.delete(f.down, gvrCRDs, "", crd.GetName()) })
	f.waitFor(f.down, gvrCRDs, "", crd.GetName(), established)
	ns := f.namespace("ns")
	f.syncerConfig(f.name, nsScope([]string{ns}, resource(group, "v1", "widgets")))
	p := f.startSyncer(withArgs("--heartbeat-period=1s", "--discovery-refresh-period=1h"))
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		st, _, msg := conditionOf(o, "SelectionValid")
		return st == "False" && strings.Contains(msg, "no CRD or APIBinding provides it") && !strings.Contains(msg, "did you mean"),
			fmt.Sprintf("SelectionValid %s %q", st, msg)
	})

	provider, err := env.KCP.CreateProvider(f.ctx, f.name, testenv.Export{Name: "widgets", CRDs: []*unstructured.Unstructured{crd}})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.KCP.Bind(f.ctx, mailboxes.Mailbox, provider, testenv.Export{Name: "widgets", CRDs: []*unstructured.Unstructured{crd}}); err != nil {
		t.Fatal(err)
	}
	bound := time.Now()
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	f.create(f.up, widgets, obj(group+"/v1", "Widget", ns, "w", map[string]interface{}{"spec": map[string]interface{}{"size": "m"}}))
	// Within 10 s of the binding (the refresh would take an hour).
	eventually(t, 10*time.Second, "the widget at the edge", func() (bool, string) {
		o, err := f.get(f.down, widgets, ns, "w")
		if err != nil {
			return false, err.Error()
		}
		return hasMark(o)
	})
	t.Logf("the bound API's first object reached the edge %.1fs after the binding was ready", time.Since(bound).Seconds())
	if log := p.logText(); !strings.Contains(log, "watching its APIBindings") || !strings.Contains(log, `logicalCluster="`+mailboxes.Mailbox.Cluster+`"`) {
		t.Errorf("the syncer did not say it watches the APIBindings of logical cluster %s", mailboxes.Mailbox.Cluster)
	}
}

// TestSyncerGenThenApply: right after syncer-gen returns, a SyncerConfig can be applied with
// kubectl — in a workspace where syncer-gen had to install the CRD (kcp establishes it seconds
// after accepting it) and in one where SyncerConfigs come from an APIBinding (where a CRD would never
// be accepted, so none may be installed). Against a kube upstream, where the API is served already,
// the same sequence holds.
func TestSyncerGenThenApply(t *testing.T) {
	f := newFixture(t)
	configFile := filepath.Join(t.TempDir(), "syncerconfig.yaml")
	data, err := yaml.Marshal(obj("edge.kubestellar.io/v2alpha1", "SyncerConfig", "", f.name+"-cfg",
		map[string]interface{}{"spec": nsScope([]string{"demo"}, resource("", "v1", "configmaps"))}))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	genThenApply := func(t *testing.T, kubeconfig string) string {
		out := syncerGen(t, false, f.name, "--syncer-image=registry.invalid/kubestellar-syncer:e2e", "-o", filepath.Join(t.TempDir(), "m.yaml"),
			"--kubeconfig", kubeconfig)
		// A discovery cache of its own: kubectl's is keyed by host, shared by all workspaces.
		kubectl(t, kubeconfig, "--cache-dir", t.TempDir(), "apply", "-f", configFile)
		t.Cleanup(func() { _, _ = runKubectl(kubeconfig, "delete", "-f", configFile) })
		return out
	}
	if !upstreamIsKCP() {
		if out := genThenApply(t, upstream.Kubeconfig); strings.Contains(out, "Installing the SyncerConfig CRD") {
			t.Errorf("syncer-gen installed a CRD where the API is served:\n%s", out)
		}
		return
	}
	t.Run("CRD", func(t *testing.T) {
		ws, err := env.KCP.CreateWorkspace(f.ctx, "gen-crd")
		if err != nil {
			t.Fatal(err)
		}
		if out := genThenApply(t, ws.Kubeconfig); !strings.Contains(out, "Installing the SyncerConfig CRD") {
			t.Errorf("syncer-gen did not install the CRD in an empty workspace:\n%s", out)
		}
	})
	t.Run("APIBinding", func(t *testing.T) {
		ws, err := env.KCP.CreateWorkspace(f.ctx, "gen-bound")
		if err != nil {
			t.Fatal(err)
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(manifests.SyncerConfigCRD, &crd.Object); err != nil {
			t.Fatal(err)
		}
		export := testenv.Export{Name: testenv.EdgeExport, CRDs: []*unstructured.Unstructured{crd}}
		provider, err := env.KCP.CreateProvider(f.ctx, "gen-edge-provider", export)
		if err != nil {
			t.Fatal(err)
		}
		if err := env.KCP.Bind(f.ctx, ws, provider, export); err != nil {
			t.Fatal(err)
		}
		if out := genThenApply(t, ws.Kubeconfig); strings.Contains(out, "Installing the SyncerConfig CRD") {
			t.Errorf("syncer-gen installed a CRD beside the bound API:\n%s", out)
		}
		if got := kubectl(t, ws.Kubeconfig, "--cache-dir", t.TempDir(), "get", "crd", "-o", "name"); strings.Contains(got, "syncerconfigs") {
			t.Errorf("a SyncerConfig CRD exists in the bound workspace: %s", got)
		}
	})
}

// runKubectl runs kubectl and returns its output and error (for clean-ups, which must not fail tests).
func runKubectl(kubeconfig string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return kubectlCommand(ctx, kubeconfig, args...)
}
