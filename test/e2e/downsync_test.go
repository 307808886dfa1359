package e2e

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/test/support"
)

var (
	nsScope  = support.NSScope
	resource = support.Resource
)

func hasMark(o *unstructured.Unstructured) (bool, string) {
	want := mapping.MarkOf(o)
	got := o.GetAnnotations()[mapping.DownsyncedAnnotation]
	return got == want, fmt.Sprintf("annotation %s = %q, want %q", mapping.DownsyncedAnnotation, got, want)
}

// TestDownsyncCreateUpdateDelete: selected objects of several kinds are created downstream with the
// marks, without what belongs to the source cluster, with their own Service allocation; updates and
// deletions follow.
func TestDownsyncCreateUpdateDelete(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("app")
	cm := configMap(ns, "settings", map[string]interface{}{"color": "blue", "size": "s"})
	cm.SetAnnotations(map[string]string{"kcp.io/cluster": "root:mailbox", "keep.example.com/note": "kept"})
	cm.SetLabels(map[string]string{"app": "demo"})
	f.create(f.up, gvrConfigMaps, cm)
	f.create(f.up, gvrDeployments, deployment(ns, "web", 2))
	upSvc := f.create(f.up, gvrServices, obj("v1", "Service", ns, "web", map[string]interface{}{"spec": map[string]interface{}{
		"ports": []interface{}{map[string]interface{}{"port": int64(80)}}, "selector": map[string]interface{}{"app": "web"}}}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps"), resource("apps", "v1", "deployments"), resource("", "v1", "services")))
	p := f.startSyncer()
	handedOver := func() float64 {
		return p.metrics()[`kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="handed-over"}`]
	}

	down := f.waitFor(f.down, gvrConfigMaps, ns, "settings", dataEquals("color", "blue"))
	if ok, msg := hasMark(down); !ok {
		t.Error(msg)
	}
	if v := down.GetLabels()[mapping.OwnerLabel]; v != f.name {
		t.Errorf("owner label %s = %q, want %q", mapping.OwnerLabel, v, f.name)
	}
	if _, ok := down.GetAnnotations()["kcp.io/cluster"]; ok {
		t.Error("kcp.io/cluster annotation was copied downstream")
	}
	if down.GetAnnotations()["keep.example.com/note"] != "kept" || down.GetLabels()["app"] != "demo" {
		t.Errorf("user labels/annotations not copied: %v %v", down.GetLabels(), down.GetAnnotations())
	}
	nsObj := f.waitFor(f.down, gvrNamespaces, "", ns, hasMark)
	if nsObj.GetLabels()[mapping.OwnerLabel] != f.name {
		t.Errorf("namespace not labelled as owned: %v", nsObj.GetLabels())
	}
	f.waitFor(f.down, gvrDeployments, ns, "web", hasMark)
	downSvc := f.waitFor(f.down, gvrServices, ns, "web", hasMark)
	upIP, _, _ := unstructured.NestedString(upSvc.Object, "spec", "clusterIP")
	downIP, _, _ := unstructured.NestedString(downSvc.Object, "spec", "clusterIP")
	// The edge allocates its own; a kube upstream has one too (kcp serves Services from a CRD: none).
	if downIP == "" || (upIP == "" && !upstreamIsKCP()) {
		t.Errorf("clusterIP not allocated: upstream %q downstream %q", upIP, downIP)
	}
	if downSvc.GetUID() == upSvc.GetUID() {
		t.Error("downstream Service has the upstream UID")
	}

	f.update(f.up, gvrConfigMaps, ns, "settings", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "green", "data", "color")
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", dataEquals("color", "green"))
	if n := handedOver(); n != 1 {
		t.Errorf("the first update: the create's fields handed over %v times, want 1", n)
	}

	// A field removed upstream is removed downstream, though the create (a plain POST) had filed it
	// under the syncer's update entry, not its apply entry.
	f.update(f.up, gvrConfigMaps, ns, "settings", func(o *unstructured.Unstructured) {
		o.SetAnnotations(map[string]string{})
		unstructured.RemoveNestedField(o.Object, "data", "size")
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", func(o *unstructured.Unstructured) (bool, string) {
		_, has := o.GetAnnotations()["keep.example.com/note"]
		_, hasSize, _ := unstructured.NestedString(o.Object, "data", "size")
		return !has && !hasSize, fmt.Sprintf("annotation or data key removed upstream still downstream: %v %v", o.GetAnnotations(), o.Object["data"])
	})
	if n := handedOver(); n != 1 {
		t.Errorf("fields removed upstream: the create's fields handed over %v times in all, want 1 (before the first update)", n)
	}
	downCM, err := f.get(f.down, gvrConfigMaps, ns, "settings")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range downCM.GetManagedFields() {
		if e.Manager == framework.DefaultFieldManager && e.Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("after the hand-over the syncer still has a %s entry: %+v", e.Operation, downCM.GetManagedFields())
		}
	}

	f.update(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, int64(3), "spec", "replicas")
	})
	f.waitFor(f.down, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		r, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		return r == 3, fmt.Sprintf("replicas %d", r)
	})

	f.delete(f.up, gvrConfigMaps, ns, "settings")
	f.waitGone(f.down, gvrConfigMaps, ns, "settings")
	f.delete(f.up, gvrDeployments, ns, "web")
	f.waitGone(f.down, gvrDeployments, ns, "web")
	// The downstream kube-root-ca.crt (made by the edge's controller manager, unmarked) is untouched;
	// the controller manager may publish it only now, the syncer being faster than it on a busy machine.
	f.waitFor(f.down, gvrConfigMaps, ns, "kube-root-ca.crt", func(o *unstructured.Unstructured) (bool, string) {
		_, marked := o.GetAnnotations()[mapping.DownsyncedAnnotation]
		return !marked, fmt.Sprintf("annotations %v", o.GetAnnotations())
	})
}

// TestDownsyncLeavesSelection: objects whose namespace leaves the config, and then everything when
// the config is deleted, are deleted downstream; namespaces go with them.
func TestDownsyncLeavesSelection(t *testing.T) {
	f := newFixture(t)
	a, b := f.namespace("a"), f.namespace("b")
	for _, ns := range []string{a, b} {
		f.create(f.up, gvrConfigMaps, configMap(ns, "c1", map[string]interface{}{"k": "v"}))
	}
	f.syncerConfig(f.name, nsScope([]string{a, b}, resource("", "v1", "configmaps")))
	f.startSyncer()
	f.waitFor(f.down, gvrConfigMaps, a, "c1", nil)
	f.waitFor(f.down, gvrConfigMaps, b, "c1", nil)

	f.syncerConfig(f.name, nsScope([]string{a}, resource("", "v1", "configmaps")))
	f.waitGone(f.down, gvrNamespaces, "", b)
	f.waitFor(f.down, gvrConfigMaps, a, "c1", nil)

	f.delete(f.up, gvrSyncerConfig, "", f.name)
	f.waitGone(f.down, gvrConfigMaps, a, "c1")
	f.waitGone(f.down, gvrNamespaces, "", a)
	// Upstream is untouched.
	if _, err := f.get(f.up, gvrConfigMaps, a, "c1"); err != nil {
		t.Fatalf("upstream object: %v", err)
	}
}

// TestDownsyncCleanupAfterRestart: a config deleted while the syncer is down is still acted on when it
// comes back: the marks on the objects, not memory, decide.
func TestDownsyncCleanupAfterRestart(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.up, gvrConfigMaps, configMap(ns, "c1", map[string]interface{}{"k": "v"}))
	f.create(f.up, gvrDeployments, deployment(ns, "web", 1))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps"), resource("apps", "v1", "deployments")))
	p := f.startSyncer()
	f.waitFor(f.down, gvrConfigMaps, ns, "c1", nil)
	f.waitFor(f.down, gvrDeployments, ns, "web", nil)
	p.stop()

	// While it is down: deployments leave the selection, then the upstream ConfigMap is deleted.
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	f.delete(f.up, gvrConfigMaps, ns, "c1")
	f.create(f.up, gvrConfigMaps, configMap(ns, "c2", map[string]interface{}{"k": "v"}))
	f.startSyncer()
	f.waitGone(f.down, gvrDeployments, ns, "web")
	f.waitGone(f.down, gvrConfigMaps, ns, "c1")
	f.waitFor(f.down, gvrConfigMaps, ns, "c2", nil)
}

// TestDownsyncRestartWritesNothing: a syncer started on edge objects that are already up to date
// writes none of them. Its edge cache holds no content, only the digest of the fields its apply
// manager owns (mapping.Slim): this fails if that digest does not match the desired object's for one
// of these kinds (defaults, associative lists, atomic lists, a headless Service, a cluster-scoped
// object), as each mismatch is an apply.
func TestDownsyncRestartWritesNothing(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	cm := configMap(ns, "settings", map[string]interface{}{"color": "blue", "empty": ""})
	cm.SetLabels(map[string]string{"app": "demo"})
	cm.SetAnnotations(map[string]string{"note.example.com/n": "kept"})
	f.create(f.up, gvrConfigMaps, cm)
	web := deployment(ns, "web", 2)
	containers, _, _ := unstructured.NestedSlice(web.Object, "spec", "template", "spec", "containers")
	containers = append(containers, map[string]interface{}{"name": "side", "image": "registry.invalid/side:1",
		"args": []interface{}{"sleep", "1d"}, "ports": []interface{}{map[string]interface{}{"containerPort": int64(8080)}},
		"env": []interface{}{map[string]interface{}{"name": "A", "value": "1"}}})
	_ = unstructured.SetNestedSlice(web.Object, containers, "spec", "template", "spec", "containers")
	f.create(f.up, gvrDeployments, web)
	f.create(f.up, gvrServices, obj("v1", "Service", ns, "web", map[string]interface{}{"spec": map[string]interface{}{
		"ports": []interface{}{map[string]interface{}{"name": "http", "port": int64(80), "targetPort": int64(8080)}}, "selector": map[string]interface{}{"app": "web"}}}))
	f.create(f.up, gvrServices, obj("v1", "Service", ns, "headless", map[string]interface{}{"spec": map[string]interface{}{
		"clusterIP": "None", "ports": []interface{}{map[string]interface{}{"port": int64(80)}}, "selector": map[string]interface{}{"app": "web"}}}))
	roleName := f.name + "-reader"
	f.create(f.up, gvrClusterRoles, obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", roleName, map[string]interface{}{
		"rules": []interface{}{map[string]interface{}{"apiGroups": []interface{}{""}, "resources": []interface{}{"pods", "configmaps"}, "verbs": []interface{}{"get", "list"}}}}))
	t.Cleanup(func() {
		f.delete(f.up, gvrClusterRoles, "", roleName)
		f.delete(f.down, gvrClusterRoles, "", roleName)
	})
	spec := nsScope([]string{ns}, resource("", "v1", "configmaps"), resource("apps", "v1", "deployments"), resource("", "v1", "services"))
	spec["clusterScope"] = []interface{}{map[string]interface{}{"group": "rbac.authorization.k8s.io", "apiVersion": "v1", "resource": "clusterroles", "objects": []interface{}{roleName}}}
	f.syncerConfig(f.name, spec)
	p := f.startSyncer(withArgs("--heartbeat-period=1h"))
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", hasMark)
	f.waitFor(f.down, gvrDeployments, ns, "web", hasMark)
	f.waitFor(f.down, gvrServices, ns, "web", hasMark)
	f.waitFor(f.down, gvrServices, ns, "headless", hasMark)
	f.waitFor(f.down, gvrClusterRoles, "", roleName, hasMark)
	p.waitSettled()
	p.stop()

	p = f.startSyncer(withArgs("--heartbeat-period=1h"))
	p.waitSettled()
	m := p.metrics()
	var written []string
	for k, v := range m {
		if strings.HasPrefix(k, "kubestellar_syncer_writes_total{") && strings.Contains(k, `direction="downsync"`) && v > 0 {
			written = append(written, fmt.Sprintf("%s %v", k, v))
		}
	}
	if len(written) > 0 {
		t.Errorf("a syncer restarted on up-to-date objects wrote: %s", strings.Join(written, ", "))
	}
	if n := m[`kubestellar_syncer_api_requests_total{code="200",side="downstream",verb="PATCH"}`]; n > 0 {
		t.Errorf("a syncer restarted on up-to-date objects sent %v PATCHes to the edge", n)
	}
	// Drift is still seen through the digest: an edge edit of an owned field is put back.
	f.update(f.down, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, int64(5), "spec", "replicas")
	})
	f.waitFor(f.down, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		r, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		return r == 2, fmt.Sprintf("replicas %d", r)
	})
}

// TestDownsyncClusterScopedAndCRDs: a CRD and its custom resources are created upstream together; the
// CRD is downsynced through clusterScope, the resources wait until it is Established downstream.
// Cluster-scoped objects (ClusterRoles) and namespacedObjects by name work too.
func TestDownsyncClusterScopedAndCRDs(t *testing.T) {
	f := newFixture(t)
	group := f.name + ".e2e.example.com"
	crdName := "widgets." + group
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	f.create(f.up, gvrCRDs, widgetCRD(group, nil))
	t.Cleanup(func() {
		f.delete(f.up, gvrCRDs, "", crdName)
		f.delete(f.down, gvrCRDs, "", crdName)
	})
	f.waitFor(f.up, gvrCRDs, "", crdName, established)
	ns := f.namespace("ns")
	for _, n := range []string{"w1", "w2", "not-selected"} {
		f.create(f.up, widgets, obj(group+"/v1", "Widget", ns, n, map[string]interface{}{"spec": map[string]interface{}{"size": int64(1)}}))
	}
	roleName := f.name + "-reader"
	f.create(f.up, gvrClusterRoles, obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", roleName, map[string]interface{}{
		"rules": []interface{}{map[string]interface{}{"apiGroups": []interface{}{""}, "resources": []interface{}{"pods"}, "verbs": []interface{}{"get"}}}}))
	t.Cleanup(func() {
		f.delete(f.up, gvrClusterRoles, "", roleName)
		f.delete(f.down, gvrClusterRoles, "", roleName)
	})
	f.syncerConfig(f.name, map[string]interface{}{
		"clusterScope": []interface{}{
			map[string]interface{}{"group": "apiextensions.k8s.io", "apiVersion": "v1", "resource": "customresourcedefinitions", "objects": []interface{}{crdName}},
			map[string]interface{}{"group": "rbac.authorization.k8s.io", "apiVersion": "v1", "resource": "clusterroles", "objects": []interface{}{roleName}},
		},
		"namespacedObjects": []interface{}{map[string]interface{}{
			"group": group, "apiVersion": "v1", "resource": "widgets",
			"objectsByNamespace": []interface{}{map[string]interface{}{"namespace": ns, "names": []interface{}{"w1", "w2"}}},
		}},
	})
	f.startSyncer()
	f.waitFor(f.down, gvrCRDs, "", crdName, established)
	f.waitFor(f.down, widgets, ns, "w1", hasMark)
	f.waitFor(f.down, widgets, ns, "w2", hasMark)
	f.waitFor(f.down, gvrClusterRoles, "", roleName, hasMark)
	consistently(t, 2*time.Second, "unselected widget absent downstream", func() (bool, string) {
		_, err := f.get(f.down, widgets, ns, "not-selected")
		return err != nil, "not-selected widget was downsynced"
	})
	f.update(f.up, widgets, ns, "w1", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, int64(7), "spec", "size")
	})
	f.waitFor(f.down, widgets, ns, "w1", func(o *unstructured.Unstructured) (bool, string) {
		s, _, _ := unstructured.NestedInt64(o.Object, "spec", "size")
		return s == 7, fmt.Sprintf("size %d", s)
	})
}

// TestDownsyncDrift: an owned downstream object edited or deleted by someone else is put back.
func TestDownsyncDrift(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.up, gvrConfigMaps, configMap(ns, "c1", map[string]interface{}{"k": "upstream"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	f.startSyncer()
	f.waitFor(f.down, gvrConfigMaps, ns, "c1", dataEquals("k", "upstream"))

	f.update(f.down, gvrConfigMaps, ns, "c1", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "edited at the edge", "data", "k")
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "c1", dataEquals("k", "upstream"))

	f.update(f.down, gvrConfigMaps, ns, "c1", func(o *unstructured.Unstructured) {
		labels := o.GetLabels()
		delete(labels, mapping.OwnerLabel)
		o.SetLabels(labels)
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "c1", func(o *unstructured.Unstructured) (bool, string) {
		return o.GetLabels()[mapping.OwnerLabel] == f.name, "owner label not restored"
	})

	f.delete(f.down, gvrConfigMaps, ns, "c1")
	f.waitFor(f.down, gvrConfigMaps, ns, "c1", dataEquals("k", "upstream"))
}

// TestDownsyncOwnershipConflict: a downstream object that exists without the mark is neither
// overwritten nor deleted; the conflict is logged and counted. With --adopt-existing it is taken over.
func TestDownsyncOwnershipConflict(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", ns, nil)) // pre-existing at the edge: used, not owned
	f.create(f.down, gvrConfigMaps, configMap(ns, "theirs", map[string]interface{}{"k": "edge"}))
	f.create(f.up, gvrConfigMaps, configMap(ns, "theirs", map[string]interface{}{"k": "upstream"}))
	f.create(f.up, gvrConfigMaps, configMap(ns, "ours", map[string]interface{}{"k": "upstream"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	p := f.startSyncer()
	f.waitFor(f.down, gvrConfigMaps, ns, "ours", dataEquals("k", "upstream"))
	eventually(t, 30*time.Second, "the conflict to be reported", func() (bool, string) {
		return strings.Contains(p.logText(), "exists downstream without the syncer's mark"), "no conflict in the log"
	})
	key := `kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="conflict"}`
	if got := p.metrics()[key]; got < 1 {
		t.Errorf("%s = %v, want >= 1", key, got)
	}
	consistently(t, 2*time.Second, "the unowned object to be left alone", func() (bool, string) {
		o, err := f.get(f.down, gvrConfigMaps, ns, "theirs")
		if err != nil {
			return false, err.Error()
		}
		return dataEquals("k", "edge")(o)
	})
	// Deleting upstream does not delete the unowned object, nor the pre-existing namespace.
	f.delete(f.up, gvrConfigMaps, ns, "theirs")
	f.delete(f.up, gvrSyncerConfig, "", f.name)
	f.waitGone(f.down, gvrConfigMaps, ns, "ours")
	consistently(t, 2*time.Second, "unowned objects to stay", func() (bool, string) {
		if _, err := f.get(f.down, gvrConfigMaps, ns, "theirs"); err != nil {
			return false, err.Error()
		}
		_, err := f.get(f.down, gvrNamespaces, "", ns)
		return err == nil, fmt.Sprint(err)
	})
	p.stop()

	// Adoption, when switched on.
	f.create(f.up, gvrConfigMaps, configMap(ns, "theirs", map[string]interface{}{"k": "upstream"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	f.startSyncer(withArgs("--adopt-existing"))
	f.waitFor(f.down, gvrConfigMaps, ns, "theirs", func(o *unstructured.Unstructured) (bool, string) {
		if ok, msg := hasMark(o); !ok {
			return false, msg
		}
		return dataEquals("k", "upstream")(o)
	})
}

// TestDownsyncCreateOnly: downsync-overwrite "false" creates the object once and then neither
// updates nor deletes it.
func TestDownsyncCreateOnly(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	cm := configMap(ns, "seed", map[string]interface{}{"k": "initial"})
	cm.SetAnnotations(map[string]string{mapping.OverwriteAnnotation: "false"})
	f.create(f.up, gvrConfigMaps, cm)
	f.create(f.up, gvrConfigMaps, configMap(ns, "marker", map[string]interface{}{"k": "1"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	f.startSyncer()
	f.waitFor(f.down, gvrConfigMaps, ns, "seed", dataEquals("k", "initial"))

	f.update(f.down, gvrConfigMaps, ns, "seed", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "filled at the edge", "data", "k")
	})
	f.update(f.up, gvrConfigMaps, ns, "seed", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "changed upstream", "data", "other")
	})
	// A later change to another object is synced, so the syncer has had its chance at "seed".
	f.update(f.up, gvrConfigMaps, ns, "marker", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "2", "data", "k")
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "marker", dataEquals("k", "2"))
	consistently(t, 2*time.Second, "the create-only object to keep the edge's content", func() (bool, string) {
		o, err := f.get(f.down, gvrConfigMaps, ns, "seed")
		if err != nil {
			return false, err.Error()
		}
		return dataEquals("k", "filled at the edge")(o)
	})
	f.delete(f.up, gvrConfigMaps, ns, "seed")
	f.delete(f.up, gvrConfigMaps, ns, "marker")
	f.waitGone(f.down, gvrConfigMaps, ns, "marker")
	if _, err := f.get(f.down, gvrConfigMaps, ns, "seed"); err != nil {
		t.Fatalf("create-only object was deleted downstream: %v", err)
	}
}

// TestDownsyncBadInputDoesNotBlock: a config naming an unknown resource, an object the edge rejects
// and a namespace the edge refuses are each logged with their reason and retried, while everything
// else keeps syncing and the syncer keeps running.
func TestDownsyncBadInputDoesNotBlock(t *testing.T) {
	f := newFixture(t)
	good, refused := f.namespace("good"), f.namespace("refused")
	policy := f.name + "-deny"
	// The edge refuses ConfigMaps named reject-* and this test's "refused" namespace.
	lift := f.denyAtEdge(policy, "", []string{"configmaps", "namespaces"},
		fmt.Sprintf("!object.metadata.name.startsWith('reject-') && object.metadata.name != '%s'", refused),
		gvrConfigMaps, configMap("default", "reject-probe", nil))

	f.create(f.up, gvrConfigMaps, configMap(good, "reject-me", map[string]interface{}{"k": "v"}))
	f.create(f.up, gvrConfigMaps, configMap(refused, "c1", map[string]interface{}{"k": "v"}))
	for i := 0; i < 5; i++ {
		f.create(f.up, gvrConfigMaps, configMap(good, fmt.Sprintf("ok-%d", i), map[string]interface{}{"k": "v"}))
	}
	f.syncerConfig(f.name, nsScope([]string{good, refused},
		resource("", "v1", "configmaps"), resource("example.com", "v1", "doesnotexist")))
	p := f.startSyncer()
	for i := 0; i < 5; i++ {
		f.waitFor(f.down, gvrConfigMaps, good, fmt.Sprintf("ok-%d", i), hasMark)
	}
	eventually(t, 30*time.Second, "the reasons in the log", func() (bool, string) {
		log := p.logText()
		for _, want := range []string{`resource \"doesnotexist.example.com\" is not served upstream`, "refused by the edge's policy", refused} {
			if !strings.Contains(log, want) {
				return false, "log lacks " + want
			}
		}
		return true, ""
	})
	// Retried with backoff: once the edge relents, the refused objects arrive.
	lift()
	f.waitFor(f.down, gvrConfigMaps, good, "reject-me", hasMark)
	f.waitFor(f.down, gvrConfigMaps, refused, "c1", hasMark)
	if p.exited() {
		t.Fatal("the syncer exited")
	}
	key := `kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="error"}`
	if got := p.metrics()[key]; got < 1 {
		t.Errorf("%s = %v, want >= 1", key, got)
	}
}

// TestDownsyncIdleSendsNothing: once converged, an idle syncer sends no writes, no LISTs and no GETs
// (it works from watches), counted from its own request metrics — with the edge's say on: a retained
// field, the Report drift policy, an autoscaler at the edge scaling the Deployment, a paused object.
func TestDownsyncIdleSendsNothing(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	for i := 0; i < 20; i++ {
		cm := configMap(ns, fmt.Sprintf("c-%02d", i), map[string]interface{}{"k": "v"})
		if i == 0 {
			cm.SetAnnotations(map[string]string{"edge.kubestellar.io/paused-until": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		}
		f.create(f.up, gvrConfigMaps, cm)
	}
	f.create(f.up, gvrDeployments, deployment(ns, "web", 2))
	cms, deployments := resource("", "v1", "configmaps"), resource("apps", "v1", "deployments")
	cms["retainFields"] = []interface{}{"data.k"}
	deployments["drift"] = "Report"
	f.syncerConfig(f.name, nsScope([]string{ns}, cms, deployments))
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", ns, nil))
	f.create(f.down, gvrHPAs, obj("autoscaling/v2", "HorizontalPodAutoscaler", ns, "web", map[string]interface{}{"spec": map[string]interface{}{
		"scaleTargetRef": map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
		"minReplicas":    int64(2), "maxReplicas": int64(3),
	}}))
	// The heartbeat (one status PATCH per SyncerConfig per period, 20s by default) is the one
	// deliberate idle request; it is tested on its own. So are the warnings told upstream about a
	// workload that does not run (the Deployment's image is not on the node): Event writes.
	p := f.startSyncer(withArgs("--heartbeat-period=1h", "--edge-warnings=false"))
	f.waitFor(f.down, gvrConfigMaps, ns, "c-19", nil)
	// The edge's controller manager writes the Deployment's status: not drift, nothing to write.
	f.waitFor(f.down, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		g, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		return g >= 1, "no status yet"
	})
	p.waitSettled()
	// Quiet window: for its whole length, the idle syncer must send nothing but watches.
	const quietWindow = 10 * time.Second
	requests := func(m map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			if strings.HasPrefix(k, "kubestellar_syncer_api_requests_total") && !strings.Contains(k, `verb="WATCH"`) {
				out[k] = v
			}
		}
		return out
	}
	before := requests(p.metrics())
	consistently(t, quietWindow, "no requests from the idle syncer", func() (bool, string) {
		var sent []string
		for k, v := range requests(p.metrics()) {
			if d := v - before[k]; d != 0 {
				sent = append(sent, fmt.Sprintf("%v more %s", d, k))
			}
		}
		return len(sent) == 0, strings.Join(sent, ", ")
	})
	after := p.metrics()
	if after[`kubestellar_syncer_api_requests_total{code="201",side="downstream",verb="CREATE"}`] < 20 { // 19 ConfigMaps (one paused), the Deployment
		t.Errorf("request metrics look wrong (fewer CREATEs than objects): %v", after)
	}
}

// TestSyncerBadFlags: a missing kubeconfig is a one-line error and exit status 1, not a panic.
func TestSyncerBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--upstream-kubeconfig=/does/not/exist", "--sync-target-uid=x"},
		{"--sync-target-uid=x"},
		{"--upstream-kubeconfig=" + upstream.Kubeconfig, "--downstream-kubeconfig=/does/not/exist", "--sync-target-uid=x"},
	} {
		out, err := exec.Command(syncerBin, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%v: exit %v, want status 1; output:\n%s", args, err, out)
			continue
		}
		text := strings.TrimSpace(string(out))
		if strings.Count(text, "\n") != 0 || !strings.HasPrefix(text, "syncer: ") || strings.Contains(text, "panic") {
			t.Errorf("%v: want one line starting with \"syncer: \", got:\n%s", args, text)
		}
	}
}
