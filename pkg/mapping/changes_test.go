package mapping

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Changes names content only: not the apiserver's bookkeeping, status or the syncer's marks (an
// object that had no annotations gains only marks: no change).
func TestChanges(t *testing.T) {
	before := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "x", "namespace": "a", "resourceVersion": "1", "labels": map[string]interface{}{"team": "a"}},
		"data":     map[string]interface{}{"k": "v", "gone": "x"},
	}}
	after := before.DeepCopy()
	after.SetResourceVersion("2")
	after.SetAnnotations(map[string]string{DownsyncedAnnotation: "ConfigMap/a/x", HashAnnotation: "h"})
	after.SetLabels(map[string]string{"team": "a", OwnerLabel: "t"})
	if c := Changes(before, after); len(c) != 0 {
		t.Errorf("marks and bookkeeping taken for changes: %+v", c)
	}
	_ = unstructured.SetNestedStringMap(after.Object, map[string]string{"k": "w", "new": "y"}, "data")
	want := []Change{{Path: "data.gone", Edge: `"x"`, Upstream: "(absent)"}, {Path: "data.k", Edge: `"v"`, Upstream: `"w"`},
		{Path: "data.new", Edge: "(absent)", Upstream: `"y"`}}
	if c := Changes(before, after); !reflect.DeepEqual(c, want) {
		t.Errorf("changes %+v, want %+v", c, want)
	}
}

// A renamed list element is a change: the element added and the one removed.
func TestChangesRenamedElement(t *testing.T) {
	before := &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{
		"containers": []interface{}{map[string]interface{}{"name": "a", "image": "x"}}}}}
	after := &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{
		"containers": []interface{}{map[string]interface{}{"name": "b", "image": "x"}}}}}
	c := Changes(before, after)
	if len(c) != 2 || c[0].Path != "spec.containers[name=b]" || c[0].Edge != "(absent)" || c[1].Path != "spec.containers[name=a]" || c[1].Upstream != "(absent)" {
		t.Errorf("changes %+v", c)
	}
}
