package framework

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

func compactTestObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web", "namespace": "app", "uid": "u1", "resourceVersion": "7",
			"labels": map[string]interface{}{"app": "web"}},
		"spec":   map[string]interface{}{"replicas": int64(2), "ratio": 0.5, "paused": false, "template": map[string]interface{}{"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "c"}}}}},
		"status": map[string]interface{}{"replicas": int64(2)},
	}}
}

func TestCompactRoundTrip(t *testing.T) {
	obj := compactTestObject()
	c, err := Compacted(obj)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Object()
	if err != nil {
		t.Fatal(err)
	}
	// Integers come back as int64, as client-go decodes them: the digests and comparisons depend on it.
	if !reflect.DeepEqual(got.Object, obj.Object) {
		t.Errorf("decoded %#v\nwant %#v", got.Object, obj.Object)
	}
	got.SetName("changed") // a fresh object: the cache's is not touched
	if again, _ := c.Object(); again.GetName() != "web" {
		t.Error("changing a decoded object changed the cache's")
	}
	head, err := c.Head()
	if err != nil || head.GetLabels()["app"] != "web" || head.GetKind() != "Deployment" || head.Object["spec"] != nil {
		t.Errorf("head = %v, %v", head, err)
	}
	if key, err := cache.MetaNamespaceKeyFunc(c); err != nil || key != "app/web" {
		t.Errorf("key = %q, %v", key, err)
	}
	if ns, err := cache.MetaNamespaceIndexFunc(c); err != nil || len(ns) != 1 || ns[0] != "app" {
		t.Errorf("namespace index = %v, %v", ns, err)
	}
	if c.Size() >= 400 || c.Size() == 0 {
		t.Errorf("Size = %d bytes", c.Size())
	}
}

func TestObjectOfAndMetaOf(t *testing.T) {
	obj := compactTestObject()
	c, _ := Compacted(obj)
	tombstone := cache.DeletedFinalStateUnknown{Key: "app/web", Obj: c}
	for name, in := range map[string]interface{}{"compact": c, "tombstone": tombstone, "unstructured": obj} {
		if u := ObjectOf(in); u == nil || u.Object["spec"] == nil || u.GetName() != "web" {
			t.Errorf("%s: ObjectOf = %v", name, u)
		}
		if u := MetaOf(in); u == nil || u.GetName() != "web" || u.GetLabels()["app"] != "web" {
			t.Errorf("%s: MetaOf = %v", name, u)
		}
	}
	if ObjectOf("not an object") != nil || MetaOf(42) != nil {
		t.Error("ObjectOf or MetaOf of something else is not nil")
	}
	if out, _ := CompactTransform(c); out != c {
		t.Error("CompactTransform of a Compact made another (it must be idempotent)")
	}
}
