package informermanager

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/problem"
)

type recorder struct {
	mu     sync.Mutex
	events map[schema.GroupVersionResource]int
	synced map[schema.GroupVersionResource]int
	// told are the namespaces Synced was told of, in order ("" for a whole resource).
	told map[schema.GroupVersionResource][]string
}

func newRecorder() *recorder {
	return &recorder{events: map[schema.GroupVersionResource]int{}, synced: map[schema.GroupVersionResource]int{},
		told: map[schema.GroupVersionResource][]string{}}
}

// namespacesTold are the namespaces Synced was told of for gvr, sorted, without repeats.
func (r *recorder) namespacesTold(gvr schema.GroupVersionResource) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, ns := range r.told[gvr] {
		if !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out
}

func (r *recorder) HandlerFor(_ context.Context, gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) {
		r.mu.Lock()
		r.events[gvr]++
		r.mu.Unlock()
	}}
}

func (r *recorder) Synced(gvr schema.GroupVersionResource, namespace string) {
	r.mu.Lock()
	r.synced[gvr]++
	r.told[gvr] = append(r.told[gvr], namespace)
	r.mu.Unlock()
}

func (r *recorder) counts(gvr schema.GroupVersionResource) (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[gvr], r.synced[gvr]
}

var (
	cms = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	sec = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

func cm(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetManagedFields(nil)
	return u
}

// synced is a manager's cache of gvr once it runs and has listed everything.
func synced(m *Manager, gvr schema.GroupVersionResource) (framework.Cache, bool) {
	return framework.SyncedCache(m, gvr, "")
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Logf("%s", buf[:n])
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestAddRemoveReAdd: an informer is started, delivers events and syncs; removing it stops its
// goroutines and handler (no events after removal, goroutine count back to where it was); adding it
// again starts a fresh one that syncs again.
func TestAddRemoveReAdd(t *testing.T) {
	scheme := kruntime.NewScheme()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{cms: "ConfigMapList", sec: "SecretList"}, cm("a", "one"))
	rec := newRecorder()
	m := New("test", client, rec, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Start(ctx)
	// A control informer on the same resource that stays: once it has seen an object, a removed
	// informer whose handler were still attached would have seen it too.
	control := newRecorder()
	cm2 := New("control", client, control, Options{})
	cm2.Start(ctx)
	defer cm2.Stop()
	cm2.Set(map[schema.GroupVersionResource]Spec{cms: {}})
	waitFor(t, "control sync", func() bool { _, s := control.counts(cms); return s == 1 })

	baseline := runtime.NumGoroutine()
	for round := 1; round <= 3; round++ {
		started := m.Set(map[schema.GroupVersionResource]Spec{cms: {}, sec: {}})
		if len(started) != 2 {
			t.Fatalf("round %d: started %v", round, started)
		}
		waitFor(t, fmt.Sprintf("sync of round %d (told synced of %v)", round, rec.namespacesTold(cms)), func() bool { _, s := rec.counts(cms); return s >= round })
		if _, s := rec.counts(cms); s != round {
			t.Fatalf("round %d: told synced %d times", round, s)
		}
		if c, ok := synced(m, cms); !ok || len(c.List("")) != round { // one more object each round
			t.Fatalf("round %d: cache not synced with the object", round)
		}
		m.Set(map[schema.GroupVersionResource]Spec{sec: {}}) // remove configmaps
		if _, ok := m.Cache(cms); ok {
			t.Fatal("a removed informer is still listed")
		}
		events, _ := rec.counts(cms)
		seen, _ := control.counts(cms)
		if _, err := client.Resource(cms).Namespace("a").Create(ctx, cm("a", "after-removal-"+string(rune('0'+round))), metav1CreateOptions()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the control informer to see the new object", func() bool { n, _ := control.counts(cms); return n > seen })
		if after, _ := rec.counts(cms); after != events {
			t.Fatalf("round %d: a removed informer's handler still got %d events", round, after-events)
		}
		m.Set(nil)
		if len(m.Running()) != 0 {
			t.Fatalf("running after Set(nil): %v", m.Running())
		}
		waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= baseline })
	}
	// A changed spec restarts the informer.
	m.Set(map[schema.GroupVersionResource]Spec{cms: {}})
	first, _ := m.Cache(cms)
	m.Set(map[schema.GroupVersionResource]Spec{cms: {LabelSelector: "a=b"}})
	second, _ := m.Cache(cms)
	if first == second {
		t.Error("a changed label selector did not restart the informer")
	}
	m.Stop()
	waitFor(t, "goroutines to exit after Stop", func() bool { return runtime.NumGoroutine() <= baseline })
}

// TestTransform: caches hold objects as framework.Compacts without managedFields; a slim cache
// holds no content.
func TestTransform(t *testing.T) {
	obj := cm("a", "with-fields")
	obj.Object["metadata"].(map[string]interface{})["managedFields"] = []interface{}{map[string]interface{}{"manager": "kubectl"}}
	obj.Object["data"] = map[string]interface{}{"k": "v"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"}, obj)
	m := New("test", client, nil, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Start(ctx)
	defer m.Stop()
	m.Set(map[schema.GroupVersionResource]Spec{cms: {}})
	var c framework.Cache
	waitFor(t, "sync", func() bool { var ok bool; c, ok = synced(m, cms); return ok })
	held, ok := c.List("")[0].(*framework.Compact)
	if !ok {
		t.Fatalf("the cache holds a %T, want a *framework.Compact", c.List("")[0])
	}
	got := framework.ObjectOf(held)
	if len(got.GetManagedFields()) != 0 {
		t.Fatal("managedFields kept in the cache")
	}
	if got.GetName() != "with-fields" || got.Object["data"] == nil {
		t.Errorf("the cache's object decodes as %v", got.Object)
	}

	// A slim cache keeps no content, and the digest of what the apply manager owns.
	m.Set(map[schema.GroupVersionResource]Spec{cms: {AppliedBy: "kubectl"}})
	waitFor(t, "sync of the slim cache", func() bool { var ok bool; c, ok = synced(m, cms); return ok && len(c.List("")) == 1 })
	got = framework.ObjectOf(c.List("")[0])
	if _, ok := got.Object[mapping.AppliedField]; !ok || got.Object["data"] != nil || got.GetName() != "with-fields" {
		t.Errorf("the slim cache's object decodes as %v", got.Object)
	}

	// A whole cache keeps, of managedFields, only the manager's update entry (a plain create), without its fields.
	created := cm("a", "with-fields")
	created.Object["metadata"].(map[string]interface{})["managedFields"] = []interface{}{
		map[string]interface{}{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": map[string]interface{}{"f:data": map[string]interface{}{}}},
		map[string]interface{}{"manager": "other", "operation": "Apply"},
	}
	kept, err := transformFor(Spec{Manager: "kubectl"}, false)(created.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if mf := kept.(*unstructured.Unstructured).GetManagedFields(); len(mf) != 1 || mf[0].Manager != "kubectl" || mf[0].Operation != "Update" || mf[0].FieldsV1 != nil {
		t.Errorf("managedFields in a whole cache: %+v", mf)
	}
	if kept, _ := transformFor(Spec{Manager: "someone-else"}, false)(created.DeepCopy()); kept.(*unstructured.Unstructured).GetManagedFields() != nil {
		t.Error("managedFields of other managers kept")
	}
}

// TestNothingStartsAfterStop is the regression test of an informer started after Stop: the engine's
// resolver may still call Set while shutting down, and nothing may run then.
func TestNothingStartsAfterStop(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"})
	m := New("test", client, nil, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Start(ctx)
	m.Stop()
	if started := m.Set(map[schema.GroupVersionResource]Spec{cms: {}}); len(started) != 0 || len(m.Running()) != 0 {
		t.Fatalf("started %v after Stop; running %v", started, m.Running())
	}
	m.Start(ctx)
	if len(m.Running()) != 0 {
		t.Fatalf("running after a Start that followed Stop: %v", m.Running())
	}
}

func metav1CreateOptions() metav1.CreateOptions { return metav1.CreateOptions{} }

// TestRefusedListIsAProblem: a resource the apiserver refuses to list is a problem naming the side,
// the resource and the refusal, while it lasts; once a list succeeds it is gone.
func TestRefusedListIsAProblem(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{sec: "SecretList"})
	var mu sync.Mutex
	refuse := true
	client.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, kruntime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if refuse {
			return true, nil, apierrors.NewForbidden(sec.GroupResource(), "", errors.New("no RBAC rule allows it"))
		}
		return false, nil, nil
	})
	m := New("upstream", client, nil, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Start(ctx)
	defer m.Stop()
	m.Set(map[schema.GroupVersionResource]Spec{sec: {}})
	waitFor(t, "the refusal as a problem", func() bool {
		ps := m.Problems()
		return len(ps) == 1 && ps[0].Kind == problem.AccessDenied && ps[0].Resource == sec.GroupResource() &&
			strings.Contains(ps[0].Reason, "cannot list and watch upstream secrets") && strings.Contains(ps[0].Reason, "forbidden")
	})
	mu.Lock()
	refuse = false
	mu.Unlock()
	waitFor(t, "the problem to clear after a successful list", func() bool { _, ok := synced(m, sec); return ok && len(m.Problems()) == 0 })
}

// TestSlimSharesFieldNames: the transform of a decoded cache leaves an object's content as it was, with field names
// shared between objects.
func TestSlimSharesFieldNames(t *testing.T) {
	decode := func() *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"a",
			"labels":{"edge.kubestellar.io/owner":"t"},"managedFields":[{"manager":"m"}]},"data":{"k":"v"},"list":[{"name":"n"}]}`)); err != nil {
			t.Fatal(err)
		}
		return o
	}
	want := decode()
	want.SetManagedFields(nil)
	slim := transformFor(Spec{}, false) // what the informers a Source runs use
	a, _ := slim(decode())
	b, _ := slim(decode())
	if diff := cmp.Diff(want.Object, a.(*unstructured.Unstructured).Object); diff != "" {
		t.Errorf("content changed (-want +got):\n%s", diff)
	}
	keyOf := func(m map[string]interface{}) string {
		for k := range m {
			return k
		}
		return ""
	}
	labels := func(o interface{}) map[string]interface{} {
		return o.(*unstructured.Unstructured).Object["metadata"].(map[string]interface{})["labels"].(map[string]interface{})
	}
	item := func(o interface{}) map[string]interface{} {
		return o.(*unstructured.Unstructured).Object["list"].([]interface{})[0].(map[string]interface{})
	}
	if ka, kb := keyOf(labels(a)), keyOf(labels(b)); unsafe.StringData(ka) != unsafe.StringData(kb) {
		t.Error("a label key is not shared between two objects")
	}
	if ka, kb := keyOf(item(a)), keyOf(item(b)); unsafe.StringData(ka) != unsafe.StringData(kb) {
		t.Error("a field name in a list is not shared between two objects")
	}
}

// TestHold: an informer that Set will replace (its scope changes) or stop stops counting as synced
// at Hold; one that stays as it is does not.
func TestHold(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(),
		map[schema.GroupVersionResource]string{cms: "ConfigMapList", sec: "SecretList"}, cm("a", "one"))
	rec := newRecorder()
	m := New("test", client, rec, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Start(ctx)
	defer m.Stop()
	m.Set(map[schema.GroupVersionResource]Spec{cms: {}, sec: {}})
	waitFor(t, "sync", func() bool { _, a := synced(m, cms); _, b := synced(m, sec); return a && b })

	next := map[schema.GroupVersionResource]Spec{cms: {Namespaces: NamespaceScope([]string{"a"})}}
	m.Hold(next)
	if _, ok := synced(m, cms); ok {
		t.Error("an informer whose scope changes still counts as synced after Hold")
	}
	if _, ok := synced(m, sec); ok {
		t.Error("an informer Set will stop still counts as synced after Hold")
	}
	m.Set(next)
	waitFor(t, "the scoped informer's sync", func() bool { _, ok := synced(m, cms); return ok })
	m.Hold(next)
	if _, ok := synced(m, cms); !ok {
		t.Error("Hold with the running specs made an informer look not synced")
	}
}

// TestRelistIsIncompleteUntilReplaced: after a watch fails (410 Gone, as after an apiserver's
// restart) the informer lists again. client-go's informers count as synced throughout; this one is
// not Complete from the failure until the new list has replaced the cache, and then tells the
// handlers Synced again (everything may be looked at again), and the objects the list brings that
// the cache lacked are told as added.
func TestRelistIsIncompleteUntilReplaced(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"},
		cm("a", "before"))
	var mu sync.Mutex
	watches := []*watch.FakeWatcher{}
	client.PrependWatchReactor("configmaps", func(clienttesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFake()
		mu.Lock()
		watches = append(watches, w)
		mu.Unlock()
		return true, w, nil
	})
	release := make(chan struct{})
	lists := 0
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, kruntime.Object, error) {
		mu.Lock()
		lists++
		n := lists
		mu.Unlock()
		if n > 1 {
			<-release // the re-list is slow: the apiserver's watch cache fills again
		}
		return false, nil, nil
	})
	m, rec, ctx := running(t, client, Options{})
	m.Set(map[schema.GroupVersionResource]Spec{cms: {}})
	var c framework.Cache
	waitFor(t, "sync", func() bool { var ok bool; c, ok = synced(m, cms); return ok && c.Complete("") })
	waitFor(t, "the watch", func() bool { mu.Lock(); defer mu.Unlock(); return len(watches) == 1 })
	if _, s := rec.counts(cms); s != 1 {
		t.Fatalf("told synced %d times, want 1", s)
	}

	// Made while the watch is about to fail: the cache never hears of it by a watch event.
	if _, err := client.Resource(cms).Namespace("a").Create(ctx, cm("a", "behind"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	watches[0].Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	mu.Unlock()
	waitFor(t, "the re-list to begin", func() bool { mu.Lock(); defer mu.Unlock(); return lists == 2 })
	if !c.Synced("") || c.Complete("") {
		t.Fatalf("during the re-list: synced %v, complete %v; want synced and not complete", c.Synced(""), c.Complete(""))
	}
	events, _ := rec.counts(cms)
	close(release)
	waitFor(t, "the re-list to replace the cache", func() bool { return c.Complete("") })
	waitFor(t, "the handlers told synced again", func() bool { _, s := rec.counts(cms); return s == 2 })
	waitFor(t, "the object the cache lacked told as added", func() bool { n, _ := rec.counts(cms); return n == events+1 })
	if obj, _ := c.Get("a", "behind"); obj == nil {
		t.Error("the re-list did not bring the object")
	}
}
