package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var gvrEdgeSyncConfig = schema.GroupVersionResource{Group: "edge.kubestellar.io", Version: "v2alpha1", Resource: "edgesyncconfigs"}

// edgeSyncConfig creates or replaces an EdgeSyncConfig upstream (deleted when the test ends).
func (f *fixture) edgeSyncConfig(name string, spec map[string]interface{}) {
	f.t.Helper()
	f.config(gvrEdgeSyncConfig, "EdgeSyncConfig", name, spec)
}

func escEntry(group, version, kind, namespace, name string) map[string]interface{} {
	return map[string]interface{}{"group": group, "version": version, "kind": kind, "namespace": namespace, "name": name}
}

// TestEdgeSyncConfig: a configuration made of a legacy EdgeSyncConfig only, no SyncerConfig. The
// syncer starts while upstream does not serve EdgeSyncConfigs (it says so once, and is ready); the
// CRD installed later is picked up without a restart. The EdgeSyncConfig downsyncs a namespaced
// ConfigMap (and its Namespace), the ConfigMaps a labelSelector picks and a cluster-scoped
// ClusterRole, upsyncs an edge ConfigMap, gets
// the heartbeat and conditions, and its problems name it; deleting an entry deletes the edge copy.
func TestEdgeSyncConfig(t *testing.T) {
	f := newFixture(t)
	crdName := gvrEdgeSyncConfig.GroupResource().String()
	_, err := f.up.dyn.Resource(gvrEdgeSyncConfig).List(f.ctx, metav1.ListOptions{Limit: 1})
	servedAtStart := err == nil
	t.Cleanup(func() { _ = f.up.dyn.Resource(gvrCRDs).Delete(context.Background(), crdName, metav1.DeleteOptions{}) })

	p := f.startSyncer(withArgs("--heartbeat-period=500ms", "--heartbeat-refresh-period=1s"))
	eventually(t, time.Minute, "/readyz", func() (bool, string) {
		code, body := p.probe("/readyz")
		return code == 200, fmt.Sprintf("%d %s", code, body)
	})
	if !servedAtStart {
		if n := strings.Count(p.logText(), "EdgeSyncConfigs are not served upstream"); n != 1 {
			t.Errorf("%d log lines say that EdgeSyncConfigs are not served, want 1", n)
		}
		start := time.Now()
		if err := applyFile(f.ctx, f.up, filepath.Join(repoRoot, "manifests", "crds", "edge.kubestellar.io_edgesyncconfigs.yaml")); err != nil {
			t.Fatalf("installing the EdgeSyncConfig CRD: %v", err)
		}
		eventually(t, time.Minute, "the syncer to watch EdgeSyncConfigs", func() (bool, string) {
			return strings.Contains(p.logText(), "Watching EdgeSyncConfigs"), "no log line says so"
		})
		t.Logf("EdgeSyncConfigs watched %.1fs after the CRD was applied", time.Since(start).Seconds())
	}
	eventually(t, time.Minute, "EdgeSyncConfigs served upstream", func() (bool, string) {
		_, err := f.up.dyn.Resource(gvrEdgeSyncConfig).List(f.ctx, metav1.ListOptions{Limit: 1})
		return err == nil, fmt.Sprint(err)
	})

	ns := f.namespace("app")
	role := f.name + "-role"
	f.create(f.up, gvrConfigMaps, configMap(ns, "settings", map[string]interface{}{"a": "1"}))
	f.create(f.up, gvrClusterRoles, obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", role, map[string]interface{}{
		"rules": []interface{}{map[string]interface{}{"apiGroups": []interface{}{""}, "resources": []interface{}{"configmaps"}, "verbs": []interface{}{"get"}}}}))
	t.Cleanup(func() {
		for _, side := range []clients{f.up, f.down} {
			_ = side.dyn.Resource(gvrClusterRoles).Delete(context.Background(), role, metav1.DeleteOptions{})
		}
	})
	web := configMap(ns, "web", nil)
	web.SetLabels(map[string]string{"app": "web"})
	f.create(f.up, gvrConfigMaps, web)
	f.create(f.up, gvrConfigMaps, configMap(ns, "unlabelled", nil))
	cm := escEntry("", "v1", "ConfigMap", ns, "settings")
	labelled := escEntry("", "v1", "ConfigMap", ns, "*")
	labelled["labelSelector"] = map[string]interface{}{"matchLabels": map[string]interface{}{"app": "web"}}
	cr := escEntry("rbac.authorization.k8s.io", "v1", "ClusterRole", "", role)
	up := []interface{}{escEntry("", "v1", "ConfigMap", ns, "report")}
	f.edgeSyncConfig(f.name, map[string]interface{}{"downSyncedResources": []interface{}{cm, cr, labelled}, "upSyncedResources": up})

	f.waitFor(f.down, gvrConfigMaps, ns, "settings", func(o *unstructured.Unstructured) (bool, string) {
		if ok, why := hasMark(o); !ok {
			return false, why
		}
		return dataEquals("a", "1")(o)
	})
	f.waitFor(f.down, gvrClusterRoles, "", role, hasMark)
	f.waitFor(f.down, gvrConfigMaps, ns, "web", hasMark)
	if _, err := f.get(f.down, gvrConfigMaps, ns, "unlabelled"); !apierrors.IsNotFound(err) {
		t.Errorf("a ConfigMap the labelSelector leaves out is at the edge (%v)", err)
	}
	f.create(f.down, gvrConfigMaps, configMap(ns, "report", map[string]interface{}{"result": "pass"}))
	f.waitFor(f.up, gvrConfigMaps, ns, "report", upsynced)

	esc := f.waitFor(f.up, gvrEdgeSyncConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		beat, _, _ := unstructured.NestedString(o.Object, "status", "lastSyncerHeartbeatTime")
		ready, _, _ := conditionOf(o, "Ready")
		valid, reason, msg := conditionOf(o, "SelectionValid")
		return beat != "" && ready == "True" && valid == "True" && reason == "Resolved",
			fmt.Sprintf("heartbeat %q, Ready %s, SelectionValid %s (%s) %q", beat, ready, valid, reason, msg)
	})
	beat, _, _ := unstructured.NestedString(esc.Object, "status", "lastSyncerHeartbeatTime")
	f.waitFor(f.up, gvrEdgeSyncConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		next, _, _ := unstructured.NestedString(o.Object, "status", "lastSyncerHeartbeatTime")
		return next != beat, "the heartbeat does not move: " + next
	})

	// A problem names the EdgeSyncConfig and its entry.
	bad := escEntry("", "v1", "NoSuchKind", ns, "x")
	f.edgeSyncConfig(f.name, map[string]interface{}{"downSyncedResources": []interface{}{cm, cr, bad}, "upSyncedResources": up})
	want := fmt.Sprintf("EdgeSyncConfig %s: downSyncedResources[2]", f.name)
	f.waitFor(f.up, gvrEdgeSyncConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		status, reason, msg := conditionOf(o, "SelectionValid")
		return status == "False" && strings.Contains(msg, want), fmt.Sprintf("SelectionValid %s (%s) %q, want it to name %q", status, reason, msg, want)
	})

	// The ConfigMap's entry goes: its edge copy is deleted; the ClusterRole stays.
	f.edgeSyncConfig(f.name, map[string]interface{}{"downSyncedResources": []interface{}{cr}, "upSyncedResources": up})
	f.waitGone(f.down, gvrConfigMaps, ns, "settings")
	if _, err := f.get(f.down, gvrClusterRoles, "", role); err != nil {
		t.Errorf("the ClusterRole left the edge: %v", err)
	}
	f.waitFor(f.up, gvrEdgeSyncConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		status, reason, msg := conditionOf(o, "SelectionValid")
		return status == "True", fmt.Sprintf("SelectionValid %s (%s) %q", status, reason, msg)
	})
}
