package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/test/support"
)

// TestBreakerAtTheEdgePod: the syncer as a Pod of syncer-gen's manifest, with its default breaker (50
// a minute, 20 %). One mistaken SyncerConfig deselects 63 ConfigMaps in two namespaces and a CRD: the
// 63 deletions are held (the namespaces wait for them; the CRD, whose deletion would take a widget
// the edge made, is kept and not counted). A release from the mailbox is refused; the edge owner's,
// `kubectl annotate` on the manifest's release ConfigMap, lets them go. Then the namespace that held
// nothing else goes; the one holding a ConfigMap the edge made stays with it, and so does the CRD with
// its widget; ObjectsSynced names both. The release and the contents are the edge's: the test runs
// against the kube upstream.
func TestBreakerAtTheEdgePod(t *testing.T) {
	if upstreamIsKCP() {
		support.SkipBecause(t, "the breaker's release and the contents it weighs are the edge's: its Pod test runs against the kube upstream")
	}
	t.Parallel()
	f := newFixture(t)
	app, kept, other := f.namespace("app"), f.namespace("kept"), f.namespace("other")
	group := "kept-" + f.name + ".e2e.example.com"
	crd := widgetCRD(group, nil)
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	f.create(f.up, gvrCRDs, crd)
	t.Cleanup(func() { f.delete(f.up, gvrCRDs, "", crd.GetName()); f.delete(f.down, gvrCRDs, "", crd.GetName()) })
	f.waitFor(f.up, gvrCRDs, "", crd.GetName(), established)
	for i := 0; i < 60; i++ {
		f.create(f.up, gvrConfigMaps, configMap(app, fmt.Sprintf("c%02d", i), map[string]interface{}{"k": "v"}))
	}
	for i := 0; i < 3; i++ {
		f.create(f.up, gvrConfigMaps, configMap(kept, fmt.Sprintf("c%d", i), map[string]interface{}{"k": "v"}))
	}
	spec := nsScope([]string{app, kept}, resource("", "v1", "configmaps"))
	spec["clusterScope"] = []interface{}{map[string]interface{}{"group": "apiextensions.k8s.io", "apiVersion": "v1",
		"resource": "customresourcedefinitions", "objects": []interface{}{crd.GetName()}}}
	f.syncerConfig(f.name, spec)
	id, _, _ := bootstrapPod(t, f, f.name, bootstrap.RBACBroad)
	f.waitFor(f.down, gvrConfigMaps, app, "c59", hasMark)
	f.waitFor(f.down, gvrConfigMaps, kept, "c2", hasMark)
	f.waitFor(f.down, gvrCRDs, "", crd.GetName(), established)
	// What the edge owner made: a ConfigMap in one namespace, a widget of the CRD.
	f.create(f.down, gvrConfigMaps, configMap(kept, "made-at-the-edge", map[string]interface{}{"owner": "site"}))
	f.create(f.down, widgets, obj(group+"/v1", "Widget", kept, "local", map[string]interface{}{"spec": map[string]interface{}{"size": int64(1)}}))

	f.syncerConfig(f.name, nsScope([]string{other}, resource("", "v1", "configmaps"))) // the mistake
	waitDeletionsHeld(f, 63)
	if n := edgeCopies(f, app) + edgeCopies(f, kept); n != 63 {
		t.Errorf("%d ConfigMaps left at the edge; want all 63 held", n)
	}

	f.update(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) {
		o.SetAnnotations(map[string]string{"edge.kubestellar.io/release-deletions": "63"})
	})
	f.waitEvent(f.up, "default", f.name, "ReleaseRefused", "takes releases from its edge only")
	waitDeletionsHeld(f, 63)

	kubectl(t, env.Downstream.Kubeconfig, "-n", id, "annotate", "--overwrite", "configmap", id+bootstrap.ReleaseSuffix,
		"edge.kubestellar.io/release-deletions=63")
	eventually(t, podTimeout, "the released deletions done", func() (bool, string) {
		n := edgeCopies(f, app) + edgeCopies(f, kept)
		return n == 0, fmt.Sprintf("%d left", n)
	})
	waitDeletionsHeld(f, 0)
	f.waitGone(f.down, gvrNamespaces, "", app)
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		_, _, msg := conditionOf(o, "ObjectsSynced")
		return strings.Contains(msg, "ConfigMap "+kept+"/made-at-the-edge") && strings.Contains(msg, "Widget "+kept+"/local"), "ObjectsSynced: " + msg
	})
	consistently(t, 3*time.Second, "the edge's own objects, and what holds them, stay", func() (bool, string) {
		for _, o := range []struct {
			gvr      schema.GroupVersionResource
			ns, name string
		}{{gvrNamespaces, "", kept}, {gvrConfigMaps, kept, "made-at-the-edge"}, {gvrCRDs, "", crd.GetName()}, {widgets, kept, "local"}} {
			got, err := f.get(f.down, o.gvr, o.ns, o.name)
			if err != nil || got.GetDeletionTimestamp() != nil {
				return false, fmt.Sprintf("%s %s/%s: %v", o.gvr.Resource, o.ns, o.name, err)
			}
		}
		return true, ""
	})
}
