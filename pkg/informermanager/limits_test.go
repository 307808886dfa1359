package informermanager

import (
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// overfullCalls records Options.Overfull.
type overfullCalls struct {
	mu   sync.Mutex
	told []schema.GroupVersionResource
}

func (o *overfullCalls) tell(gvr schema.GroupVersionResource) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.told = append(o.told, gvr)
}

func (o *overfullCalls) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.told)
}

// TestOverfullAsTheCacheGrows: a resource whose cache, across its namespaces, grows past
// Spec.MaxObjects is overfull, said once.
func TestOverfullAsTheCacheGrows(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"},
		cm("a", "1"), cm("b", "2"))
	calls := &overfullCalls{}
	m, _, ctx := running(t, client, Options{Overfull: calls.tell})
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a,b", MaxObjects: 3}})
	waitFor(t, "sync", func() bool { _, ok := synced(m, cms); return ok })
	if got := m.Overfull(); len(got) != 0 || calls.count() != 0 {
		t.Fatalf("two objects of at most three: overfull %v, told %d times", got, calls.count())
	}
	for _, name := range []string{"3", "4", "5"} {
		if _, err := client.Resource(cms).Namespace("b").Create(ctx, cm("b", name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the cache to grow", func() bool { c, _ := m.Cache(cms); return len(c.List("")) == 5 })
	if got := m.Overfull()[cms]; got != 4 {
		t.Errorf("overfull with %d objects, want 4 (the count that passed the limit)", got)
	}
	if n := calls.count(); n != 1 {
		t.Errorf("told %d times, want once", n)
	}
}

// TestOverfullCountedBeforeListing: a resource the apiserver counts over Spec.MaxObjects (a list of
// one object and the rest remaining) is not listed: it is overfull, and its cache never syncs.
func TestOverfullCountedBeforeListing(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"})
	var mu sync.Mutex
	var lists int
	// The first list is the count (the fake client does not pass the limit on); the others would
	// list the objects.
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, kruntime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if lists++; lists > 1 {
			return false, nil, nil
		}
		list := &unstructured.UnstructuredList{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMapList"}}
		list.Items = []unstructured.Unstructured{*cm("a", "1")}
		list.SetContinue("next")
		list.SetRemainingItemCount(ptrTo[int64](9))
		return true, list, nil
	})
	calls := &overfullCalls{}
	m, _, _ := running(t, client, Options{Overfull: calls.tell})
	m.Set(map[schema.GroupVersionResource]Spec{cms: {MaxObjects: 3}})
	waitFor(t, "the count", func() bool { return calls.count() == 1 })
	if got := m.Overfull()[cms]; got != 10 {
		t.Errorf("overfull with %d objects, want 10", got)
	}
	mu.Lock()
	n := lists
	mu.Unlock()
	if c, _ := m.Cache(cms); n != 1 || c.Synced("") {
		t.Errorf("listed %d times (the count among them), synced %v; want the count only", n, c.Synced(""))
	}

	// Under the limit, or with no count from the apiserver, the list goes ahead.
	m.Set(map[schema.GroupVersionResource]Spec{cms: {MaxObjects: 10}})
	waitFor(t, "sync", func() bool { _, ok := synced(m, cms); return ok })
	if len(m.Overfull()) != 0 {
		t.Errorf("overfull at the limit: %v", m.Overfull())
	}
}

func ptrTo[T any](v T) *T { return &v }
