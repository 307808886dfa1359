package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestWaitForAppliedConfigMap: a control-plane client waits with `kubectl wait` until the content it
// wrote on a ConfigMap (which has no status) runs at the edge: the ConfigMap asks
// (edge.kubestellar.io/report-applied: "true"), and the syncer writes the upstream resourceVersion
// whose content its edge copy carries in the label applied.edge.kubestellar.io/<sync target>, once
// per change: the label's own write changes nothing at the edge and is not told again.
func TestWaitForAppliedConfigMap(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("ns")
	cm := configMap(ns, "settings", map[string]interface{}{"mode": "one"})
	cm.SetAnnotations(map[string]string{"edge.kubestellar.io/report-applied": "true"})
	created := f.create(f.up, gvrConfigMaps, cm)
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	p := f.startSyncer(f.ownConfigs())

	appliedLabel := "applied.edge.kubestellar.io/" + f.name
	waitApplied := func(rv string) {
		t.Helper()
		jsonpath := fmt.Sprintf(`jsonpath={.metadata.labels.applied\.edge\.kubestellar\.io/%s}=%s`, f.name, rv)
		if out, err := kubectlCommand(f.ctx, upstream.Kubeconfig, "wait", "configmap/settings", "-n", ns, "--for="+jsonpath, "--timeout=60s"); err != nil {
			up, _ := f.get(f.up, gvrConfigMaps, ns, "settings")
			t.Fatalf("kubectl wait for resourceVersion %s applied: %v\n%s\nupstream labels %v", rv, err, out, up.GetLabels())
		}
	}
	edgeMode := func() string {
		down, err := f.get(f.down, gvrConfigMaps, ns, "settings")
		if err != nil {
			return err.Error()
		}
		mode, _, _ := unstructured.NestedString(down.Object, "data", "mode")
		return mode
	}
	waitApplied(created.GetResourceVersion())
	if m := edgeMode(); m != "one" {
		t.Errorf("applied says the edge runs the first content; its data.mode is %q", m)
	}

	up, err := f.get(f.up, gvrConfigMaps, ns, "settings")
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(up.Object, "two", "data", "mode")
	updated, err := f.up.dyn.Resource(gvrConfigMaps).Namespace(ns).Update(f.ctx, up, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(updated.GetResourceVersion())
	if m := edgeMode(); m != "two" {
		t.Errorf("applied says the edge runs the second content; its data.mode is %q", m)
	}

	// Settled: nobody writes either side any more.
	before, err := f.get(f.up, gvrConfigMaps, ns, "settings")
	if err != nil {
		t.Fatal(err)
	}
	down, err := f.get(f.down, gvrConfigMaps, ns, "settings")
	if err != nil {
		t.Fatal(err)
	}
	// The upstream is shared with the other tests' syncers, so the syncer's own writes are counted
	// there (its metrics), not the object's resourceVersion; the edge copy is this syncer's alone.
	writes := func() float64 {
		var n float64
		for series, v := range p.metrics() {
			if strings.HasPrefix(series, "kubestellar_syncer_writes_total{") {
				n += v
			}
		}
		return n
	}
	wrote := writes()
	consistently(t, 3*time.Second, "no writes once applied is told", func() (bool, string) {
		u, err1 := f.get(f.up, gvrConfigMaps, ns, "settings")
		d, err2 := f.get(f.down, gvrConfigMaps, ns, "settings")
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2)
		}
		n := writes()
		return n == wrote && u.GetLabels()[appliedLabel] == before.GetLabels()[appliedLabel] && d.GetResourceVersion() == down.GetResourceVersion(),
			fmt.Sprintf("writes %v→%v, upstream %s→%s (label %s), edge %s→%s", wrote, n, before.GetResourceVersion(), u.GetResourceVersion(),
				u.GetLabels()[appliedLabel], down.GetResourceVersion(), d.GetResourceVersion())
	})
}
