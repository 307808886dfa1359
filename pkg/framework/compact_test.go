package framework

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
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
	if size := len(c.head) + len(c.rest); size >= 400 || size == 0 {
		t.Errorf("the Compact holds %d bytes of JSON", size)
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

// TestEvent: an Event decodes its Compact once, as far as its handlers ask: the head while none
// asks for more, then the whole object, which then serves MetaOf too; a tombstone's Compact is
// wrapped inside the tombstone.
func TestEvent(t *testing.T) {
	c, _ := Compacted(compactTestObject())
	e, ok := EventOf(c).(*Event)
	if !ok {
		t.Fatalf("EventOf(Compact) = %T", EventOf(c))
	}
	head := MetaOf(e)
	if head == nil || head.GetName() != "web" || head.Object["spec"] != nil {
		t.Fatalf("MetaOf(Event) = %v", head)
	}
	if again := MetaOf(e); again != head {
		t.Error("the head was decoded twice")
	}
	whole := ObjectOf(e) // made from the head and the rest
	if want, _ := c.Object(); !reflect.DeepEqual(whole.Object, want.Object) {
		t.Errorf("ObjectOf(Event) after MetaOf = %v, want %v", whole, want)
	}
	if whole == nil || whole.Object["spec"] == nil || whole.Object["status"] == nil {
		t.Fatalf("ObjectOf(Event) = %v", whole)
	}
	if ObjectOf(e) != whole || MetaOf(e) != whole {
		t.Error("the whole object was decoded twice, or MetaOf decoded the head again")
	}
	if fresh := ObjectOf(EventOf(c)); fresh == nil || !reflect.DeepEqual(fresh.Object, whole.Object) {
		t.Errorf("ObjectOf(a fresh Event) = %v", fresh)
	}
	tombstone, ok := EventOf(cache.DeletedFinalStateUnknown{Key: "app/web", Obj: c}).(cache.DeletedFinalStateUnknown)
	if !ok {
		t.Fatal("EventOf(tombstone) is no tombstone")
	}
	if _, ok := tombstone.Obj.(*Event); !ok || MetaOf(tombstone).GetName() != "web" || ObjectOf(tombstone).Object["spec"] == nil {
		t.Errorf("EventOf(tombstone) holds %T", tombstone.Obj)
	}
	obj := compactTestObject()
	if EventOf(obj) != interface{}(obj) {
		t.Error("EventOf(unstructured) is not the object itself")
	}
}

// benchConfigMap is the bench's ConfigMap: 1 KiB of payload, 1,257 bytes as JSON.
func benchConfigMap() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "o-000001", "namespace": "mem-001", "uid": "6b1a7e0e-3b1f-4f8e-9a65-000000000001",
			"resourceVersion": "100001", "creationTimestamp": "2026-11-25T20:43:08Z", "labels": map[string]interface{}{"bench": "x"}},
		"data": map[string]interface{}{"payload": strings.Repeat("0123456789abcdef", 64), "v": "0"},
	}}
}

// BenchmarkCompacted is what holding an object as JSON costs per informer event (the transform).
func BenchmarkCompacted(b *testing.B) {
	obj := benchConfigMap()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compacted(obj); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompactObject is what reading it back costs (GetFromCache, ObjectOf).
func BenchmarkCompactObject(b *testing.B) {
	c, _ := Compacted(benchConfigMap())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Object(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCompactIndexByLabel: a cache of Compacts indexed by label finds its objects (the labels are
// decoded from the head when an index asks), as one of decoded objects does.
func TestCompactIndexByLabel(t *testing.T) {
	byApp := func(obj interface{}) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		return []string{m.GetLabels()["app"] + "," + m.GetAnnotations()["tier"]}, nil
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"app": byApp, cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("demo")
	u.SetName("a")
	u.SetLabels(map[string]string{"app": "web"})
	u.SetAnnotations(map[string]string{"tier": "front"})
	c, err := Compacted(u)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(c); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.ByIndex("app", "web,front"); len(got) != 1 {
		t.Errorf("by label and annotation: %d objects, want 1", len(got))
	}
	if got, _ := idx.ByIndex(cache.NamespaceIndex, "demo"); len(got) != 1 {
		t.Errorf("by namespace: %d objects, want 1", len(got))
	}
}
