package e2e

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/test/support"
)

var (
	gvrRoles          = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	gvrWebhookConfigs = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

// TestFence: a syncer bootstrapped by syncer-gen (its default fence) writes at the edge as its
// executor, and the edge's apiserver holds it there. From one SyncerConfig: a ConfigMap, a Role and
// a ClusterRole granting what the executor holds arrive; a ClusterRoleBinding to cluster-admin (RBAC
// escalation), one to what the executor holds, a ConfigMap in kube-system and a
// ValidatingWebhookConfiguration (the fence's policy) are refused,
// each with an ApplyFailed Event on its upstream object saying why; a ValidatingAdmissionPolicy,
// which no fence can hold, is not written and is a problem on the SyncerConfig. The rest syncs on.
// The fence lives at the edge only: it runs against the kube upstream.
func TestFence(t *testing.T) {
	if upstreamIsKCP() {
		support.SkipBecause(t, "the fence lives at the edge: its test runs against the kube upstream")
	}
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("app")
	crb, hook, policy, inSystem, viewer := f.name+"-admin", f.name+"-hook", f.name+"-policy", f.name+"-settings", f.name+"-viewer"
	viewerBinding := f.name + "-viewers"

	f.create(f.up, gvrConfigMaps, configMap(ns, "settings", map[string]interface{}{"k": "v"}))
	f.create(f.up, gvrRoles, obj("rbac.authorization.k8s.io/v1", "Role", ns, "reader", map[string]interface{}{
		"rules": []interface{}{map[string]interface{}{"apiGroups": []interface{}{""}, "resources": []interface{}{"configmaps"}, "verbs": []interface{}{"get"}}}}))
	f.create(f.up, gvrClusterRoles, obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", viewer, map[string]interface{}{
		"rules": []interface{}{map[string]interface{}{"apiGroups": []interface{}{""}, "resources": []interface{}{"configmaps"}, "verbs": []interface{}{"get"}}}}))
	f.create(f.up, gvrClusterRoleBindings, obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", crb, map[string]interface{}{
		"roleRef":  map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []interface{}{map[string]interface{}{"kind": "ServiceAccount", "name": "intruder", "namespace": ns}}}))
	// Granting no more than the executor holds, but cluster-wide to a ServiceAccount a Pod could run as.
	f.create(f.up, gvrClusterRoleBindings, obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", viewerBinding, map[string]interface{}{
		"roleRef":  map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": viewer},
		"subjects": []interface{}{map[string]interface{}{"kind": "ServiceAccount", "name": "default", "namespace": ns}}}))
	f.create(f.up, gvrConfigMaps, configMap("kube-system", inSystem, map[string]interface{}{"k": "v"}))
	// Upstream too these are live: a webhook nobody calls (an unserved resource, failures ignored) and
	// a policy without a binding.
	f.create(f.up, gvrWebhookConfigs, obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", hook, map[string]interface{}{
		"webhooks": []interface{}{map[string]interface{}{"name": "check.fence.e2e.example.com", "admissionReviewVersions": []interface{}{"v1"},
			"sideEffects": "None", "failurePolicy": "Ignore",
			"clientConfig": map[string]interface{}{"url": "https://127.0.0.1:1/check"},
			"rules": []interface{}{map[string]interface{}{"apiGroups": []interface{}{"fence.e2e.example.com"}, "apiVersions": []interface{}{"v1"},
				"resources": []interface{}{"nothings"}, "operations": []interface{}{"CREATE"}}}}}}))
	f.create(f.up, gvrVAPs, obj("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", policy, map[string]interface{}{
		"spec": map[string]interface{}{"matchConstraints": map[string]interface{}{"resourceRules": []interface{}{map[string]interface{}{
			"apiGroups": []interface{}{"fence.e2e.example.com"}, "apiVersions": []interface{}{"v1"}, "resources": []interface{}{"nothings"},
			"operations": []interface{}{"CREATE"}}}},
			"validations": []interface{}{map[string]interface{}{"expression": "false"}}}}))
	t.Cleanup(func() {
		f.delete(f.up, gvrClusterRoleBindings, "", crb)
		f.delete(f.up, gvrClusterRoleBindings, "", viewerBinding)
		f.delete(f.up, gvrClusterRoles, "", viewer)
		f.delete(f.up, gvrConfigMaps, "kube-system", inSystem)
		f.delete(f.up, gvrWebhookConfigs, "", hook)
		f.delete(f.up, gvrVAPs, "", policy)
	})
	named := func(group, resource string, names ...string) map[string]interface{} {
		objs := make([]interface{}, len(names))
		for i, n := range names {
			objs[i] = n
		}
		return map[string]interface{}{"group": group, "apiVersion": "v1", "resource": resource, "objects": objs}
	}
	spec := nsScope([]string{ns}, resource("", "v1", "configmaps"), resource("rbac.authorization.k8s.io", "v1", "roles"))
	spec["clusterScope"] = []interface{}{
		named("rbac.authorization.k8s.io", "clusterrolebindings", crb, viewerBinding),
		named("rbac.authorization.k8s.io", "clusterroles", viewer),
		named("admissionregistration.k8s.io", "validatingwebhookconfigurations", hook),
		named("admissionregistration.k8s.io", "validatingadmissionpolicies", policy),
	}
	spec["namespacedObjects"] = []interface{}{map[string]interface{}{"group": "", "apiVersion": "v1", "resource": "configmaps",
		"objectsByNamespace": []interface{}{map[string]interface{}{"namespace": "kube-system", "names": []interface{}{inSystem}}}}}
	f.syncerConfig(f.name, spec)

	id, _, _ := bootstrapPod(t, f, f.name, bootstrap.RBACBroad)
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", hasMark)
	f.waitFor(f.down, gvrRoles, ns, "reader", hasMark)
	f.waitFor(f.down, gvrClusterRoles, "", viewer, hasMark)

	f.waitEvent(f.up, "default", crb, "ApplyFailed", "attempting to grant RBAC permissions not currently held")
	f.waitEvent(f.up, "default", viewerBinding, "ApplyFailed", "the edge owner's fence keeps the syncer from writing ClusterRoleBindings")
	f.waitEvent(f.up, "kube-system", inSystem, "ApplyFailed", "the edge owner's fence keeps the syncer out of namespace kube-system")
	f.waitEvent(f.up, "default", hook, "ApplyFailed", "the edge owner's fence keeps the syncer from writing admission webhooks")
	eventually(t, time.Minute, "the admission policy is a problem on the SyncerConfig", func() (bool, string) {
		cfg, err := f.get(f.up, gvrSyncerConfig, "", f.name)
		if err != nil {
			return false, err.Error()
		}
		_, _, msg := conditionOf(cfg, "SelectionValid")
		return strings.Contains(msg, "outside the edge owner's fence"), msg
	})
	for _, o := range []struct {
		gvr       schema.GroupVersionResource
		ns, name  string
		principal string
	}{
		{gvrClusterRoleBindings, "", crb, "the ClusterRoleBinding to cluster-admin"},
		{gvrClusterRoleBindings, "", viewerBinding, "the ClusterRoleBinding to what the executor holds"},
		{gvrConfigMaps, "kube-system", inSystem, "the ConfigMap in kube-system"},
		{gvrWebhookConfigs, "", hook, "the webhook"},
		{gvrVAPs, "", policy, "the admission policy"},
	} {
		if _, err := f.get(f.down, o.gvr, o.ns, o.name); !apierrors.IsNotFound(err) {
			t.Errorf("%s at the edge: %v", o.principal, err)
		}
	}
	// The fence is the edge's: the syncer's own identity may not write, and may act only as its executor.
	sa := "system:serviceaccount:" + id + ":" + id
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "configmaps", "-n", ns}, "no"},
		{[]string{"impersonate", "serviceaccounts/default", "-n", id}, "no"},
		{[]string{"impersonate", "serviceaccounts/" + id + bootstrap.ExecutorSuffix, "-n", id}, "yes"},
		{[]string{"escalate", "clusterroles"}, "no"},
	} {
		// The answer is the last line ("no" exits 1); a warning may come first.
		out, _ := kubectlCommand(f.ctx, env.Downstream.Kubeconfig, append([]string{"auth", "can-i", "--as", sa}, c.args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := lines[len(lines)-1]; got != c.want {
			t.Errorf("the syncer's own identity: can-i %v = %q, want %s", c.args, got, c.want)
		}
	}

	// The rest syncs on.
	f.update(f.up, gvrConfigMaps, ns, "settings", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "w", "data", "k")
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", dataEquals("k", "w"))
	if _, err := f.down.kube.RbacV1().ClusterRoleBindings().Get(f.ctx, crb, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRoleBinding to cluster-admin at the edge: %v", err)
	}
}
