package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDeletionBreaker: a SyncerConfig changed by mistake deselects 30 objects and their namespace at
// once; with a breaker of 10 deletions (and 20% of what the syncer owns) a minute, none goes: the 30
// ConfigMaps are held (the namespace waits for them: its deletion would take them). Condition
// DeletionsHeld says how many and how the edge lets them go, the metric counts them, creates go on,
// a restart keeps holding. A release made in the mailbox, whatever it names, releases nothing and
// says why (Warning Event ReleaseRefused on the SyncerConfig); so does one at the edge naming fewer
// than held; the edge owner's release naming them all lets them go, and the namespace after them.
func TestDeletionBreaker(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns, other := f.namespace("ns"), f.namespace("other")
	for i := 0; i < 30; i++ {
		f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("c%02d", i), map[string]interface{}{"k": "v"}))
	}
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	release := f.releaseObject()
	args := withArgs("--deletion-breaker-count=10", "--deletion-breaker-percent=20", "--heartbeat-period=1s", "--deletion-release-configmap="+release)
	p := f.startSyncer(f.ownConfigs(), args)
	f.waitFor(f.down, gvrConfigMaps, ns, "c29", hasMark)
	f.waitFor(f.down, gvrConfigMaps, ns, "c00", hasMark)

	f.syncerConfig(f.name, nsScope([]string{other}, resource("", "v1", "configmaps"))) // the mistake
	held := func(n int) { t.Helper(); waitDeletionsHeld(f, n) }
	held(30)
	if n := edgeCopies(f, ns); n != 30 {
		t.Errorf("%d ConfigMaps left at the edge; want all 30 held", n)
	}
	if got := p.metrics()["kubestellar_syncer_deletions_held{}"]; got != 30 {
		t.Errorf("kubestellar_syncer_deletions_held = %v, want 30 (the ConfigMaps; their namespace waits for them)", got)
	}
	f.create(f.up, gvrConfigMaps, configMap(other, "new", map[string]interface{}{"k": "v"}))
	f.waitFor(f.down, gvrConfigMaps, other, "new", hasMark) // creates go on

	// A restart keeps holding.
	p.stop()
	p = f.startSyncer(f.ownConfigs(), args)
	eventually(t, podTimeout, "the restarted syncer holds the 30 deletions", func() (bool, string) {
		m, err := p.scrape()
		if err != nil {
			return false, err.Error()
		}
		n, got := edgeCopies(f, ns), m["kubestellar_syncer_deletions_held{}"]
		return n == 30 && got == 30, fmt.Sprintf("%d ConfigMaps left at the edge, kubestellar_syncer_deletions_held %v", n, got)
	})
	held(30)

	// The mailbox cannot release: not by the config it has, not by one made for it.
	f.update(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) {
		o.SetAnnotations(map[string]string{"edge.kubestellar.io/release-deletions": "9223372036854775807"})
	})
	f.syncerConfig(f.name+"-zz", map[string]interface{}{})
	f.update(f.up, gvrSyncerConfig, "", f.name+"-zz", func(o *unstructured.Unstructured) {
		o.SetAnnotations(map[string]string{"edge.kubestellar.io/release-deletions": "999999"})
	})
	f.waitEvent(f.up, "default", f.name, "ReleaseRefused", "takes releases from its edge only")
	consistently(t, 5*time.Second, "a mailbox release releases nothing", func() (bool, string) {
		n := edgeCopies(f, ns)
		return n == 30, fmt.Sprintf("%d ConfigMaps left at the edge", n)
	})
	held(30)

	f.releaseAtEdge(release, "5") // fewer than held
	held(30)
	f.releaseAtEdge(release, "30")
	eventually(t, podTimeout, "the released deletions done", func() (bool, string) {
		n := edgeCopies(f, ns)
		return n == 0, fmt.Sprintf("%d left", n)
	})
	waitDeletionsHeld(f, 0)
	f.waitGone(f.down, gvrNamespaces, "", ns) // the namespace once nothing is left in it
}

// releaseObject makes the edge's release object of a syncer the test runs (an empty ConfigMap in a
// namespace of its own at the edge), and returns it as --deletion-release-configmap names it.
func (f *fixture) releaseObject() string {
	f.t.Helper()
	ns := f.name + "-edge-owner"
	if _, err := f.down.kube.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = f.down.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	f.create(f.down, gvrConfigMaps, configMap(ns, "release", nil))
	return ns + "/release"
}

// releaseAtEdge writes the edge owner's release, naming count, on the release object.
func (f *fixture) releaseAtEdge(release, count string) {
	f.t.Helper()
	ns, name, _ := strings.Cut(release, "/")
	f.update(f.down, gvrConfigMaps, ns, name, func(o *unstructured.Unstructured) {
		o.SetAnnotations(map[string]string{"edge.kubestellar.io/release-deletions": count})
	})
}

// TestDeletionBreakerUndone: when the change that tripped the breaker is undone, no deletion is left
// to release and the hold ends by itself: DeletionsHeld False, the gauge 0, every edge copy kept. (The
// mistake here names a namespace that does not exist upstream, so it made nothing at the edge whose
// deletion the undo would make due: such a deletion would stay held until released.)
func TestDeletionBreakerUndone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns, other := f.namespace("ns"), f.name+"-missing"
	for i := 0; i < 30; i++ {
		f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("c%02d", i), map[string]interface{}{"k": "v"}))
	}
	right := nsScope([]string{ns}, resource("", "v1", "configmaps"))
	f.syncerConfig(f.name, right)
	p := f.startSyncer(f.ownConfigs(), withArgs("--deletion-breaker-count=10", "--deletion-breaker-percent=20", "--heartbeat-period=1s",
		"--deletion-release-configmap="+f.releaseObject()))
	f.waitFor(f.down, gvrConfigMaps, ns, "c29", hasMark)
	f.waitFor(f.down, gvrConfigMaps, ns, "c00", hasMark)

	f.syncerConfig(f.name, nsScope([]string{other}, resource("", "v1", "configmaps"))) // the mistake
	waitDeletionsHeld(f, 30)
	f.syncerConfig(f.name, right) // undone
	waitDeletionsHeld(f, 0)
	if n, held := edgeCopies(f, ns), p.metrics()["kubestellar_syncer_deletions_held{}"]; n != 30 || held != 0 {
		t.Errorf("after the undo: %d ConfigMaps at the edge, kubestellar_syncer_deletions_held %v; want 30 and 0", n, held)
	}
}

// waitDeletionsHeld waits until the test's SyncerConfig says n deletions are held (0: none, the
// condition False).
func waitDeletionsHeld(f *fixture, n int) {
	f.t.Helper()
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		status, reason, msg := conditionOf(o, "DeletionsHeld")
		if n == 0 {
			return status == "False" && reason == "NoneHeld", fmt.Sprintf("DeletionsHeld %s %s", status, reason)
		}
		return status == "True" && reason == "TooManyDeletions" && strings.Contains(msg, fmt.Sprintf(`edge.kubestellar.io/release-deletions=%d `, n)),
			fmt.Sprintf("DeletionsHeld %s %s: %s", status, reason, msg)
	})
}

// edgeCopies counts the syncer's ConfigMaps at the edge in a namespace.
func edgeCopies(f *fixture, ns string) int {
	f.t.Helper()
	list, err := f.down.dyn.Resource(gvrConfigMaps).Namespace(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, o := range list.Items {
		if ok, _ := hasMark(&o); ok {
			n++
		}
	}
	return n
}

// TestNamespaceDeletionKeepsTheEdgesOwn: two namespaces deleted upstream with their contents (as an
// upstream namespace controller does). The syncer deletes its own copies in them, each a deletion of
// its own; the namespace that held nothing else goes after them; the one where the edge owner made a
// ConfigMap by hand is kept, with that ConfigMap, and ObjectsSynced says why. No object the syncer did
// not write is deleted by a cascade it started.
func TestNamespaceDeletionKeepsTheEdgesOwn(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	kept, gone := f.namespace("kept"), f.namespace("gone")
	for _, ns := range []string{kept, gone} {
		for i := 0; i < 3; i++ {
			f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("c%d", i), map[string]interface{}{"k": "v"}))
		}
	}
	f.syncerConfig(f.name, nsScope([]string{kept, gone}, resource("", "v1", "configmaps")))
	f.startSyncer(f.ownConfigs(), withArgs("--heartbeat-period=1s"))
	for _, ns := range []string{kept, gone} {
		f.waitFor(f.down, gvrConfigMaps, ns, "c2", hasMark)
	}
	f.create(f.down, gvrConfigMaps, configMap(kept, "made-at-the-edge", map[string]interface{}{"owner": "site"}))

	for _, ns := range []string{kept, gone} {
		f.delete(f.up, gvrNamespaces, "", ns)
		for i := 0; i < 3; i++ {
			_ = f.up.dyn.Resource(gvrConfigMaps).Namespace(ns).Delete(f.ctx, fmt.Sprintf("c%d", i), metav1.DeleteOptions{})
		}
	}
	f.waitGone(f.down, gvrNamespaces, "", gone)
	eventually(t, podTimeout, "the syncer's copies deleted in the kept namespace", func() (bool, string) {
		n := edgeCopies(f, kept)
		return n == 0, fmt.Sprintf("%d left", n)
	})
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		_, _, msg := conditionOf(o, "ObjectsSynced")
		return strings.Contains(msg, "objects the syncer did not write there") && strings.Contains(msg, "ConfigMap "+kept+"/made-at-the-edge"), "ObjectsSynced: " + msg
	})
	consistently(t, 5*time.Second, "the kept namespace and the edge's ConfigMap stay", func() (bool, string) {
		nsObj, err := f.get(f.down, gvrNamespaces, "", kept)
		if err != nil || nsObj.GetDeletionTimestamp() != nil {
			return false, fmt.Sprintf("namespace %s: %v (deleting: %v)", kept, err, nsObj != nil && nsObj.GetDeletionTimestamp() != nil)
		}
		_, err = f.get(f.down, gvrConfigMaps, kept, "made-at-the-edge")
		return err == nil, fmt.Sprintf("the edge's ConfigMap: %v", err)
	})
}

// TestRewritesCountedAsDeletions: with a breaker of 3 a minute, the deletions a mailbox makes without
// deleting are held as deletions are. Five widgets whose spec.value changes upstream, where the edge's
// API holds it immutable (recreating each means deleting it), are held, their edge UIDs kept;
// released at the edge, they are recreated. Then five ConfigMaps emptied upstream are held with their
// data at the edge.
func TestRewritesCountedAsDeletions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("app")
	group := "frozen-" + f.name + ".e2e.example.com"
	upCRD := widgetCRD(group, nil)
	downCRD := widgetCRD(group, map[string]interface{}{"spec": map[string]interface{}{"type": "object", "x-kubernetes-preserve-unknown-fields": true,
		"properties": map[string]interface{}{"value": map[string]interface{}{"type": "string",
			"x-kubernetes-validations": []interface{}{map[string]interface{}{"rule": "self == oldSelf", "message": "field is immutable"}}}}}})
	f.create(f.up, gvrCRDs, upCRD)
	f.create(f.down, gvrCRDs, downCRD)
	t.Cleanup(func() { f.delete(f.up, gvrCRDs, "", upCRD.GetName()); f.delete(f.down, gvrCRDs, "", downCRD.GetName()) })
	f.waitFor(f.up, gvrCRDs, "", upCRD.GetName(), established)
	f.waitFor(f.down, gvrCRDs, "", downCRD.GetName(), established)
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	for i := 0; i < 5; i++ {
		f.create(f.up, widgets, obj(group+"/v1", "Widget", ns, fmt.Sprintf("w%d", i), map[string]interface{}{"spec": map[string]interface{}{"value": "v1"}}))
		f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("full%d", i), map[string]interface{}{"k": "v"}))
	}
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps"), resource(group, "v1", "widgets")))
	release := f.releaseObject()
	f.startSyncer(f.ownConfigs(), withArgs("--deletion-breaker-count=3", "--deletion-breaker-percent=5", "--heartbeat-period=1s",
		"--deletion-release-configmap="+release))
	uids := map[string]string{}
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("w%d", i)
		uids[name] = string(f.waitFor(f.down, widgets, ns, name, hasMark).GetUID())
		f.waitFor(f.down, gvrConfigMaps, ns, fmt.Sprintf("full%d", i), hasMark)
	}

	for name := range uids {
		f.update(f.up, widgets, ns, name, func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "v2", "spec", "value")
		})
	}
	waitDeletionsHeld(f, 5)
	for name, uid := range uids {
		if o, err := f.get(f.down, widgets, ns, name); err != nil || string(o.GetUID()) != uid {
			t.Errorf("%s at the edge while its recreation is held: %v (uid changed: %v)", name, err, err == nil && string(o.GetUID()) != uid)
		}
	}
	f.releaseAtEdge(release, "5")
	for name, uid := range uids {
		f.waitFor(f.down, widgets, ns, name, func(o *unstructured.Unstructured) (bool, string) {
			v, _, _ := unstructured.NestedString(o.Object, "spec", "value")
			return string(o.GetUID()) != uid && v == "v2", fmt.Sprintf("uid %s (was %s), spec.value %q", o.GetUID(), uid, v)
		})
	}
	waitDeletionsHeld(f, 0)

	for i := 0; i < 5; i++ {
		f.update(f.up, gvrConfigMaps, ns, fmt.Sprintf("full%d", i), func(o *unstructured.Unstructured) { delete(o.Object, "data") })
	}
	waitDeletionsHeld(f, 5)
	for i := 0; i < 5; i++ {
		if o, err := f.get(f.down, gvrConfigMaps, ns, fmt.Sprintf("full%d", i)); err != nil || o.Object["data"] == nil {
			t.Errorf("full%d at the edge while its emptying is held: %v, data %v", i, err, o)
		}
	}
}
