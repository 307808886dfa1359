package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/syncer/pkg/mapping"
)

// legacyWrite writes obj at the edge as the release-0.14 syncer writes: a plain POST, or a PUT of
// the whole object, under its binary's name as field manager ("syncer"). Unless keepManaged, the
// body carries `managedFields: []`, as the release-0.14 syncer sends with every write: that clears
// the object's field ownership.
func (f *fixture) legacyWrite(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, keepManaged bool) *unstructured.Unstructured {
	f.t.Helper()
	client := f.down.dyn.Resource(gvr).Namespace(obj.GetNamespace())
	clear := func(o *unstructured.Unstructured) {
		if !keepManaged {
			o.SetManagedFields([]metav1.ManagedFieldsEntry{})
		}
	}
	body := obj.DeepCopy()
	clear(body)
	created, err := client.Create(f.ctx, body, metav1.CreateOptions{FieldManager: "syncer"})
	if err != nil {
		f.t.Fatalf("the release-0.14 syncer's create of %s %s: %v", gvr.Resource, obj.GetName(), err)
	}
	// Its next round: a PUT of the same content.
	clear(created)
	updated, err := client.Update(f.ctx, created, metav1.UpdateOptions{FieldManager: "syncer"})
	if err != nil {
		f.t.Fatalf("the release-0.14 syncer's update of %s %s: %v", gvr.Resource, obj.GetName(), err)
	}
	return updated
}

// takeover is one object the release-0.14 syncer left at the edge.
type takeover struct {
	what     string
	gvr      schema.GroupVersionResource
	up, edge string // its name upstream and at the edge (a conversion renames it)
	// keepManaged: written moments before the switch, its field manager's entry still there;
	// otherwise as the release-0.14 syncer leaves every object it does not change: no managedFields.
	keepManaged bool
	uid         types.UID
}

// TestMigrationFromReleaseSyncer: on an edge where the release-0.14 syncer ran, this syncer takes
// over its objects in place — recognised by the downsynced mark without this syncer's owner label,
// however its edge cache holds them — without deleting or recreating anything (UIDs unchanged), and a
// data key and an annotation removed upstream afterwards are removed at the edge: the old syncer's
// fields were handed over. The objects are written as the release-0.14 syncer writes them (POST and
// PUT under field manager "syncer", `managedFields: []` in every body, only the downsynced
// annotation added). Covered: a ConfigMap just written (its manager's entry still there); one it
// left alone for a while (no managedFields at all); a Secret, a resource also upsynced, whose edge
// cache holds every object; and a ConfigMap a conversion renames at the edge.
func TestMigrationFromReleaseSyncer(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	edgeOnly := f.name + "-edge"
	objects := []*takeover{
		{what: "just written", gvr: gvrConfigMaps, up: "fresh", edge: "fresh", keepManaged: true},
		{what: "left alone (no managedFields)", gvr: gvrConfigMaps, up: "settled", edge: "settled"},
		{what: "of a resource also upsynced", gvr: gvrSecrets, up: "secret", edge: "secret"},
		{what: "renamed by a conversion", gvr: gvrConfigMaps, up: "renamed-up", edge: "renamed"},
	}
	content := func(o *takeover, name string, legacy bool) *unstructured.Unstructured {
		kind, values := "ConfigMap", map[string]interface{}{"a": "1", "b": "2"}
		if o.gvr == gvrSecrets {
			kind, values = "Secret", map[string]interface{}{"a": "MQ==", "b": "Mg=="}
		}
		u := obj("v1", kind, ns, name, map[string]interface{}{"data": values})
		annotations := map[string]string{"team": "x"}
		if legacy {
			annotations[mapping.DownsyncedAnnotation] = mapping.Mark(kind, ns, name)
		}
		u.SetAnnotations(annotations)
		return u
	}
	ensure := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The edge as the release-0.14 syncer left it: the namespace (marked too), then the objects.
	edgeNS := obj("v1", "Namespace", "", ns, nil)
	edgeNS.SetAnnotations(map[string]string{mapping.DownsyncedAnnotation: mapping.Mark("Namespace", "", ns)})
	f.legacyWrite(gvrNamespaces, edgeNS, false)
	for _, o := range objects {
		f.create(f.up, o.gvr, content(o, o.up, false))
		written := f.legacyWrite(o.gvr, content(o, o.edge, true), o.keepManaged)
		if !o.keepManaged && len(written.GetManagedFields()) != 0 {
			t.Fatalf("%s: the simulation did not clear managedFields as the release-0.14 syncer's writes do: %v", o.what, written.GetManagedFields())
		}
		o.uid = written.GetUID()
	}
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", edgeOnly, nil))
	t.Cleanup(func() {
		_ = f.down.dyn.Resource(gvrNamespaces).Delete(context.Background(), edgeOnly, metav1.DeleteOptions{})
	})

	spec := nsScope([]string{ns}, resource("", "v1", "configmaps"), resource("", "v1", "secrets"))
	spec["upsync"] = []interface{}{map[string]interface{}{"apiGroup": "", "resources": []interface{}{"secrets"}, "namespaces": []interface{}{edgeOnly}, "names": []interface{}{"*"}}}
	side := func(name string) map[string]interface{} {
		return map[string]interface{}{"group": "", "version": "v1", "kind": "ConfigMap", "name": name}
	}
	spec["conversions"] = []interface{}{map[string]interface{}{"upstream": side("renamed-up"), "downstream": side("renamed")}}
	f.syncerConfig(f.name, spec)
	p := f.startSyncer(withArgs("--upsync-secrets")) // the edge owner lets Secrets be upsynced

	for _, o := range objects {
		f.waitFor(f.down, o.gvr, ns, o.edge, func(u *unstructured.Unstructured) (bool, string) {
			return mapping.OwnerOf(u) == f.name, o.what + ": not taken over yet: labels " + fmt.Sprint(u.GetLabels())
		})
		taken, err := f.get(f.down, o.gvr, ns, o.edge)
		ensure(err)
		if taken.GetUID() != o.uid {
			t.Fatalf("%s: the object was recreated: UID %s, was %s", o.what, taken.GetUID(), o.uid)
		}
		for _, mf := range taken.GetManagedFields() {
			if mf.Manager == "syncer" || mf.Manager == "before-first-apply" {
				t.Errorf("%s: fields are still owned by %q: %+v", o.what, mf.Manager, mf)
			}
		}
		f.update(f.up, o.gvr, ns, o.up, func(u *unstructured.Unstructured) {
			data, _, _ := unstructured.NestedMap(u.Object, "data")
			delete(data, "b")
			u.Object["data"] = data
			u.SetAnnotations(nil)
		})
	}
	for _, o := range objects {
		f.waitFor(f.down, o.gvr, ns, o.edge, func(u *unstructured.Unstructured) (bool, string) {
			data, _, _ := unstructured.NestedMap(u.Object, "data")
			_, hasB := data["b"]
			_, hasTeam := u.GetAnnotations()["team"]
			return !hasB && !hasTeam && data["a"] != nil, fmt.Sprintf("%s: data %v, annotations %v", o.what, data, u.GetAnnotations())
		})
		now, err := f.get(f.down, o.gvr, ns, o.edge)
		ensure(err)
		if now.GetUID() != o.uid {
			t.Fatalf("%s: the object was recreated: UID %s, was %s", o.what, now.GetUID(), o.uid)
		}
	}
	if n := countLines(p.logText(), "Took over an object from the release-0.14 syncer"); n < len(objects) {
		t.Errorf("the log says %d objects were taken over, want at least %d", n, len(objects))
	}
	if p.exited() {
		t.Fatal("the syncer exited")
	}
}

func countLines(text, sub string) int {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, sub) {
			n++
		}
	}
	return n
}
