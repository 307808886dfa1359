package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/mapping"
)

var gvrDenaturedPolicyReports = schema.GroupVersionResource{Group: "wgpolicyk8s.io.denatured", Version: "v1alpha2", Resource: "policyreports"}

// crdConversion renames a CRD between its denatured name upstream and its natural one at the edge.
func crdConversion(upstream, downstream string) map[string]interface{} {
	side := func(name string) map[string]interface{} {
		return map[string]interface{}{"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition", "name": name}
	}
	return map[string]interface{}{"upstream": side(upstream), "downstream": side(downstream)}
}

// TestRenaturePolicyReports is the seeds' fourth feasibility scenario: the PolicyReport
// CRDs are denatured in the mailbox (group wgpolicyk8s.io.denatured, which nothing there
// interprets); a conversion renatures them at the edge, and their custom resources with them, both
// ways: a report downsynced from the mailbox arrives in the natural group, a report made at the edge
// goes up denatured. The marks keep working across the conversion: an update follows, a deletion
// upstream made while the syncer is stopped removes the renamed edge copy after a restart, and
// removing the conversion replaces the renamed CRD with one under the upstream name.
func TestRenaturePolicyReports(t *testing.T) {
	f := newFixture(t)
	natural, err := os.ReadFile("testdata/kyverno/policyreport-crds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	denatured := strings.ReplaceAll(string(natural), "wgpolicyk8s.io", "wgpolicyk8s.io.denatured")
	if err := applyYAML(f.ctx, f.up, []byte(denatured)); err != nil {
		t.Fatalf("applying the denatured CRDs upstream: %v", err)
	}
	crdNames := []string{"policyreports.wgpolicyk8s.io", "clusterpolicyreports.wgpolicyk8s.io"}
	t.Cleanup(func() {
		for _, side := range []clients{f.up, f.down} {
			for _, crd := range crdNames {
				_ = side.dyn.Resource(gvrCRDs).Delete(context.Background(), crd, metav1.DeleteOptions{})
				_ = side.dyn.Resource(gvrCRDs).Delete(context.Background(), crd+".denatured", metav1.DeleteOptions{})
			}
		}
	})
	for _, crd := range crdNames {
		f.waitFor(f.up, gvrCRDs, "", crd+".denatured", established)
	}
	ns := f.namespace("reports")
	report := policyReport(ns, "polr-down", "fail")
	report.SetAPIVersion("wgpolicyk8s.io.denatured/v1alpha2")
	f.create(f.up, gvrDenaturedPolicyReports, report)

	spec := func(withConversions bool) map[string]interface{} {
		s := map[string]interface{}{
			"clusterScope": []interface{}{map[string]interface{}{"group": "apiextensions.k8s.io", "apiVersion": "v1", "resource": "customresourcedefinitions",
				"objects": []interface{}{crdNames[0] + ".denatured", crdNames[1] + ".denatured"}}},
			"namespacedObjects": []interface{}{map[string]interface{}{"group": "wgpolicyk8s.io.denatured", "apiVersion": "v1alpha2", "resource": "policyreports",
				"objectsByNamespace": []interface{}{map[string]interface{}{"namespace": ns, "names": []interface{}{"polr-down"}}}}},
			"upsync": []interface{}{map[string]interface{}{"apiGroup": "wgpolicyk8s.io", "resources": []interface{}{"policyreports"},
				"namespaces": []interface{}{ns}, "names": []interface{}{"polr-edge"}}},
		}
		if withConversions {
			s["conversions"] = []interface{}{crdConversion(crdNames[0]+".denatured", crdNames[0]), crdConversion(crdNames[1]+".denatured", crdNames[1])}
		}
		return s
	}
	f.syncerConfig(f.name, spec(true))
	p := f.startSyncer()

	// The CRDs arrive renatured: natural name, group and plural; marked for themselves.
	for _, crd := range crdNames {
		got := f.waitFor(f.down, gvrCRDs, "", crd, established)
		if ok, why := hasMark(got); !ok {
			t.Errorf("edge CRD %s: %s", crd, why)
		}
		if g, _, _ := unstructured.NestedString(got.Object, "spec", "group"); g != "wgpolicyk8s.io" {
			t.Errorf("edge CRD %s has spec.group %q", crd, g)
		}
		if from := got.GetAnnotations()[mapping.RenaturedFromAnnotation]; !strings.HasSuffix(from, "//"+crd+".denatured") {
			t.Errorf("edge CRD %s: %s = %q", crd, mapping.RenaturedFromAnnotation, from)
		}
		if _, err := f.get(f.down, gvrCRDs, "", crd+".denatured"); err == nil {
			t.Errorf("the denatured CRD %s.denatured reached the edge", crd)
		}
	}
	// The denatured report arrives in the natural group.
	down := f.waitFor(f.down, gvrPolicyReports, ns, "polr-down", hasMark)
	if got := down.GetAPIVersion(); got != "wgpolicyk8s.io/v1alpha2" {
		t.Errorf("edge report apiVersion %q", got)
	}
	// A report the edge makes goes up denatured.
	f.create(f.down, gvrPolicyReports, policyReport(ns, "polr-edge", "warn"))
	up := f.waitFor(f.up, gvrDenaturedPolicyReports, ns, "polr-edge", upsynced)
	if n, _, _ := unstructured.NestedInt64(up.Object, "summary", "warn"); n != 1 {
		t.Errorf("upsynced report summary %v", up.Object["summary"])
	}
	if from := up.GetAnnotations()[mapping.UpsyncSourceUIDAnnotation]; from == "" {
		t.Errorf("upsynced report lacks %s", mapping.UpsyncSourceUIDAnnotation)
	}
	// Changes follow both ways.
	f.update(f.up, gvrDenaturedPolicyReports, ns, "polr-down", func(o *unstructured.Unstructured) {
		o.Object["summary"] = map[string]interface{}{"pass": int64(1)}
	})
	f.waitFor(f.down, gvrPolicyReports, ns, "polr-down", summaryHas("pass"))
	f.delete(f.down, gvrPolicyReports, ns, "polr-edge")
	f.waitGone(f.up, gvrDenaturedPolicyReports, ns, "polr-edge")

	// Deleted upstream while the syncer is stopped: the renamed copy goes after the restart.
	p.stop()
	f.delete(f.up, gvrDenaturedPolicyReports, ns, "polr-down")
	p = f.startSyncer()
	f.waitGone(f.down, gvrPolicyReports, ns, "polr-down")
	for _, crd := range crdNames { // the renamed CRDs are kept, not recreated
		if o, err := f.get(f.down, gvrCRDs, "", crd); err != nil {
			t.Errorf("edge CRD %s after the restart: %v", crd, err)
		} else if ok, why := hasMark(o); !ok {
			t.Errorf("edge CRD %s after the restart: %s", crd, why)
		}
	}

	// Without the conversions, the CRDs are downsynced under their upstream names, and the renamed
	// copies, which nothing selects any more, are deleted.
	f.syncerConfig(f.name, spec(false))
	for _, crd := range crdNames {
		f.waitFor(f.down, gvrCRDs, "", crd+".denatured", func(o *unstructured.Unstructured) (bool, string) {
			ok, why := hasMark(o)
			g, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			return ok && g == "wgpolicyk8s.io.denatured", fmt.Sprintf("%s; spec.group %q", why, g)
		})
		f.waitGone(f.down, gvrCRDs, "", crd)
		// Served before they go again: kube-apiserver 1.35 can hold a CRD deleted while the storage
		// of its custom resources still initializes (its finalizer's list fails with "storage is
		// (re)initializing" and backs off) for longer than waitGone waits, seen when the syncer
		// deleted these copies within a second of creating them. The syncer did its part then.
		f.waitFor(f.down, gvrCRDs, "", crd+".denatured", established)
		plural, _, _ := strings.Cut(crd, ".")
		eventually(t, 30*time.Second, "the edge to serve "+plural+" of wgpolicyk8s.io.denatured", func() (bool, string) {
			_, err := f.down.dyn.Resource(schema.GroupVersionResource{Group: "wgpolicyk8s.io.denatured", Version: "v1alpha2", Resource: plural}).
				List(f.ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1}) // from its watch cache, refused while that initializes
			if err != nil {
				return false, err.Error()
			}
			return true, ""
		})
	}
	// And back: with the conversions again, the copies under the upstream names make way for the
	// renamed ones.
	f.syncerConfig(f.name, spec(true))
	for _, crd := range crdNames {
		f.waitFor(f.down, gvrCRDs, "", crd, established)
		f.waitGone(f.down, gvrCRDs, "", crd+".denatured")
	}
	if strings.Contains(p.logText(), "DATA RACE") || strings.Contains(p.logText(), "panic") {
		t.Errorf("the syncer's log shows a race or a panic:\n%s", p.tail(40))
	}
}
