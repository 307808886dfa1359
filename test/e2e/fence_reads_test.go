package e2e

import (
	"fmt"
	"path/filepath"
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

// TestFenceAgainstAHostileMailbox: with every default of syncer-gen's manifest (broad RBAC, the fence
// on), a mailbox that selects for upsync the Secrets of the syncer's own namespace, a ConfigMap of
// kube-system, ServiceAccount tokens and a Secret of its own namespace gets none of them upstream
// (ObjectsSynced says why); the manifest makes no long-lived token Secret to take. A Namespace
// labelled to lift Pod Security is refused by the fence; the executor may neither proxy (CONNECT) nor
// mint ServiceAccount tokens, nor write what acts on the whole cluster (a PriorityClass, which also
// leaves the selection, said in SelectionValid; a Service's externalIPs; a CRD's conversion webhook)
// nor a NetworkPolicy in a namespace the syncer did not make; the syncer's own identity may not get
// through nodes/proxy. The fence lives at the edge: the test runs against the kube upstream.
func TestFenceAgainstAHostileMailbox(t *testing.T) {
	if upstreamIsKCP() {
		support.SkipBecause(t, "the fence lives at the edge: its test runs against the kube upstream")
	}
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("app")
	privileged := f.name + "-privileged"
	f.create(f.up, gvrNamespaces, obj("v1", "Namespace", "", privileged, map[string]interface{}{
		"metadata": map[string]interface{}{"name": privileged, "labels": map[string]interface{}{"pod-security.kubernetes.io/enforce": "privileged"}}}))
	t.Cleanup(func() { f.delete(f.up, gvrNamespaces, "", privileged) })
	f.create(f.up, gvrConfigMaps, configMap(ns, "settings", map[string]interface{}{"k": "v"}))
	f.create(f.up, gvrConfigMaps, configMap(privileged, "settings", map[string]interface{}{"k": "v"}))
	id := bootstrap.SyncerID(upstream.URL, f.name)
	upsyncOf := func(resource, namespace string, names ...string) map[string]interface{} {
		n := make([]interface{}, len(names))
		for i, name := range names {
			n[i] = name
		}
		return map[string]interface{}{"apiGroup": "", "resources": []interface{}{resource}, "namespaces": []interface{}{namespace}, "names": n}
	}
	spec := nsScope([]string{ns, privileged}, resource("", "v1", "configmaps"))
	// A PriorityClass preempts any Pod of the edge: outside the fence unless the edge owner allows it.
	urgent := f.name + "-urgent"
	f.create(f.up, gvrPriorityClasses, obj("scheduling.k8s.io/v1", "PriorityClass", "", urgent, map[string]interface{}{"value": int64(1000000000)}))
	t.Cleanup(func() { f.delete(f.up, gvrPriorityClasses, "", urgent) })
	spec["clusterScope"] = []interface{}{map[string]interface{}{"group": "scheduling.k8s.io", "resource": "priorityclasses", "apiVersion": "v1",
		"objects": []interface{}{urgent}}}
	spec["upsync"] = []interface{}{
		upsyncOf("secrets", id, id+"-token", id+"-kubeconfig", id+bootstrap.UpstreamTokenSuffix),
		upsyncOf("configmaps", "kube-system", "extension-apiserver-authentication"),
		upsyncOf("secrets", ns, "edge-token", "edge-creds"),
		upsyncOf("configmaps", ns, "edge-report"),
	}
	f.syncerConfig(f.name, spec)
	_, own, d := bootstrapPod(t, f, f.name, bootstrap.RBACBroad)
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", hasMark) // the namespace is there at the edge
	if _, err := f.down.kube.CoreV1().Secrets(id).Get(f.ctx, id+"-token", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a long-lived token Secret %s/%s-token at the edge: %v", id, id, err)
	}
	// What the edge made in the mailbox's namespace: a token of its default ServiceAccount, a Secret,
	// a ConfigMap (the control: it is upsynced).
	f.create(f.down, gvrSecrets, obj("v1", "Secret", ns, "edge-token", map[string]interface{}{"type": "kubernetes.io/service-account-token",
		"metadata": map[string]interface{}{"name": "edge-token", "namespace": ns, "annotations": map[string]interface{}{"kubernetes.io/service-account.name": "default"}}}))
	f.create(f.down, gvrSecrets, obj("v1", "Secret", ns, "edge-creds", map[string]interface{}{"stringData": map[string]interface{}{"password": "site"}}))
	f.create(f.down, gvrConfigMaps, configMap(ns, "edge-report", map[string]interface{}{"k": "v"}))
	f.waitFor(f.up, gvrConfigMaps, ns, "edge-report", upsynced)

	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		_, _, msg := conditionOf(o, "ObjectsSynced")
		return strings.Contains(msg, "not upsynced: "), "ObjectsSynced: " + msg
	})
	eventually(t, 30*time.Second, "the syncer says why each is kept to the edge", func() (bool, string) {
		logs := d.logs(d.pod().Name, false)
		for _, want := range []string{"namespace " + id + " is protected at the edge", "namespace kube-system is protected at the edge",
			"a ServiceAccount token Secret is never upsynced", "the syncer's --upsync-secrets"} {
			if !strings.Contains(logs, want) {
				return false, "no log line saying " + want
			}
		}
		return true, ""
	})
	consistently(t, 3*time.Second, "nothing the edge keeps reaches the mailbox", func() (bool, string) {
		for _, o := range [][2]string{{id, id + "-kubeconfig"}, {id, id + bootstrap.UpstreamTokenSuffix}, {ns, "edge-token"}, {ns, "edge-creds"}} {
			if _, err := f.up.kube.CoreV1().Secrets(o[0]).Get(f.ctx, o[1], metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("Secret %s/%s upstream: %v", o[0], o[1], err)
			}
		}
		if _, err := f.up.kube.CoreV1().Namespaces().Get(f.ctx, id, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("namespace %s upstream: %v", id, err)
		}
		return true, ""
	})

	// What acts on the whole cluster stays out of the selection, and the config says so.
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		_, _, msg := conditionOf(o, "SelectionValid")
		return strings.Contains(msg, `resource "priorityclasses.scheduling.k8s.io" is outside the edge owner's fence`), "SelectionValid: " + msg
	})
	if _, err := f.get(f.down, gvrPriorityClasses, "", urgent); !apierrors.IsNotFound(err) {
		t.Errorf("PriorityClass %s at the edge: %v", urgent, err)
	}

	// The syncer's own identity lists and watches: no get, so no nodes/proxy (exec on the kubelet).
	nodes, err := own.CoreV1().Nodes().List(f.ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("the syncer's identity lists no node: %v", err)
	}
	if _, err := own.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + nodes.Items[0].Name + "/proxy/healthz").DoRaw(f.ctx); !apierrors.IsForbidden(err) {
		t.Errorf("the syncer's identity through nodes/proxy: %v; want Forbidden", err)
	}
	if _, err := own.CoreV1().ConfigMaps(ns).Get(f.ctx, "settings", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the syncer's identity gets a ConfigMap: %v; want Forbidden (its GETs are the executor's)", err)
	}

	// Pod Security is the edge owner's.
	f.waitEvent(f.up, "default", privileged, "ApplyFailed", "keeps the syncer from setting, changing or removing a namespace's pod-security.kubernetes.io labels")
	if _, err := f.get(f.down, gvrNamespaces, "", privileged); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s at the edge: %v", privileged, err)
	}

	// No CONNECT, no tokens, nothing the syncer did not write, as the executor.
	f.create(f.down, gvrConfigMaps, configMap(ns, "edge-owned", map[string]interface{}{"k": "v"}))
	executor := "system:serviceaccount:" + id + ":" + id + bootstrap.ExecutorSuffix
	f.create(f.down, gvrServices, obj("v1", "Service", ns, "web", map[string]interface{}{"spec": map[string]interface{}{
		"ports": []interface{}{map[string]interface{}{"port": int64(80)}}}}))
	manifest := func(name, doc string) string {
		path := filepath.Join(t.TempDir(), name+".yaml")
		writeFile(t, path, []byte(doc))
		return path
	}
	externalIPs := manifest("external", `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "grab", "namespace": "`+ns+`"},
		"spec": {"ports": [{"port": 80}], "externalIPs": ["10.0.0.10"]}}`)
	denyAll := `{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "deny-all", "namespace": "%s"}, "spec": {"podSelector": {}}}`
	edgesOwn, syncersOwn := manifest("deny-default", fmt.Sprintf(denyAll, "default")), manifest("deny-app", fmt.Sprintf(denyAll, ns))
	webhook := manifest("crd", `{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.`+f.name+`.example.com"},
		"spec": {"group": "`+f.name+`.example.com", "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
		"versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
		"conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://mailbox.example.com/convert"}}}}}`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--dry-run=server", "priorityclass", "urgent", "--value=1000000000"}, "keeps the syncer from writing priorityclasses"},
		{[]string{"create", "--dry-run=server", "-f", externalIPs}, "keeps the syncer from setting a Service's externalIPs"},
		{[]string{"create", "--dry-run=server", "-f", edgesOwn}, "keeps the syncer from writing networkpolicies in namespace default, which it did not make"},
		{[]string{"create", "--dry-run=server", "-f", webhook}, "keeps the syncer from giving a CustomResourceDefinition a conversion webhook"},
		{[]string{"get", "--raw", "/api/v1/namespaces/" + ns + "/services/web:80/proxy/"}, "keeps the syncer from exec, attach, port-forward and proxy"},
		{[]string{"create", "token", "default", "-n", ns}, "keeps the syncer from minting ServiceAccount tokens"},
		{[]string{"annotate", "--dry-run=server", "-n", ns, "configmap", "edge-owned", "x=y"}, "keeps the syncer from changing or deleting what it did not write"},
		{[]string{"delete", "--dry-run=server", "-n", ns, "configmap", "edge-owned"}, "keeps the syncer from changing or deleting what it did not write"},
		{[]string{"annotate", "--dry-run=server", "--overwrite", "clusterrole", "system:basic-user", "x=y"}, "keeps the syncer from changing or deleting what it did not write"},
	} {
		out, err := kubectlCommand(f.ctx, env.Downstream.Kubeconfig, append([]string{"--as", executor}, c.args...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("kubectl --as the executor %v: %v\n%s\nwant the fence's denial %q", c.args, err, out, c.want)
		}
	}
	if out, err := kubectlCommand(f.ctx, env.Downstream.Kubeconfig, "--as", executor, "annotate", "--dry-run=server", "-n", ns, "configmap", "settings", "x=y"); err != nil {
		t.Errorf("the executor may not change the syncer's own copy: %v\n%s", err, out)
	}
	if out, err := kubectlCommand(f.ctx, env.Downstream.Kubeconfig, "--as", executor, "create", "--dry-run=server", "-f", syncersOwn); err != nil {
		t.Errorf("the executor may not write a NetworkPolicy in a namespace the syncer made: %v\n%s", err, out)
	}

	// Fail closed: the fence's binding deleted, the syncer writes nothing at the edge and says so; the
	// binding back, it writes again.
	binding, err := f.down.dyn.Resource(gvrVAPBindings).Get(f.ctx, id+bootstrap.FenceSuffix, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.delete(f.down, gvrVAPBindings, "", binding.GetName())
	waitEdgeFence(f, "False", "FenceMissing")
	f.create(f.up, gvrConfigMaps, configMap(ns, "while-unfenced", map[string]interface{}{"k": "v"}))
	consistently(t, 3*time.Second, "nothing written while the fence is missing", func() (bool, string) {
		_, err := f.get(f.down, gvrConfigMaps, ns, "while-unfenced")
		return apierrors.IsNotFound(err), fmt.Sprintf("the ConfigMap at the edge: %v", err)
	})
	again := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": binding.GetAPIVersion(), "kind": binding.GetKind(), "spec": binding.Object["spec"]}}
	again.SetName(binding.GetName())
	again.SetLabels(binding.GetLabels())
	f.create(f.down, gvrVAPBindings, again)
	waitEdgeFence(f, "True", "InForce")
	f.waitFor(f.down, gvrConfigMaps, ns, "while-unfenced", hasMark)
}

var gvrPriorityClasses = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}

// waitEdgeFence waits until the test's SyncerConfig says condition EdgeFence is status for reason.
func waitEdgeFence(f *fixture, status, reason string) {
	f.t.Helper()
	f.waitForWithin(2*time.Minute, f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		st, r, msg := conditionOf(o, "EdgeFence")
		return st == status && r == reason, fmt.Sprintf("EdgeFence %s %s: %s", st, r, msg)
	})
}
