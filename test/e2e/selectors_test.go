package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The e2e tests of the selectors: labelSelector, annotationSelector and kind on selection
// entries, and labelSelector on upsync entries. Objects move in and out of the selection by events,
// with no restart and well within the informers' resync period.

// withLabel sets (or, with value "", removes) one label of an object.
func withLabel(key, value string) func(*unstructured.Unstructured) {
	return func(o *unstructured.Unstructured) { o.SetLabels(withKey(o.GetLabels(), key, value)) }
}

// withAnnotation sets (or, with value "", removes) one annotation of an object.
func withAnnotation(key, value string) func(*unstructured.Unstructured) {
	return func(o *unstructured.Unstructured) { o.SetAnnotations(withKey(o.GetAnnotations(), key, value)) }
}

func withKey(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	if value == "" {
		delete(m, key)
	} else {
		m[key] = value
	}
	return m
}

func labelledConfigMap(ns, name string, labels map[string]string) *unstructured.Unstructured {
	cm := configMap(ns, name, map[string]interface{}{"k": "v"})
	cm.SetLabels(labels)
	return cm
}

// absentFor checks that an object does not appear on a side for a while (after something that
// shows the syncer has processed its events).
func (f *fixture) absentFor(c clients, ns, name string, d time.Duration) {
	f.t.Helper()
	if _, err := f.get(c, gvrConfigMaps, ns, name); !apierrors.IsNotFound(err) {
		f.t.Fatalf("configmaps %s/%s is there (get: %v)", ns, name, err)
	}
	consistently(f.t, d, fmt.Sprintf("configmaps %s/%s stays away", ns, name), func() (bool, string) {
		_, err := f.get(c, gvrConfigMaps, ns, name)
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
}

// moves changes a ConfigMap on one side and waits until its copy on the other side is there and
// passes check (nil: is gone), logging how long that took.
func (f *fixture) moves(what string, on, at clients, ns, name string, change func(*unstructured.Unstructured), check func(*unstructured.Unstructured) (bool, string)) {
	f.t.Helper()
	start := time.Now()
	f.update(on, gvrConfigMaps, ns, name, change)
	if check == nil {
		f.waitGone(at, gvrConfigMaps, ns, name)
	} else {
		f.waitFor(at, gvrConfigMaps, ns, name, check)
	}
	f.t.Logf("%s: %s", what, time.Since(start).Round(time.Millisecond))
}

// TestSelectorLabelsMoveObjectsInAndOut: a namespaceScope entry with a labelSelector (matchLabels
// and a matchExpressions In) downsyncs only the matching ConfigMaps; relabelling one upstream so
// that it stops matching deletes its edge copy, and relabelling it back brings it back, by events.
func TestSelectorLabelsMoveObjectsInAndOut(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("app")
	web := map[string]string{"app": "web", "tier": "front"}
	f.create(f.up, gvrConfigMaps, labelledConfigMap(ns, "web", web))
	f.create(f.up, gvrConfigMaps, labelledConfigMap(ns, "db", map[string]string{"app": "db", "tier": "front"}))
	f.create(f.up, gvrConfigMaps, labelledConfigMap(ns, "other-tier", map[string]string{"app": "web", "tier": "db"}))
	entry := resource("", "v1", "configmaps")
	entry["labelSelector"] = map[string]interface{}{
		"matchLabels":      map[string]interface{}{"app": "web"},
		"matchExpressions": []interface{}{map[string]interface{}{"key": "tier", "operator": "In", "values": []interface{}{"front", "back"}}},
	}
	f.syncerConfig(f.name, nsScope([]string{ns}, entry))
	f.startSyncer()

	f.waitFor(f.down, gvrConfigMaps, ns, "web", hasMark)
	f.absentFor(f.down, ns, "db", 2*time.Second)
	f.absentFor(f.down, ns, "other-tier", 0)

	f.moves("relabelled out: edge copy deleted", f.up, f.down, ns, "web", withLabel("app", "retired"), nil)
	f.moves("relabelled in: edge copy created", f.up, f.down, ns, "web", withLabel("app", "web"), hasMark)
	f.moves("another object relabelled in", f.up, f.down, ns, "db", withLabel("app", "web"), hasMark)
	// Selected objects are still kept up to date.
	f.update(f.up, gvrConfigMaps, ns, "web", func(o *unstructured.Unstructured) { o.Object["data"] = map[string]interface{}{"k": "new"} })
	f.waitFor(f.down, gvrConfigMaps, ns, "web", dataEquals("k", "new"))
}

// TestSelectorAnnotations: a namespacedObjects entry with an annotationSelector (a free-text value,
// and a DoesNotExist expression) downsyncs only the objects whose annotations match; annotating and
// unannotating moves them in and out.
func TestSelectorAnnotations(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("app")
	const syncKey, skipKey, syncValue = "example.com/sync", "example.com/skip", "yes, please"
	tagged := configMap(ns, "tagged", map[string]interface{}{"k": "v"})
	tagged.SetAnnotations(map[string]string{syncKey: syncValue})
	f.create(f.up, gvrConfigMaps, tagged)
	f.create(f.up, gvrConfigMaps, configMap(ns, "untagged", map[string]interface{}{"k": "v"}))
	f.syncerConfig(f.name, map[string]interface{}{"namespacedObjects": []interface{}{map[string]interface{}{
		"resource": "configmaps", "apiVersion": "v1",
		"annotationSelector": map[string]interface{}{
			"matchLabels":      map[string]interface{}{syncKey: syncValue},
			"matchExpressions": []interface{}{map[string]interface{}{"key": skipKey, "operator": "DoesNotExist"}},
		},
		"objectsByNamespace": []interface{}{map[string]interface{}{"namespace": ns, "names": []interface{}{"*"}}},
	}}})
	f.startSyncer()

	f.waitFor(f.down, gvrConfigMaps, ns, "tagged", hasMark)
	f.absentFor(f.down, ns, "untagged", 2*time.Second)
	f.moves("annotated in", f.up, f.down, ns, "untagged", withAnnotation(syncKey, syncValue), hasMark)
	f.moves("annotated out (DoesNotExist)", f.up, f.down, ns, "tagged", withAnnotation(skipKey, "true"), nil)
}

// TestSelectorKindEntry: an entry may name its resource by kind instead of resource; an unknown kind
// is reported on its SyncerConfig with the kind meant.
func TestSelectorKindEntry(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("app")
	f.create(f.up, gvrConfigMaps, configMap(ns, "settings", map[string]interface{}{"color": "blue"}))
	f.create(f.up, gvrConfigMaps, configMap(ns, "unnamed", map[string]interface{}{"color": "red"}))
	f.syncerConfig(f.name, map[string]interface{}{"namespacedObjects": []interface{}{map[string]interface{}{
		"kind": "ConfigMap", "apiVersion": "v1",
		"objectsByNamespace": []interface{}{map[string]interface{}{"namespace": ns, "names": []interface{}{"settings"}}},
	}}})
	bad := f.name + "-bad"
	f.syncerConfig(bad, map[string]interface{}{"clusterScope": []interface{}{map[string]interface{}{"kind": "namespace", "apiVersion": "v1"}}})
	f.startSyncer(withArgs("--heartbeat-period=500ms"))

	f.waitFor(f.down, gvrConfigMaps, ns, "settings", dataEquals("color", "blue"))
	f.waitFor(f.down, gvrNamespaces, "", ns, nil)
	f.update(f.up, gvrConfigMaps, ns, "settings", func(o *unstructured.Unstructured) { o.Object["data"] = map[string]interface{}{"color": "green"} })
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", dataEquals("color", "green"))
	f.absentFor(f.down, ns, "unnamed", time.Second)
	f.delete(f.up, gvrConfigMaps, ns, "settings")
	f.waitGone(f.down, gvrConfigMaps, ns, "settings")

	eventually(t, 30*time.Second, "the unknown kind reported on its SyncerConfig", func() (bool, string) {
		o, err := f.get(f.up, gvrSyncerConfig, "", bad)
		if err != nil {
			return false, err.Error()
		}
		status, reason, message := conditionOf(o, "SelectionValid")
		return status == "False" && strings.Contains(message, `kind "namespace" is not served upstream in group ""`) &&
				strings.Contains(message, `did you mean kind "Namespace"`),
			fmt.Sprintf("SelectionValid = %s (%s) %q", status, reason, message)
	})
}

// TestSelectorUpsyncLabels: an upsync entry with a labelSelector copies up only the matching edge
// objects; relabelling an edge object so that it stops matching deletes its upstream copy, and
// relabelling it back upsyncs it again.
func TestSelectorUpsyncLabels(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", ns, nil))
	f.create(f.down, gvrConfigMaps, labelledConfigMap(ns, "report", map[string]string{"upsync": "yes"}))
	f.create(f.down, gvrConfigMaps, labelledConfigMap(ns, "private", map[string]string{"upsync": "no"}))
	f.syncerConfig(f.name, map[string]interface{}{"upsync": []interface{}{map[string]interface{}{
		"apiGroup": "", "kinds": []interface{}{"ConfigMap"}, "namespaces": []interface{}{ns}, "names": []interface{}{"*"},
		"labelSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"upsync": "yes"}},
	}}})
	f.startSyncer()

	f.waitFor(f.up, gvrConfigMaps, ns, "report", upsynced)
	f.absentFor(f.up, ns, "private", 2*time.Second)
	f.moves("edge object relabelled out: upstream copy deleted", f.down, f.up, ns, "report", withLabel("upsync", "no"), nil)
	f.moves("edge object relabelled in: upsynced again", f.down, f.up, ns, "report", withLabel("upsync", "yes"), upsynced)
	f.moves("another edge object relabelled in", f.down, f.up, ns, "private", withLabel("upsync", "yes"), upsynced)
}
