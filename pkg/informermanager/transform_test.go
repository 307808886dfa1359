package informermanager

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// TestTransformTooLarge: an object over Spec.MaxObjectBytes is held as its metadata only (no
// managedFields, no annotations when they alone are over the limit) with its size, in a compact
// cache and in a decoded one; one under it is held whole; no limit holds everything.
func TestTransformTooLarge(t *testing.T) {
	cm := func(data, annotation int) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": "x", "namespace": "a", "uid": "u1", "resourceVersion": "7",
				"labels":        map[string]interface{}{"app": "web"},
				"annotations":   map[string]interface{}{"note": strings.Repeat("n", annotation)},
				"managedFields": []interface{}{map[string]interface{}{"manager": "m"}}},
			"data": map[string]interface{}{"k": strings.Repeat("v", data)}}}
		return o
	}
	decoded := func(obj interface{}) *unstructured.Unstructured {
		if c, ok := obj.(*framework.Compact); ok {
			u, err := c.Object()
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		return obj.(*unstructured.Unstructured)
	}
	for _, compact := range []bool{true, false} {
		limited := transformFor(Spec{MaxObjectBytes: 4096}, compact)
		for _, c := range []struct {
			name            string
			obj             *unstructured.Unstructured
			stub, annotated bool
		}{
			{"under the limit", cm(1000, 10), false, true},
			{"over it", cm(8000, 10), true, true},
			{"over it by its annotations too", cm(100, 8000), true, false},
		} {
			out, err := limited(c.obj.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			u := decoded(out)
			size, stub := mapping.TooLarge(u)
			whole, _ := json.Marshal(c.obj.Object)
			switch {
			case stub != c.stub:
				t.Errorf("compact %v, %s: stub %v", compact, c.name, stub)
			case stub && (size < 4096 || size > int64(len(whole))+64):
				t.Errorf("compact %v, %s: size %d, the object's JSON is %d", compact, c.name, size, len(whole))
			case stub && (u.Object["data"] != nil || u.GetManagedFields() != nil || u.GetLabels()["app"] != "web" || u.GetUID() != "u1" || u.GetResourceVersion() != "7"):
				t.Errorf("compact %v, %s: held %v", compact, c.name, u.Object)
			case (u.GetAnnotations()["note"] != "") != c.annotated:
				t.Errorf("compact %v, %s: annotations %v", compact, c.name, u.GetAnnotations())
			}
		}
		if out, _ := transformFor(Spec{}, compact)(cm(8000, 10)); decoded(out).Object["data"] == nil {
			t.Errorf("compact %v: no limit, yet the data is not held", compact)
		}
	}
}
