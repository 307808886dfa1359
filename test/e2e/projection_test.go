package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/syncer/test/support"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/test/testenv"
)

// TestStatusProjection: a selection entry says what of its objects' status comes back upstream, on
// Deployments whose Pods really run on the edge's node:
//   - "narrow" returns replicas, readyReplicas and observedGeneration only (an apiserver refuses a
//     Deployment status whose readyReplicas exceed its replicas: a projection must keep what it
//     validates together);
//   - "quiet" returns nothing (statusReturn.enabled false), though it runs;
//   - "capped" returns at most 200 bytes: its conditions (the largest field) are left out and the
//     condition EdgeStatusCut names them.
//
// And a custom resource without a status subresource, whose status the test writes at the edge:
// an empty one is never written upstream, and downsync never wipes the edge's.
func TestStatusProjection(t *testing.T) {
	if env.Node == nil {
		support.Skip(t, "the bed has no node (E2E_NODE=0)")
	}
	t.Parallel()
	f := newFixture(t)
	group := "plain-" + f.name + ".e2e.example.com"
	crd := withoutStatusSubresource(widgetCRD(group, nil))
	f.create(f.up, gvrCRDs, crd)
	t.Cleanup(func() { f.delete(f.up, gvrCRDs, "", crd.GetName()); f.delete(f.down, gvrCRDs, "", crd.GetName()) })
	f.waitFor(f.up, gvrCRDs, "", crd.GetName(), established)
	plain := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}

	ns := f.namespace("ns")
	for _, name := range []string{"narrow", "quiet", "capped"} {
		f.create(f.up, gvrDeployments, workload("Deployment", ns, name, 1, "", testAppContainer(testenv.TestAppImage, "sleep", "3600")))
	}
	f.create(f.up, plain, obj(group+"/v1", "Widget", ns, "w", map[string]interface{}{"spec": map[string]interface{}{"size": int64(1)}}))
	named := func(name string, statusReturn map[string]interface{}) map[string]interface{} {
		return map[string]interface{}{"group": "apps", "apiVersion": "v1", "resource": "deployments", "statusReturn": statusReturn,
			"objectsByNamespace": []interface{}{map[string]interface{}{"namespace": ns, "names": []interface{}{name}}}}
	}
	f.syncerConfig(f.name, map[string]interface{}{
		"namespacedObjects": []interface{}{
			named("narrow", map[string]interface{}{"fields": []interface{}{"replicas", "readyReplicas", "observedGeneration"}}),
			named("quiet", map[string]interface{}{"enabled": false}),
			named("capped", map[string]interface{}{"maxBytes": int64(200)}),
			map[string]interface{}{"group": group, "apiVersion": "v1", "resource": "widgets",
				"objectsByNamespace": []interface{}{map[string]interface{}{"namespace": ns, "names": []interface{}{"w"}}}},
		},
		"clusterScope": []interface{}{map[string]interface{}{"group": "apiextensions.k8s.io", "apiVersion": "v1",
			"resource": "customresourcedefinitions", "objects": []interface{}{crd.GetName()}}},
	})
	f.startSyncer(f.ownConfigs())

	f.waitForWithin(podTimeout, f.up, gvrDeployments, ns, "narrow", func(o *unstructured.Unstructured) (bool, string) {
		status, _ := o.Object["status"].(map[string]interface{})
		keys := make([]string, 0, len(status))
		for k := range status {
			keys = append(keys, k)
		}
		return statusInt(o, "readyReplicas") == 1 && statusInt(o, "observedGeneration") == 1 && len(status) == 3,
			fmt.Sprintf("upstream status %v: want replicas, readyReplicas 1 and observedGeneration 1, nothing else (has %v)", status, keys)
	})
	capped := f.waitForWithin(podTimeout, f.up, gvrDeployments, ns, "capped", func(o *unstructured.Unstructured) (bool, string) {
		_, reason, msg := conditionOf(o, "EdgeStatusCut")
		return statusInt(o, "readyReplicas") == 1 && reason == "TooLarge" &&
				strings.Contains(msg, "sync target "+f.name+": the edge's status is over 200 bytes; left out: conditions"),
			fmt.Sprintf("upstream status %v", o.Object["status"])
	})
	if _, reason, _ := conditionOf(capped, "Available"); reason != "" {
		t.Errorf("capped: the edge's conditions came upstream past the cap: %v", capped.Object["status"])
	}
	f.waitForWithin(podTimeout, f.down, gvrDeployments, ns, "quiet", func(o *unstructured.Unstructured) (bool, string) {
		return statusInt(o, "readyReplicas") == 1, fmt.Sprintf("edge status %v", o.Object["status"])
	})
	if up, err := f.get(f.up, gvrDeployments, ns, "quiet"); err != nil || statusInt(up, "readyReplicas") != 0 || statusInt(up, "observedGeneration") != 0 {
		t.Errorf("quiet: upstream status %v (%v); want none returned", up.Object["status"], err)
	}

	// Without a status subresource: an empty status is not returned; a real one is, and an upstream
	// update applied at the edge leaves the edge's status alone.
	f.waitFor(f.down, plain, ns, "w", hasMark)
	f.writeStatus(f.down, plain, ns, "w", false, map[string]interface{}{})
	consistently(t, 3*time.Second, "no empty status upstream", func() (bool, string) {
		up, err := f.get(f.up, plain, ns, "w")
		if err != nil {
			return false, err.Error()
		}
		_, has := up.Object["status"]
		return !has, fmt.Sprintf("upstream status %v", up.Object["status"])
	})
	f.writeStatus(f.down, plain, ns, "w", false, map[string]interface{}{"phase": "Ready"})
	f.waitFor(f.up, plain, ns, "w", nestedEquals("Ready", "status", "phase"))
	f.update(f.up, plain, ns, "w", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, int64(2), "spec", "size")
	})
	down := f.waitFor(f.down, plain, ns, "w", nestedEquals(int64(2), "spec", "size"))
	if phase, _, _ := unstructured.NestedString(down.Object, "status", "phase"); phase != "Ready" {
		t.Errorf("the edge's status after downsync applied an update: %v; want phase Ready kept", down.Object["status"])
	}
}
