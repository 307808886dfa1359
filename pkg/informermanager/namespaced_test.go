package informermanager

import (
	"context"
	"errors"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/problem"
)

func TestNamespaceScope(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{""}, ""},
		{[]string{"b", "a", "b", ""}, "a,b"},
		{[]string{"only"}, "only"},
	} {
		got := NamespaceScope(tc.in)
		if got != tc.want {
			t.Errorf("NamespaceScope(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if list := (Spec{Namespaces: got}).NamespaceList(); strings.Join(list, ",") != got || (got == "" && list != nil) {
			t.Errorf("NamespaceList of %q = %q", got, list)
		}
	}
}

// running is an upstream Manager over client, started, with a recorder as its handlers; it is
// stopped when the test ends.
func running(t *testing.T, client *dynamicfake.FakeDynamicClient) (*Manager, *recorder, context.Context) {
	rec := newRecorder()
	m := New("upstream", client, rec, 0)
	ctx, cancel := context.WithCancel(context.Background())
	m.Start(ctx)
	t.Cleanup(func() { m.Stop(); cancel() })
	return m, rec, ctx
}

// lists are the namespaces the client was asked to list and watch the resource in ("" for
// cluster-wide), in order.
func lists(client *dynamicfake.FakeDynamicClient, verb string, gvr schema.GroupVersionResource) []string {
	var out []string
	for _, a := range client.Actions() {
		if a.GetVerb() == verb && a.GetResource() == gvr {
			out = append(out, a.GetNamespace())
		}
	}
	return out
}

func keysOf(inf cache.SharedIndexInformer) []string {
	keys := inf.GetStore().ListKeys()
	sort.Strings(keys)
	return keys
}

// TestNamespacedInformer: a Spec with namespaces lists and watches each namespace and never the
// whole resource; its consumers see one informer holding those namespaces' objects, whose store
// reads by key and by the namespace index from the right namespace, and whose handler hears their
// events only.
func TestNamespacedInformer(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"},
		cm("a", "x"), cm("b", "y"), cm("b", "z"), cm("c", "other"))
	m, rec, ctx := running(t, client)
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: NamespaceScope([]string{"b", "a"})}})
	var inf cache.SharedIndexInformer
	waitFor(t, "sync", func() bool { var ok bool; inf, ok = m.Synced(cms); return ok })
	waitFor(t, "the handler to hear the initial objects", func() bool { n, s := rec.counts(cms); return n == 3 && s == 1 })

	for _, verb := range []string{"list", "watch"} {
		got := lists(client, verb, cms)
		sort.Strings(got)
		if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
			t.Errorf("%s requests by namespace (-want +got):\n%s", verb, diff)
		}
	}
	if diff := cmp.Diff([]string{"a/x", "b/y", "b/z"}, keysOf(inf)); diff != "" {
		t.Errorf("store keys (-want +got):\n%s", diff)
	}
	if n := len(inf.GetStore().List()); n != 3 {
		t.Errorf("List: %d objects, want 3", n)
	}
	for key, want := range map[string]bool{"a/x": true, "b/z": true, "c/other": false, "a/y": false, "cluster-scoped": false} {
		if _, exists, err := inf.GetIndexer().GetByKey(key); err != nil || exists != want {
			t.Errorf("GetByKey(%q) = %v, %v; want %v", key, exists, err, want)
		}
	}
	if _, exists, _ := inf.GetStore().Get(cm("b", "y")); !exists {
		t.Error("Get of b/y: absent")
	}
	if keys, err := inf.GetIndexer().IndexKeys(cache.NamespaceIndex, "b"); err != nil || !cmp.Equal(sortStrings(keys), []string{"b/y", "b/z"}) {
		t.Errorf("IndexKeys(namespace, b) = %v, %v", keys, err)
	}
	if objs, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, "c"); err != nil || len(objs) != 0 {
		t.Errorf("ByIndex(namespace, c) = %v, %v; want nothing", objs, err)
	}
	if vals := sortStrings(inf.GetIndexer().ListIndexFuncValues(cache.NamespaceIndex)); !cmp.Equal(vals, []string{"a", "b"}) {
		t.Errorf("ListIndexFuncValues(namespace) = %v", vals)
	}
	if err := inf.GetStore().Add(cm("a", "written")); err == nil {
		t.Error("the merged store accepted a write")
	}
	if err := inf.SetTransform(nil); err == nil {
		t.Error("the merged informer accepted a transform")
	}

	// Events of the listed namespaces only.
	if _, err := client.Resource(cms).Namespace("c").Create(ctx, cm("c", "new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Resource(cms).Namespace("a").Create(ctx, cm("a", "new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the event of a/new", func() bool { n, _ := rec.counts(cms); return n == 4 })
	waitFor(t, "a/new in the store", func() bool { _, ok, _ := inf.GetIndexer().GetByKey("a/new"); return ok })
	if _, ok, _ := inf.GetIndexer().GetByKey("c/new"); ok {
		t.Error("an object of an unlisted namespace is in the store")
	}
	if n, _ := rec.counts(cms); n != 4 {
		t.Errorf("%d add events, want 4 (none from namespace c)", n)
	}
}

// TestNamespacedInformerSyncsWithEveryNamespace: the merged informer has not synced while one
// namespace's list is refused, and that refusal is a problem naming the namespace; once the list
// succeeds it syncs and the problem goes.
func TestNamespacedInformerSyncsWithEveryNamespace(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"},
		cm("a", "x"), cm("b", "y"))
	var mu sync.Mutex
	refuse := true
	client.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, kruntime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if refuse && a.GetNamespace() == "b" {
			return true, nil, apierrors.NewForbidden(cms.GroupResource(), "", errors.New("no Role in b"))
		}
		return false, nil, nil
	})
	m, rec, _ := running(t, client)
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a,b"}})
	waitFor(t, "the refusal in b as a problem", func() bool {
		ps := m.Problems()
		return len(ps) == 1 && ps[0].Kind == problem.AccessDenied && strings.Contains(ps[0].Reason, "in namespace b") && strings.Contains(ps[0].Reason, "forbidden")
	})
	waitFor(t, "a's object in the store", func() bool {
		inf, _ := m.Informer(cms)
		_, ok, _ := inf.GetIndexer().GetByKey("a/x")
		return ok
	})
	if _, ok := m.Synced(cms); ok {
		t.Fatal("synced while namespace b is not listed")
	}
	if _, s := rec.counts(cms); s != 0 {
		t.Fatal("the handlers were told synced while namespace b is not listed")
	}
	mu.Lock()
	refuse = false
	mu.Unlock()
	waitFor(t, "sync once b is listed", func() bool { _, ok := m.Synced(cms); return ok && len(m.Problems()) == 0 })
	waitFor(t, "the handlers told synced", func() bool { _, s := rec.counts(cms); return s == 1 })
}

// TestNamespaceScopeChange: a namespace added to the scope is listed and watched, those that stay
// are not listed again (their caches are kept), a namespace removed stops being watched and leaves
// the store; the consumers get a new informer each time, told synced again. A changed label
// selector lists everything again. Nothing is left running afterwards.
func TestNamespaceScopeChange(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"},
		cm("a", "x"), cm("b", "y"), cm("c", "z"))
	baseline := runtime.NumGoroutine()
	m, rec, _ := running(t, client)

	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a"}})
	waitFor(t, "first sync", func() bool { _, s := rec.counts(cms); return s == 1 })
	first, _ := m.Informer(cms)

	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a,b"}})
	waitFor(t, "sync with b", func() bool { _, s := rec.counts(cms); return s == 2 })
	second, _ := m.Synced(cms)
	if second == first {
		t.Error("the consumers were given the same informer after the scope changed")
	}
	if diff := cmp.Diff([]string{"a/x", "b/y"}, keysOf(second)); diff != "" {
		t.Errorf("store after adding b (-want +got):\n%s", diff)
	}
	if got := lists(client, "list", cms); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("lists after adding b: %q, want a once and b once (a's cache kept)", got)
	}
	if !first.HasSynced() {
		t.Error("the handed-over namespace's informer was stopped")
	}

	// Removing a: b stays, a's informer stops.
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "b"}})
	waitFor(t, "sync without a", func() bool { _, s := rec.counts(cms); return s == 3 })
	third, _ := m.Synced(cms)
	if diff := cmp.Diff([]string{"b/y"}, keysOf(third)); diff != "" {
		t.Errorf("store after removing a (-want +got):\n%s", diff)
	}
	if got := lists(client, "list", cms); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("lists after removing a: %q, want no new list", got)
	}
	waitFor(t, "a's informer to stop", func() bool { return first.IsStopped() })
	// Each informer's handler is given what its namespaces hold: a/x to the first and the second,
	// b/y to the second and the third.
	if events, _ := rec.counts(cms); events != 4 {
		t.Errorf("%d add events, want 4", events)
	}

	// A changed label selector lists again.
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "b", LabelSelector: "k=v"}})
	waitFor(t, "sync with the label selector", func() bool { _, s := rec.counts(cms); return s == 4 })
	if got := lists(client, "list", cms); !cmp.Equal(got, []string{"a", "b", "b"}) {
		t.Errorf("lists after changing the label selector: %q, want b listed again", got)
	}

	// Cluster-wide and back.
	m.Set(map[schema.GroupVersionResource]Spec{cms: {}})
	waitFor(t, "cluster-wide sync", func() bool { _, s := rec.counts(cms); return s == 5 })
	if inf, _ := m.Synced(cms); len(inf.GetStore().List()) != 3 {
		t.Errorf("cluster-wide: %v", keysOf(inf))
	}
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "c"}})
	waitFor(t, "sync in c", func() bool { _, s := rec.counts(cms); return s == 6 })
	m.Stop()
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= baseline })
}

// fakeSource records the Specs it is asked for.
type fakeSource struct {
	mu    sync.Mutex
	specs []Spec
}

func (s *fakeSource) Objects(_ schema.GroupVersionResource, spec Spec) Shared {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.specs = append(s.specs, spec)
	return fakeShare{cache.NewSharedIndexInformer(&cache.ListWatch{}, nil, 0, cache.Indexers{})}
}

func (s *fakeSource) APIs(schema.GroupVersionResource) Shared { return nil }

type fakeShare struct{ inf cache.SharedIndexInformer }

func (f fakeShare) Informer() cache.SharedIndexInformer { return f.inf }
func (f fakeShare) Denied() error                       { return nil }
func (f fakeShare) Broken() bool                        { return false }
func (f fakeShare) Release()                            {}

// TestSourceIgnoresNamespaceScope: a Manager with a Source passes no namespace scope to it (its
// views already show each engine its own objects), and a changed scope replaces nothing.
func TestSourceIgnoresNamespaceScope(t *testing.T) {
	src := &fakeSource{}
	m := NewShared("upstream", src, nil)
	m.Set(map[schema.GroupVersionResource]Spec{cms: {LabelSelector: "k=v", Namespaces: "a"}})
	if started := m.Set(map[schema.GroupVersionResource]Spec{cms: {LabelSelector: "k=v", Namespaces: "a,b"}}); len(started) != 0 {
		t.Errorf("a changed namespace scope replaced a share: %v", started)
	}
	if diff := cmp.Diff([]Spec{{LabelSelector: "k=v"}}, src.specs); diff != "" {
		t.Errorf("specs given to the source (-want +got):\n%s", diff)
	}
	m.Stop()
}

func sortStrings(s []string) []string {
	sort.Strings(s)
	return s
}
