package mapping

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseFieldPath(t *testing.T) {
	good := map[string][]step{
		"spec.replicas": {{field: "spec"}, {field: "replicas"}},
		"spec.template.spec.containers[*].image": {{field: "spec"}, {field: "template"}, {field: "spec"}, {field: "containers"}, {each: true},
			{field: "image"}},
		"metadata.annotations[example.com/owner]": {{field: "metadata"}, {field: "annotations"}, {field: "example.com/owner"}},
		"data[a.b]":             {{field: "data"}, {field: "a.b"}},
		"spec.ports[*]":         {{field: "spec"}, {field: "ports"}},
		"spec.a[*][*].b":        {{field: "spec"}, {field: "a"}, {each: true}, {each: true}, {field: "b"}},
		"metadata.labels[team]": {{field: "metadata"}, {field: "labels"}, {field: "team"}},
	}
	for in, want := range good {
		p, err := ParseFieldPath(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if !reflect.DeepEqual(p.steps, want) || p.String() != in {
			t.Errorf("%q: got %+v", in, p.steps)
		}
	}
	for _, bad := range []string{"", ".spec", "spec.", "spec..replicas", "spec[", "spec[]", "spec[*]x", "[*]", "status.replicas", "kind",
		"metadata.name", "metadata", "metadata.namespace", "apiVersion", "metadata.labels", "metadata.annotations",
		"metadata.annotations[edge.kubestellar.io/downsync-hash]", "metadata.finalizers", "metadata.ownerReferences"} {
		if _, err := ParseFieldPath(bad); err == nil {
			t.Errorf("%q: parsed", bad)
		}
	}
}

func mustPaths(t *testing.T, texts ...string) []FieldPath {
	t.Helper()
	var out []FieldPath
	for _, s := range texts {
		p, err := ParseFieldPath(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// Retained fields are left out of the desired object and its digest, so that a change to them upstream
// or at the edge makes no write; RetainedFrom puts the edge's (or the upstream object's) values back
// for a write, matching list elements by name.
func TestRetainedFields(t *testing.T) {
	up := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web", "namespace": "demo", "annotations": map[string]interface{}{"example.com/owner": "team-a", "keep": "x"}},
		"spec": map[string]interface{}{"replicas": int64(3), "template": map[string]interface{}{"spec": map[string]interface{}{
			"containers": []interface{}{
				map[string]interface{}{"name": "app", "image": "app:1"},
				map[string]interface{}{"name": "side", "image": "side:1"},
			}}}},
	}}
	paths := mustPaths(t, "spec.replicas", "spec.template.spec.containers[*].image", "metadata.annotations[example.com/owner]", "spec.absent.deep")
	plain, err := ToDownstream(up, Options{OwnerLabelValue: "t"})
	if err != nil {
		t.Fatal(err)
	}
	desired, err := ToDownstream(up, Options{OwnerLabelValue: "t", Retain: paths})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(desired.Object, "spec", "replicas"); ok {
		t.Error("spec.replicas applied")
	}
	containers, _, _ := unstructured.NestedSlice(desired.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		if _, ok := c.(map[string]interface{})["image"]; ok {
			t.Errorf("image applied: %v", c)
		}
	}
	if a := desired.GetAnnotations(); a["example.com/owner"] != "" || a["keep"] != "x" {
		t.Errorf("annotations %v", a)
	}
	if desired.GetAnnotations()[HashAnnotation] == plain.GetAnnotations()[HashAnnotation] {
		t.Error("retaining fields did not change the digest: the apply that stops applying them would never come")
	}

	changed := up.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, int64(7), "spec", "replicas")
	again, _ := ToDownstream(changed, Options{OwnerLabelValue: "t", Retain: paths})
	if again.GetAnnotations()[HashAnnotation] != desired.GetAnnotations()[HashAnnotation] {
		t.Error("a retained field's upstream change changed the digest")
	}

	// The edge's values.
	live := desired.DeepCopy()
	_ = unstructured.SetNestedField(live.Object, int64(5), "spec", "replicas")
	_ = unstructured.SetNestedSlice(live.Object, []interface{}{
		map[string]interface{}{"name": "app", "image": "app:hotfix"},
		map[string]interface{}{"name": "side", "image": "side:hotfix"},
	}, "spec", "template", "spec", "containers")
	if !UpToDate(desired, live) {
		t.Error("retained fields changed at the edge count as drift")
	}
	// Elements are matched by name, not position.
	reordered := live.DeepCopy()
	_ = unstructured.SetNestedSlice(reordered.Object, []interface{}{
		map[string]interface{}{"name": "side", "image": "side:hotfix"},
		map[string]interface{}{"name": "app", "image": "app:hotfix"},
	}, "spec", "template", "spec", "containers")
	body := RetainedFrom(desired, reordered, paths)
	if r, _, _ := unstructured.NestedInt64(body.Object, "spec", "replicas"); r != 5 {
		t.Errorf("replicas %d, want the edge's 5", r)
	}
	containers, _, _ = unstructured.NestedSlice(body.Object, "spec", "template", "spec", "containers")
	if img := containers[0].(map[string]interface{})["image"]; img != "app:hotfix" {
		t.Errorf("container app got image %v", img)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(body.Object, "spec", "absent"); ok {
		t.Error("a path neither side holds made a field")
	}
	if _, ok := desired.Object["spec"].(map[string]interface{})["replicas"]; ok {
		t.Error("RetainedFrom changed desired")
	}
	created := RetainedFrom(desired, up, paths)
	if r, _, _ := unstructured.NestedInt64(created.Object, "spec", "replicas"); r != 3 {
		t.Errorf("a create starts from %d replicas, want upstream's 3", r)
	}
	if created.GetAnnotations()["example.com/owner"] != "team-a" {
		t.Error("a create leaves out a retained annotation upstream has")
	}
	if !paths[0].Holds(live) || paths[3].Holds(live) {
		t.Error("Holds")
	}
}
