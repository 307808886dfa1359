package e2e

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestObjectSizeLimit: with --max-object-bytes=64Ki, a 100 KiB ConfigMap is not written at the edge
// and is said upstream (a Warning Event ObjectTooLarge, ObjectsSynced False naming it), while a small
// one syncs; one that grows past the limit keeps its last version at the edge; each syncs once back
// under it, and the failure goes.
func TestObjectSizeLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("app")
	big := strings.Repeat("x", 100<<10)
	f.create(f.up, gvrConfigMaps, configMap(ns, "small", map[string]interface{}{"k": "v"}))
	f.create(f.up, gvrConfigMaps, configMap(ns, "huge", map[string]interface{}{"k": big}))
	f.create(f.up, gvrConfigMaps, configMap(ns, "grows", map[string]interface{}{"k": "v1"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	f.startSyncer(f.ownConfigs(), withArgs("--max-object-bytes=64Ki", "--heartbeat-period=1s"))

	f.waitFor(f.down, gvrConfigMaps, ns, "small", hasMark)
	f.waitFor(f.down, gvrConfigMaps, ns, "grows", dataEquals("k", "v1"))
	f.waitEvent(f.up, ns, "huge", "ObjectTooLarge", "over the 65536 the syncer holds (--max-object-bytes)")
	objectsSynced := func(want string, failing bool) {
		t.Helper()
		f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
			status, _, msg := conditionOf(o, "ObjectsSynced")
			return (status == "False") == failing && strings.Contains(msg, want), status + ": " + msg
		})
	}
	objectsSynced("configmaps "+ns+"/huge", true)
	if _, err := f.get(f.down, gvrConfigMaps, ns, "huge"); err == nil {
		t.Error("the ConfigMap over the limit was written at the edge")
	}

	// Grown past the limit: the edge keeps its last version.
	f.update(f.up, gvrConfigMaps, ns, "grows", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, big, "data", "k")
	})
	f.waitEvent(f.up, ns, "grows", "ObjectTooLarge", "not written at the edge, which keeps the version it has")
	time.Sleep(time.Second) // not a wait on a result: a write, were one to follow, would have landed
	if o, err := f.get(f.down, gvrConfigMaps, ns, "grows"); err != nil || o.Object["data"].(map[string]interface{})["k"] != "v1" {
		t.Errorf("after growing past the limit the edge holds %v (%v); want its last version", o, err)
	}

	// Back under it: both sync, and ObjectsSynced turns True.
	for _, name := range []string{"huge", "grows"} {
		f.update(f.up, gvrConfigMaps, ns, name, func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "small again", "data", "k")
		})
		f.waitFor(f.down, gvrConfigMaps, ns, name, dataEquals("k", "small again"))
	}
	objectsSynced("", false)
}
