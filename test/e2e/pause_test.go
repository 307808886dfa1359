package e2e

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const pausedUntil = "edge.kubestellar.io/paused-until"

// TestPause: edge.kubestellar.io/paused-until holds every write for an object until its time.
//   - On the upstream object, set before the syncer starts: its edge copy is not created while the
//     pause lasts; upstream shows the pause (label paused.edge.kubestellar.io/<target> with its end,
//     Event Paused); at its time the copy arrives by itself, the label goes, Event Resumed.
//   - On the edge copy (a technician at the site, with a hotfix): upstream changes do not reach it,
//     and its hotfix is not put back, until the technician removes the annotation; then it converges.
//   - On a SyncerConfig: what it alone selects (a namespace of its own, and a ConfigMap there) is not
//     created until its time.
//   - A pause in the past pauses nothing and says so (Warning Event PauseInvalid). Set later, while
//     the copy runs at the edge, it is told there too (Events Paused and Resumed on the edge copy).
func TestPause(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("ns")
	end := time.Now().Add(20 * time.Second).UTC().Truncate(time.Second)
	held := configMap(ns, "held", map[string]interface{}{"mode": "one"})
	held.SetAnnotations(map[string]string{pausedUntil: end.Format(time.RFC3339)})
	f.create(f.up, gvrConfigMaps, held)
	f.create(f.up, gvrConfigMaps, configMap(ns, "site", map[string]interface{}{"mode": "one"}))
	past := configMap(ns, "past", map[string]interface{}{"mode": "one"})
	past.SetAnnotations(map[string]string{pausedUntil: "2020-01-01T00:00:00Z"})
	f.create(f.up, gvrConfigMaps, past)
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	byConfig := f.namespace("cfg")
	f.create(f.up, gvrConfigMaps, configMap(byConfig, "cfg", map[string]interface{}{"mode": "one"}))
	f.syncerConfig(f.name+"-paused", nsScope([]string{byConfig}, resource("", "v1", "configmaps")))
	f.update(f.up, gvrSyncerConfig, "", f.name+"-paused", func(o *unstructured.Unstructured) {
		o.SetAnnotations(map[string]string{pausedUntil: end.Format(time.RFC3339)})
	})
	f.startSyncer(f.ownConfigs())
	label := "paused.edge.kubestellar.io/" + f.name

	f.waitFor(f.down, gvrConfigMaps, ns, "site", dataEquals("mode", "one"))
	f.waitFor(f.down, gvrConfigMaps, ns, "past", dataEquals("mode", "one"))
	f.waitEvent(f.up, ns, "past", "PauseInvalid", "is in the past")
	f.waitFor(f.up, gvrConfigMaps, ns, "held", func(o *unstructured.Unstructured) (bool, string) {
		v := o.GetLabels()[label]
		return v == end.Format("20060102T150405Z"), "label " + v
	})
	f.waitEvent(f.up, ns, "held", "Paused", "on the upstream object")
	f.waitEvent(f.up, byConfig, "cfg", "Paused", "on its SyncerConfigs")
	for _, o := range []struct{ ns, name string }{{ns, "held"}, {byConfig, "cfg"}} {
		if _, err := f.get(f.down, gvrConfigMaps, o.ns, o.name); err == nil && time.Now().Before(end) {
			t.Errorf("paused object %s/%s was created at the edge before its pause ended", o.ns, o.name)
		}
	}

	// The technician pauses the site's copy and hotfixes it.
	f.update(f.down, gvrConfigMaps, ns, "site", func(o *unstructured.Unstructured) {
		a := o.GetAnnotations()
		a[pausedUntil] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		o.SetAnnotations(a)
		_ = unstructured.SetNestedField(o.Object, "hotfix", "data", "mode")
	})
	// Once the syncer has seen the pause (it says so upstream), the mailbox changes the object: a
	// change it reads before its cache holds the technician's write would race the pause.
	f.waitEvent(f.up, ns, "site", "Paused", "on the edge copy")
	f.update(f.up, gvrConfigMaps, ns, "site", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "two", "data", "mode")
	})
	consistently(t, 3*time.Second, "the paused edge copy keeps its hotfix", func() (bool, string) {
		o, err := f.get(f.down, gvrConfigMaps, ns, "site")
		if err != nil {
			return false, err.Error()
		}
		mode, _, _ := unstructured.NestedString(o.Object, "data", "mode")
		return mode == "hotfix", "mode " + mode
	})
	f.update(f.down, gvrConfigMaps, ns, "site", func(o *unstructured.Unstructured) {
		a := o.GetAnnotations()
		delete(a, pausedUntil)
		o.SetAnnotations(a)
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "site", dataEquals("mode", "two"))

	// Paused upstream while its copy runs at the edge: the technician sees it there too (an Event on
	// the edge copy); removed, the object resumes at once.
	f.update(f.up, gvrConfigMaps, ns, "past", func(o *unstructured.Unstructured) {
		a := o.GetAnnotations()
		a[pausedUntil] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		o.SetAnnotations(a)
	})
	f.waitEvent(f.down, ns, "past", "Paused", "The syncer writes nothing for this object until")
	f.update(f.up, gvrConfigMaps, ns, "past", func(o *unstructured.Unstructured) {
		a := o.GetAnnotations()
		delete(a, pausedUntil)
		o.SetAnnotations(a)
		_ = unstructured.SetNestedField(o.Object, "two", "data", "mode")
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "past", dataEquals("mode", "two"))
	f.waitEvent(f.down, ns, "past", "Resumed", "The pause ended")

	// The upstream pause ends by itself.
	f.waitForWithin(time.Until(end)+30*time.Second, f.down, gvrConfigMaps, ns, "held", dataEquals("mode", "one"))
	if late := time.Since(end); late < 0 {
		t.Errorf("the paused object reached the edge %v before its pause ended", -late)
	}
	f.waitFor(f.up, gvrConfigMaps, ns, "held", func(o *unstructured.Unstructured) (bool, string) {
		v, ok := o.GetLabels()[label]
		return !ok, fmt.Sprintf("label %q", v)
	})
	f.waitEvent(f.up, ns, "held", "Resumed", "the pause ended")
	f.waitFor(f.down, gvrConfigMaps, byConfig, "cfg", dataEquals("mode", "one"))
}
