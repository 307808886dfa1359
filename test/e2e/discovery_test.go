package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/test/support"
)

// TestEdgeDiscoveryBehindCRD: the syncer creates a CRD at the edge, the edge Establishes it, but the
// edge's discovery does not show the resource yet (a proxy in front of the edge hides the group, as a
// loaded apiserver's discovery lags its CRD status). No CRD event follows once discovery catches up,
// and the discovery refresh period is long: the custom resource that waits for the API must still
// reach the edge soon after its discovery shows it, and the syncer must not resolve again and again
// once it does. The edge alone is concerned: run against one upstream.
func TestEdgeDiscoveryBehindCRD(t *testing.T) {
	if upstreamIsKCP() {
		support.SkipBecause(t, "an edge behaviour: run against the kube upstream only")
	}
	t.Parallel()
	f := newFixture(t)
	group := "late-" + f.name + ".e2e.example.com"
	crd := widgetCRD(group, nil)
	f.create(f.up, gvrCRDs, crd)
	t.Cleanup(func() { f.delete(f.up, gvrCRDs, "", crd.GetName()); f.delete(f.down, gvrCRDs, "", crd.GetName()) })
	f.waitFor(f.up, gvrCRDs, "", crd.GetName(), established)
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	ns := f.namespace("ns")
	f.create(f.up, widgets, obj(group+"/v1", "Widget", ns, "w", map[string]interface{}{"spec": map[string]interface{}{"size": int64(1)}}))
	f.syncerConfig(f.name, map[string]interface{}{
		"namespaceScope": map[string]interface{}{"namespaces": []interface{}{ns},
			"resources": []interface{}{map[string]interface{}{"group": group, "apiVersion": "v1", "resource": "widgets"}}},
		"clusterScope": []interface{}{map[string]interface{}{"group": "apiextensions.k8s.io", "apiVersion": "v1",
			"resource": "customresourcedefinitions", "objects": []interface{}{crd.GetName()}}},
	})

	px := startListProxy(t, env.Downstream)
	px.hideGroup(group)
	p := f.startSyncer(f.ownConfigs(), withArgs("--downstream-kubeconfig="+px.kubeconfig(t, env.Downstream), "--discovery-refresh-period=30m"))
	f.waitFor(f.down, gvrCRDs, "", crd.GetName(), established)
	consistently(t, 2*time.Second, "the widget waiting while the edge's discovery does not show widgets", func() (bool, string) {
		_, err := f.get(f.down, widgets, ns, "w")
		return err != nil, "the widget reached the edge through hidden discovery"
	})

	px.hideGroup("") // discovery catches up; no CRD event says so
	shown := time.Now()
	f.waitForWithin(30*time.Second, f.down, widgets, ns, "w", func(o *unstructured.Unstructured) (bool, string) {
		size, _, _ := unstructured.NestedInt64(o.Object, "spec", "size")
		return size == 1, fmt.Sprintf("spec.size %d", size)
	})
	t.Logf("the widget reached the edge %.1fs after the edge's discovery showed widgets", time.Since(shown).Seconds())
	// The resolves asked for while discovery was behind (logged at -v=4) said so; none follows.
	retries := func() int { return strings.Count(p.logText(), `crd="downstream/`+crd.GetName()+"@") }
	if retries() == 0 {
		t.Error("the syncer never said it would resolve again for the CRD discovery did not show")
	}
	p.waitSettled()
	before := retries()
	time.Sleep(3 * time.Second) // longer than the first retries: one asked for again would show
	if n := retries(); n != before {
		t.Errorf("resolving again for the CRD (%d -> %d times) once the edge's discovery showed it", before, n)
	}
	if p.exited() {
		t.Fatal("the syncer exited")
	}
}
