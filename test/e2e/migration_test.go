package e2e

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/mapping"
)

// TestMigrationFromReleaseSyncer (issue 14): on an edge where the release-0.14 syncer ran — its
// objects carry edge.kubestellar.io/downsynced but not this syncer's label, and were written by
// POST and PUT under its binary's name as field manager ("syncer") — this syncer takes them over
// without deleting or recreating anything (UIDs unchanged), and a data key and an annotation removed
// upstream afterwards are removed at the edge (the old manager's fields were handed over).
func TestMigrationFromReleaseSyncer(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	up := configMap(ns, "cm", map[string]interface{}{"a": "1", "b": "2"})
	up.SetAnnotations(map[string]string{"team": "x"})
	f.create(f.up, gvrConfigMaps, up)

	// Written at the edge exactly as the release-0.14 syncer writes: a copy with its annotation, no
	// label, created and then updated (PUT) under field manager "syncer".
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", ns, nil))
	old := configMap(ns, "cm", map[string]interface{}{"a": "1", "b": "2"})
	old.SetAnnotations(map[string]string{"team": "x", mapping.DownsyncedAnnotation: "ConfigMap/" + ns + "/cm"})
	created, err := f.down.dyn.Resource(gvrConfigMaps).Namespace(ns).Create(f.ctx, old, metav1.CreateOptions{FieldManager: "syncer"})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["data"] = map[string]interface{}{"a": "1", "b": "2"}
	if created, err = f.down.dyn.Resource(gvrConfigMaps).Namespace(ns).Update(f.ctx, created, metav1.UpdateOptions{FieldManager: "syncer"}); err != nil {
		t.Fatal(err)
	}

	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	p := f.startSyncer()
	f.waitFor(f.down, gvrConfigMaps, ns, "cm", func(o *unstructured.Unstructured) (bool, string) {
		return mapping.OwnerOf(o) == f.name, "not taken over yet: labels " + fmt.Sprint(o.GetLabels())
	})
	taken, err := f.get(f.down, gvrConfigMaps, ns, "cm")
	if err != nil {
		t.Fatal(err)
	}
	if taken.GetUID() != created.GetUID() {
		t.Fatalf("the object was recreated: UID %s, was %s", taken.GetUID(), created.GetUID())
	}
	for _, mf := range taken.GetManagedFields() {
		if mf.Manager == "syncer" {
			t.Errorf("the release-0.14 syncer still owns fields: %+v", mf)
		}
	}

	f.update(f.up, gvrConfigMaps, ns, "cm", func(o *unstructured.Unstructured) {
		o.Object["data"] = map[string]interface{}{"a": "1"}
		o.SetAnnotations(nil)
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "cm", func(o *unstructured.Unstructured) (bool, string) {
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		_, hasB := data["b"]
		_, hasTeam := o.GetAnnotations()["team"]
		return !hasB && !hasTeam && data["a"] == "1", fmt.Sprintf("data %v, annotations %v", data, o.GetAnnotations())
	})
	if now, _ := f.get(f.down, gvrConfigMaps, ns, "cm"); now.GetUID() != created.GetUID() {
		t.Fatalf("the object was recreated: UID %s, was %s", now.GetUID(), created.GetUID())
	}
	if p.exited() {
		t.Fatal("the syncer exited")
	}
}
