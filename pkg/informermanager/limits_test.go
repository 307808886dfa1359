package informermanager

import (
	"context"
	"slices"
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

// limitedAndSynced is a running manager of ConfigMaps as spec says, synced, over a fake client
// holding objs.
func limitedAndSynced(t *testing.T, spec Spec, objs ...kruntime.Object) (*Manager, *dynamicfake.FakeDynamicClient, *overfullCalls, context.Context) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"}, objs...)
	calls := &overfullCalls{}
	m, _, ctx := running(t, client, Options{Overfull: calls.tell})
	m.Set(map[schema.GroupVersionResource]Spec{cms: spec})
	waitFor(t, "sync", func() bool { _, ok := synced(m, cms); return ok })
	return m, client, calls, ctx
}

// TestOverfullAsTheCacheGrows: a resource whose cache, across its namespaces, grows past
// Spec.MaxObjects is overfull, said once.
func TestOverfullAsTheCacheGrows(t *testing.T) {
	m, client, calls, ctx := limitedAndSynced(t, Spec{Namespaces: "a,b", MaxObjects: 3}, cm("a", "1"), cm("b", "2"))
	if got := m.Overfull(); len(got) != 0 || calls.count() != 0 {
		t.Fatalf("two objects of at most three: overfull %v, told %d times", got, calls.count())
	}
	for _, name := range []string{"3", "4", "5"} {
		if _, err := client.Resource(cms).Namespace("b").Create(ctx, cm("b", name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "overfull", func() bool { return calls.count() > 0 })
	if got := m.Overfull()[cms]; got != (Overflow{Count: 4, Namespaces: "a,b"}) {
		t.Errorf("overfull %+v, want 4 objects (the count that passed the limit) in a,b", got)
	}
	if _, ok := m.Cache(cms); ok {
		t.Error("the cache of an overfull resource is seen")
	}
	if running, synced := m.Counts(); running != 1 || synced != 0 {
		t.Errorf("%d informers running, %d synced; want the overfull one running and not synced", running, synced)
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
	if got := m.Overfull()[cms]; got.Count != 10 {
		t.Errorf("overfull with %d objects, want 10", got.Count)
	}
	mu.Lock()
	n := lists
	mu.Unlock()
	if _, seen := m.Cache(cms); n != 1 || seen {
		t.Errorf("listed %d times (the count among them), cache seen %v; want the count only, unseen", n, seen)
	}

	// Under the limit, or with no count from the apiserver, the list goes ahead.
	m.Set(map[schema.GroupVersionResource]Spec{cms: {MaxObjects: 10}})
	waitFor(t, "sync", func() bool { _, ok := synced(m, cms); return ok })
	if len(m.Overfull()) != 0 {
		t.Errorf("overfull at the limit: %v", m.Overfull())
	}
}

// TestOverfullCountedAcrossNamespaces: a namespace counted before its first list is over the limit
// with what the resource's other namespaces hold; the part that did not list is not handed over when
// the scope changes, so the namespace is counted again.
func TestOverfullCountedAcrossNamespaces(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"},
		cm("a", "1"), cm("a", "2"), cm("b", "3"), cm("b", "4"))
	calls := &overfullCalls{}
	m, _, _ := running(t, client, Options{Overfull: calls.tell, ListingNamespaces: 1})
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a", MaxObjects: 3}})
	waitFor(t, "sync of a", func() bool { _, ok := synced(m, cms); return ok })
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a,b", MaxObjects: 3}})
	waitFor(t, "the count of b", func() bool { return calls.count() == 1 })
	if got := m.Overfull()[cms]; got.Count != 4 {
		t.Errorf("overfull with %d objects, want 4 (2 in b counted, 2 held in a)", got.Count)
	}
	inB := func() int {
		return len(slices.DeleteFunc(lists(client, "list", cms), func(ns string) bool { return ns != "b" }))
	}
	if n := inB(); n != 1 {
		t.Errorf("b listed %d times; want once, the count", n)
	}
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a,b,c", MaxObjects: 3}})
	waitFor(t, "b counted again", func() bool { return calls.count() == 2 })
	if n := inB(); n != 2 {
		t.Errorf("b listed %d times; want twice, both counts", n)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestOverfullAtStart: an entry that takes over parts holding more than its limit (a lower limit, a
// changed scope) is overfull at once, its cache unseen; an overfull entry is replaced by the next Set
// even with an unchanged Spec.
func TestOverfullAtStart(t *testing.T) {
	m, _, calls, _ := limitedAndSynced(t, Spec{Namespaces: "a", MaxObjects: 3}, cm("a", "1"), cm("a", "2"))
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a,b", MaxObjects: 1}})
	if got := m.Overfull()[cms]; got.Count != 2 || calls.count() != 1 {
		t.Errorf("overfull %+v, told %d times; want 2 objects, told once", got, calls.count())
	}
	if _, seen := m.Cache(cms); seen {
		t.Error("the cache of an overfull resource is seen")
	}
	if started := m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a,b", MaxObjects: 1}}); len(started) != 1 {
		t.Errorf("an overfull entry was kept by a Set of the same Spec (started %v)", started)
	}
}
