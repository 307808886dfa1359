package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/mapping"
)

var (
	gvrPolicyReports        = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}
	gvrClusterPolicyReports = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "clusterpolicyreports"}
	gvrServiceAccounts      = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	gvrClusterRoleBindings  = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
)

func upsynced(o *unstructured.Unstructured) (bool, string) {
	want := mapping.MarkOf(o)
	got := o.GetAnnotations()[mapping.UpsyncedAnnotation]
	return got == want, fmt.Sprintf("annotation %s = %q, want %q", mapping.UpsyncedAnnotation, got, want)
}

func policyReport(namespace, name, result string) *unstructured.Unstructured {
	kind := "PolicyReport"
	if namespace == "" {
		kind = "ClusterPolicyReport"
	}
	return obj("wgpolicyk8s.io/v1alpha2", kind, namespace, name, map[string]interface{}{
		"results": []interface{}{map[string]interface{}{"policy": "require-labels", "rule": "check-team", "result": result, "source": "kyverno"}},
		"summary": map[string]interface{}{result: int64(1)},
	})
}

func summaryHas(result string) func(*unstructured.Unstructured) (bool, string) {
	return func(o *unstructured.Unstructured) (bool, string) {
		n, _, _ := unstructured.NestedInt64(o.Object, "summary", result)
		return n == 1, fmt.Sprintf("summary %v", o.Object["summary"])
	}
}

// TestUpsyncPolicyReports is the KubeStellar feasibility scenario: a policy engine (Kyverno's
// reports controller: Namespace, ConfigMaps, ServiceAccount, ClusterRoles, ClusterRoleBinding,
// Deployment) and the PolicyReport CRDs, real manifests, are downsynced from the mailbox; the
// PolicyReports and ClusterPolicyReports created at the edge are upsynced, and their updates and
// deletions follow. Reports in namespaces the entry does not list stay at the edge; an unmarked
// upstream report is not overwritten; reports leave upstream when their entry goes.
func TestUpsyncPolicyReports(t *testing.T) {
	f := newFixture(t)
	for _, file := range []string{"testdata/kyverno/policyreport-crds.yaml", "testdata/kyverno/engine.yaml"} {
		if err := applyFile(f.ctx, f.up, file); err != nil {
			t.Fatalf("applying %s upstream: %v", file, err)
		}
	}
	f.create(f.up, gvrNamespaces, obj("v1", "Namespace", "", "policy", nil))
	t.Cleanup(func() {
		for _, side := range []clients{f.up, f.down} {
			for _, ns := range []string{"kyverno", "policy"} {
				_ = side.dyn.Resource(gvrNamespaces).Delete(context.Background(), ns, metav1.DeleteOptions{})
			}
			for _, crd := range []string{"policyreports.wgpolicyk8s.io", "clusterpolicyreports.wgpolicyk8s.io"} {
				_ = side.dyn.Resource(gvrCRDs).Delete(context.Background(), crd, metav1.DeleteOptions{})
			}
		}
	})
	spec := map[string]interface{}{
		"namespaceScope": map[string]interface{}{"namespaces": []interface{}{"kyverno", "policy"}, "resources": []interface{}{
			resource("", "v1", "serviceaccounts"), resource("", "v1", "configmaps"), resource("apps", "v1", "deployments"),
		}},
		"clusterScope": []interface{}{
			map[string]interface{}{"group": "apiextensions.k8s.io", "apiVersion": "v1", "resource": "customresourcedefinitions",
				"objects": []interface{}{"policyreports.wgpolicyk8s.io", "clusterpolicyreports.wgpolicyk8s.io"}},
			map[string]interface{}{"group": "rbac.authorization.k8s.io", "apiVersion": "v1", "resource": "clusterroles",
				"objects": []interface{}{"kyverno:reports-controller", "kyverno:reports-controller:core"}},
			map[string]interface{}{"group": "rbac.authorization.k8s.io", "apiVersion": "v1", "resource": "clusterrolebindings",
				"objects": []interface{}{"kyverno:reports-controller"}},
		},
		"upsync": []interface{}{map[string]interface{}{
			"apiGroup": "wgpolicyk8s.io", "resources": []interface{}{"policyreports", "clusterpolicyreports"},
			"namespaces": []interface{}{"policy"}, "names": []interface{}{"*"},
		}},
	}
	f.syncerConfig(f.name, spec)
	p := f.startSyncer()

	// The policy engine arrives at the edge.
	f.waitFor(f.down, gvrCRDs, "", "policyreports.wgpolicyk8s.io", established)
	f.waitFor(f.down, gvrCRDs, "", "clusterpolicyreports.wgpolicyk8s.io", established)
	f.waitFor(f.down, gvrDeployments, "kyverno", "kyverno-reports-controller", hasMark)
	f.waitFor(f.down, gvrServiceAccounts, "kyverno", "kyverno-reports-controller", hasMark)
	f.waitFor(f.down, gvrClusterRoleBindings, "", "kyverno:reports-controller", hasMark)
	f.waitFor(f.down, gvrClusterRoles, "", "kyverno:reports-controller:core", hasMark)

	f.waitFor(f.down, gvrNamespaces, "", "policy", hasMark)

	// The engine (played by the test) writes reports at the edge; they appear upstream.
	f.create(f.down, gvrPolicyReports, policyReport("policy", "polr-web", "fail"))
	f.create(f.down, gvrClusterPolicyReports, policyReport("", "cpolr-cluster", "fail"))
	f.create(f.down, gvrPolicyReports, policyReport("kyverno", "polr-not-listed", "fail"))
	upRep := f.waitFor(f.up, gvrPolicyReports, "policy", "polr-web", upsynced)
	if n, _, _ := unstructured.NestedInt64(upRep.Object, "summary", "fail"); n != 1 {
		t.Errorf("upstream report summary %v", upRep.Object["summary"])
	}
	if len(upRep.GetOwnerReferences()) != 0 || upRep.GetLabels()[mapping.UpsyncOwnerLabel] != f.name {
		t.Errorf("upstream copy: ownerReferences %v, labels %v", upRep.GetOwnerReferences(), upRep.GetLabels())
	}
	f.waitFor(f.up, gvrClusterPolicyReports, "", "cpolr-cluster", upsynced)
	consistently(t, 2*time.Second, "report in a namespace the entry does not list stays at the edge", func() (bool, string) {
		_, err := f.get(f.up, gvrPolicyReports, "kyverno", "polr-not-listed")
		return apierrors.IsNotFound(err), fmt.Sprintf("upstream get: %v", err)
	})
	// The upsynced copies are not downsynced back, and the edge originals are untouched.
	if o, _ := f.get(f.down, gvrPolicyReports, "policy", "polr-web"); o != nil {
		if _, ok := o.GetAnnotations()[mapping.DownsyncedAnnotation]; ok {
			t.Error("edge report got a downsync mark")
		}
	}

	// Updates and deletions follow.
	f.update(f.down, gvrPolicyReports, "policy", "polr-web", func(o *unstructured.Unstructured) {
		o.Object["results"] = []interface{}{map[string]interface{}{"policy": "require-labels", "rule": "check-team", "result": "pass", "source": "kyverno"}}
		o.Object["summary"] = map[string]interface{}{"pass": int64(1)}
	})
	f.waitFor(f.up, gvrPolicyReports, "policy", "polr-web", summaryHas("pass"))
	f.update(f.down, gvrClusterPolicyReports, "", "cpolr-cluster", func(o *unstructured.Unstructured) {
		o.Object["summary"] = map[string]interface{}{"pass": int64(1)}
	})
	f.waitFor(f.up, gvrClusterPolicyReports, "", "cpolr-cluster", summaryHas("pass"))
	f.delete(f.down, gvrPolicyReports, "policy", "polr-web")
	f.waitGone(f.up, gvrPolicyReports, "policy", "polr-web")

	// An upstream report nobody upsynced is not overwritten by an edge report of the same name.
	f.create(f.up, gvrPolicyReports, policyReport("policy", "polr-taken", "warn"))
	f.create(f.down, gvrPolicyReports, policyReport("policy", "polr-taken", "fail"))
	key := `kubestellar_syncer_writes_total{direction="upsync",resource="policyreports.wgpolicyk8s.io",result="conflict"}`
	eventually(t, 30*time.Second, "upsync conflict counted", func() (bool, string) {
		return p.metrics()[key] >= 1, key + " not yet counted"
	})
	if o, err := f.get(f.up, gvrPolicyReports, "policy", "polr-taken"); err != nil || o.GetAnnotations()[mapping.UpsyncedAnnotation] != "" {
		t.Errorf("unmarked upstream report was overwritten: %v %v", err, o)
	} else if ok, msg := summaryHas("warn")(o); !ok {
		t.Errorf("unmarked upstream report changed: %s", msg)
	}
	if !strings.Contains(p.logText(), "exists upstream without the syncer's mark") {
		t.Error("the conflict is not in the log")
	}
	// Its deletion upstream frees the name: the edge report is upsynced.
	f.delete(f.up, gvrPolicyReports, "policy", "polr-taken")
	f.waitFor(f.up, gvrPolicyReports, "policy", "polr-taken", upsynced)

	// The upsync entry goes: the copies go; the edge originals stay.
	delete(spec, "upsync")
	f.syncerConfig(f.name, spec)
	f.waitGone(f.up, gvrClusterPolicyReports, "", "cpolr-cluster")
	f.waitGone(f.up, gvrPolicyReports, "policy", "polr-taken")
	if _, err := f.get(f.down, gvrClusterPolicyReports, "", "cpolr-cluster"); err != nil {
		t.Errorf("edge original gone: %v", err)
	}
}

// TestUpsyncMissingAPIAndNamespace: an upsync entry for a resource served only at the edge is a
// clear, reported problem, and does not stop the rest: another entry's objects are upsynced, into a
// namespace the syncer creates upstream.
func TestUpsyncMissingAPIAndNamespace(t *testing.T) {
	f := newFixture(t)
	group := f.name + ".e2e.example.com"
	crd := widgetCRD(group, nil)
	f.create(f.down, gvrCRDs, crd)
	t.Cleanup(func() { f.delete(f.down, gvrCRDs, "", crd.GetName()) })
	f.waitFor(f.down, gvrCRDs, "", crd.GetName(), established)
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	ns := f.name + "-edge-made"
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", ns, nil))
	t.Cleanup(func() {
		for _, side := range []clients{f.up, f.down} {
			_ = side.dyn.Resource(gvrNamespaces).Delete(context.Background(), ns, metav1.DeleteOptions{})
		}
	})
	f.create(f.down, widgets, obj(group+"/v1", "Widget", ns, "w", map[string]interface{}{"spec": map[string]interface{}{"size": int64(1)}}))
	f.create(f.down, gvrConfigMaps, configMap(ns, "edge-report", map[string]interface{}{"k": "v"}))
	f.syncerConfig(f.name, map[string]interface{}{"upsync": []interface{}{
		map[string]interface{}{"apiGroup": group, "resources": []interface{}{"widgets"}, "namespaces": []interface{}{ns}, "names": []interface{}{"*"}},
		map[string]interface{}{"apiGroup": "", "resources": []interface{}{"configmaps"}, "namespaces": []interface{}{ns}, "names": []interface{}{"edge-report"}},
	}})
	p := f.startSyncer()
	f.waitFor(f.up, gvrConfigMaps, ns, "edge-report", upsynced)
	f.waitFor(f.up, gvrNamespaces, "", ns, nil)
	eventually(t, 10*time.Second, "missing API reported", func() (bool, string) {
		return strings.Contains(p.logText(), "is served at the edge but not upstream"), "not in the log yet"
	})
	// The edge's own kube-root-ca.crt ConfigMap is not selected by name: not upsynced.
	if _, err := f.get(f.up, gvrConfigMaps, ns, "kube-root-ca.crt"); err == nil {
		if o, _ := f.get(f.up, gvrConfigMaps, ns, "kube-root-ca.crt"); o.GetAnnotations()[mapping.UpsyncedAnnotation] != "" {
			t.Error("kube-root-ca.crt was upsynced")
		}
	}
	f.update(f.down, gvrConfigMaps, ns, "edge-report", func(o *unstructured.Unstructured) { o.Object["data"] = map[string]interface{}{"k": "v2"} })
	f.waitFor(f.up, gvrConfigMaps, ns, "edge-report", dataEquals("k", "v2"))
}
