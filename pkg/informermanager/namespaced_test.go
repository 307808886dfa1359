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

	"github.com/kubestellar/syncer/pkg/framework"
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
func running(t *testing.T, client *dynamicfake.FakeDynamicClient, opts Options) (*Manager, *recorder, context.Context) {
	rec := newRecorder()
	m := New("upstream", client, rec, opts)
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

func keysOf(c framework.Cache) []string {
	return sortStrings(c.Keys(""))
}

// TestNamespacedCache: a Spec with namespaces lists and watches each namespace and never the whole
// resource; its consumers see one cache holding those namespaces' objects, which reads by name and
// by namespace from the right namespace, and whose handler hears their events only.
func TestNamespacedCache(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"},
		cm("a", "x"), cm("b", "y"), cm("b", "z"), cm("c", "other"))
	m, rec, ctx := running(t, client, Options{})
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: NamespaceScope([]string{"b", "a"})}})
	var c framework.Cache
	waitFor(t, "sync", func() bool { var ok bool; c, ok = synced(m, cms); return ok })
	waitFor(t, "the handler to hear the initial objects", func() bool { n, _ := rec.counts(cms); return n == 3 })
	if diff := cmp.Diff([]string{"a", "b"}, rec.namespacesTold(cms)); diff != "" {
		t.Errorf("namespaces the handlers were told listed (-want +got):\n%s", diff)
	}

	// The fake client replays nothing to a watch opened after a change: wait for the watches first.
	waitFor(t, "the watches", func() bool { return len(lists(client, "watch", cms)) == 2 })
	for _, verb := range []string{"list", "watch"} {
		got := lists(client, verb, cms)
		sort.Strings(got)
		if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
			t.Errorf("%s requests by namespace (-want +got):\n%s", verb, diff)
		}
	}
	if diff := cmp.Diff([]string{"a/x", "b/y", "b/z"}, keysOf(c)); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if n := len(c.List("")); n != 3 {
		t.Errorf("List: %d objects, want 3", n)
	}
	for key, want := range map[[2]string]bool{{"a", "x"}: true, {"b", "z"}: true, {"c", "other"}: false, {"a", "y"}: false, {"", "cluster-scoped"}: false} {
		if obj, err := c.Get(key[0], key[1]); err != nil || (obj != nil) != want {
			t.Errorf("Get(%q) = %v, %v; want present %v", key, obj, err, want)
		}
	}
	if keys := sortStrings(c.Keys("b")); !cmp.Equal(keys, []string{"b/y", "b/z"}) {
		t.Errorf("Keys(b) = %v", keys)
	}
	if objs := c.List("c"); len(objs) != 0 {
		t.Errorf("List(c) = %v; want nothing", objs)
	}
	if !c.Synced("c") {
		t.Error("a namespace not watched is not listed: nothing of it is selected, and nothing holds it up")
	}

	// Events of the listed namespaces only.
	if _, err := client.Resource(cms).Namespace("c").Create(ctx, cm("c", "new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Resource(cms).Namespace("a").Create(ctx, cm("a", "new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the event of a/new", func() bool { n, _ := rec.counts(cms); return n == 4 })
	waitFor(t, "a/new in the cache", func() bool { obj, _ := c.Get("a", "new"); return obj != nil })
	if obj, _ := c.Get("c", "new"); obj != nil {
		t.Error("an object of an unlisted namespace is in the cache")
	}
	if n, _ := rec.counts(cms); n != 4 {
		t.Errorf("%d add events, want 4 (none from namespace c)", n)
	}
}

// TestNamespaceListedLateHoldsUpNoOther: while one namespace's list is refused, the other
// namespaces are listed and their objects usable (the handlers are told of them), the refusal is a
// problem naming the namespace, and the cache as a whole has not synced; once the list succeeds
// the namespace is listed, the handlers are told, and the problem goes.
func TestNamespaceListedLateHoldsUpNoOther(t *testing.T) {
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
	m, rec, _ := running(t, client, Options{})
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a,b"}})
	waitFor(t, "the refusal in b as a problem", func() bool {
		ps := m.Problems()
		return len(ps) == 1 && ps[0].Kind == problem.AccessDenied && strings.Contains(ps[0].Reason, "in namespace b") && strings.Contains(ps[0].Reason, "forbidden")
	})
	waitFor(t, "a listed, and the handlers told", func() bool {
		c, ok := framework.SyncedCache(m, cms, "a")
		obj, _ := c.Get("a", "x")
		return ok && obj != nil && cmp.Equal(rec.namespacesTold(cms), []string{"a"})
	})
	if _, ok := framework.SyncedCache(m, cms, "b"); ok {
		t.Fatal("namespace b counts as listed while its list is refused")
	}
	if _, ok := synced(m, cms); ok {
		t.Fatal("the whole cache counts as synced while namespace b is not listed")
	}
	// A walk of every namespace (the other side synced) reaches the listed ones now, not only when
	// all are: a key of a passed over while the other side was listing is not left waiting.
	if keys := walked(m); !cmp.Equal(keys, []string{"a/x"}) {
		t.Errorf("a walk of every namespace while b is refused gives %v, want [a/x]", keys)
	}
	mu.Lock()
	refuse = false
	mu.Unlock()
	waitFor(t, "sync once b is listed", func() bool { _, ok := synced(m, cms); return ok && len(m.Problems()) == 0 })
	waitFor(t, "the handlers told of b", func() bool { return cmp.Equal(rec.namespacesTold(cms), []string{"a", "b"}) })
	if keys := walked(m); !cmp.Equal(keys, []string{"a/x", "b/y"}) {
		t.Errorf("a walk of every namespace once all are listed gives %v, want [a/x b/y]", keys)
	}
}

// walked are the keys framework.ForEachKey gives of every namespace of the ConfigMaps, sorted.
func walked(m *Manager) []string {
	var keys []string
	framework.ForEachKey(m, cms, "", func(ns, name string) { keys = append(keys, ns+"/"+name) })
	sort.Strings(keys)
	return keys
}

// TestNamespaceScopeChange: a namespace added to the scope is listed and watched, those that stay
// are not listed again (their caches are kept), a namespace removed stops being watched and leaves
// the cache; the consumers get a new cache each time. A changed label selector lists everything
// again. Nothing is left running afterwards.
func TestNamespaceScopeChange(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"},
		cm("a", "x"), cm("b", "y"), cm("c", "z"))
	baseline := runtime.NumGoroutine()
	m, rec, _ := running(t, client, Options{})

	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a"}})
	waitFor(t, "first sync", func() bool { _, s := rec.counts(cms); return s == 1 })
	first, _ := m.Cache(cms)
	aPart := m.informers[cms].parts["a"].informer

	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "a,b"}})
	var second framework.Cache
	waitFor(t, "sync with b", func() bool { var ok bool; second, ok = synced(m, cms); return ok })
	if second == first {
		t.Error("the consumers were given the same cache after the scope changed")
	}
	if diff := cmp.Diff([]string{"a/x", "b/y"}, keysOf(second)); diff != "" {
		t.Errorf("cache after adding b (-want +got):\n%s", diff)
	}
	if got := lists(client, "list", cms); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("lists after adding b: %q, want a once and b once (a's cache kept)", got)
	}
	if m.informers[cms].parts["a"].informer != aPart {
		t.Error("the namespace that stays was not handed over")
	}

	// Removing a: b stays, a's informer stops.
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "b"}})
	var third framework.Cache
	waitFor(t, "sync without a", func() bool { var ok bool; third, ok = synced(m, cms); return ok })
	if diff := cmp.Diff([]string{"b/y"}, keysOf(third)); diff != "" {
		t.Errorf("cache after removing a (-want +got):\n%s", diff)
	}
	if got := lists(client, "list", cms); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("lists after removing a: %q, want no new list", got)
	}
	waitFor(t, "a's informer to stop", func() bool { aPart.mu.Lock(); defer aPart.mu.Unlock(); return aPart.stopped })

	// A changed label selector lists again.
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "b", LabelSelector: "k=v"}})
	waitFor(t, "b listed again", func() bool { return len(lists(client, "list", cms)) == 3 })
	if got := lists(client, "list", cms); !cmp.Equal(got, []string{"a", "b", "b"}) {
		t.Errorf("lists after changing the label selector: %q, want b listed again", got)
	}

	// Cluster-wide and back.
	m.Set(map[schema.GroupVersionResource]Spec{cms: {}})
	waitFor(t, "cluster-wide sync", func() bool { c, ok := synced(m, cms); return ok && len(c.List("")) == 3 })
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: "c"}})
	waitFor(t, "sync in c", func() bool { c, ok := synced(m, cms); return ok && len(c.List("")) == 1 })
	m.Stop()
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= baseline })
}

// TestManyNamespacesWatchedWhole: past MaxNamespaces namespaces, a resource the syncer may list
// cluster-wide is listed and watched once, cluster-wide, keeping only the objects of its namespaces;
// one it may not is watched namespace by namespace, at most ListingNamespaces listing at once.
func TestManyNamespacesWatchedWhole(t *testing.T) {
	objs := []kruntime.Object{cm("n0", "x"), cm("n1", "y"), cm("other", "z")}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList", sec: "SecretList"}, objs...)
	m, _, ctx := running(t, client, Options{MaxNamespaces: 2, ListingNamespaces: 2, ClusterWide: func(gvr schema.GroupVersionResource) bool { return gvr == cms }})
	var names []string
	for i := 0; i < 10; i++ {
		names = append(names, "n"+string(rune('0'+i)))
	}
	scope := NamespaceScope(names)
	m.Set(map[schema.GroupVersionResource]Spec{cms: {Namespaces: scope}, sec: {Namespaces: scope}})
	var c framework.Cache
	waitFor(t, "sync", func() bool { var ok bool; c, ok = synced(m, cms); return ok })
	if got := lists(client, "list", cms); !cmp.Equal(got, []string{""}) {
		t.Errorf("lists of configmaps: %q, want one cluster-wide", got)
	}
	if diff := cmp.Diff([]string{"n0/x", "n1/y"}, keysOf(c)); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	// The fake client replays nothing to a watch opened after a change: wait for the watch first.
	waitFor(t, "the cluster-wide watch", func() bool { return len(lists(client, "watch", cms)) == 1 })
	if _, err := client.Resource(cms).Namespace("other").Create(ctx, cm("other", "later"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Resource(cms).Namespace("n5").Create(ctx, cm("n5", "later"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n5/later in the cache", func() bool { obj, _ := c.Get("n5", "later"); return obj != nil })
	if obj, _ := c.Get("other", "later"); obj != nil || len(c.List("")) != 3 {
		t.Errorf("an object of a namespace not selected is in the cache: %v", keysOf(c))
	}
	waitFor(t, "the secrets of every namespace listed, one by one", func() bool { _, ok := synced(m, sec); return ok })
	if got := lists(client, "list", sec); len(got) != 10 {
		t.Errorf("lists of secrets: %q, want one per namespace", got)
	}
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
	return fakeShare{newInformer(informerConfig{description: "fake", health: &Health{}})}
}

func (s *fakeSource) APIs(schema.GroupVersionResource) Shared { return nil }

type fakeShare struct{ c framework.Cache }

func (f fakeShare) Cache() framework.Cache { return f.c }
func (f fakeShare) Denied() error          { return nil }
func (f fakeShare) Broken() bool           { return false }
func (f fakeShare) Release()               {}

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
