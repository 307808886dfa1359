package mapping

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TooLargeField is the top-level field under which a cache keeps, in place of an upstream object
// larger than the syncer's limit (--max-object-bytes), that object's size in bytes: the cache keeps
// only the object's apiVersion, kind and metadata without managedFields (and without its annotations
// when they alone are over the limit). No API has a field of that name (it holds a "/").
const TooLargeField = "edge.kubestellar.io/too-large"

// TooLargeStub is what a cache keeps of u, of size bytes, over the limit.
func TooLargeStub(u *unstructured.Unstructured, size, limit int) *unstructured.Unstructured {
	meta, _ := u.Object["metadata"].(map[string]interface{})
	kept := make(map[string]interface{}, len(meta))
	for k, v := range meta {
		if k != "managedFields" {
			kept[k] = v
		}
	}
	if annotations, ok := kept["annotations"]; ok {
		if data, err := json.Marshal(annotations); err != nil || len(data) > limit {
			delete(kept, "annotations")
		}
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": u.Object["apiVersion"], "kind": u.Object["kind"], "metadata": kept, TooLargeField: int64(size),
	}}
}

// TooLarge tells whether u is a TooLargeStub, and the size of the object it stands for.
func TooLarge(u *unstructured.Unstructured) (int64, bool) {
	switch size := u.Object[TooLargeField].(type) {
	case int64:
		return size, true
	case float64:
		return int64(size), true
	}
	return 0, false
}
