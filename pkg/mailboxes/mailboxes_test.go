package mailboxes

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/syncer"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func configMap(cluster, ns, name, data string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]interface{}{"from": data}}}
	u.SetNamespace(ns)
	u.SetName(name)
	if cluster != "" {
		u.SetAnnotations(map[string]string{logicalcluster.AnnotationKey: cluster})
	}
	return u
}

// staticLister lists fixed objects and watches nothing.
type staticLister struct{ items []*unstructured.Unstructured }

func (l staticLister) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	out := &unstructured.UnstructuredList{}
	out.SetResourceVersion("1")
	for _, u := range l.items {
		out.Items = append(out.Items, *u.DeepCopy())
	}
	return out, nil
}

func (l staticLister) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// hubCache runs a hub of one side over lister and returns scope's view of its informer of
// configmaps, once it has listed.
func hubCache(t *testing.T, opts informermanager.HubOptions, scope informermanager.Scope) framework.Cache {
	t.Helper()
	hub := informermanager.NewHub(opts)
	ctx, cancel := context.WithCancel(context.Background())
	hub.Start(ctx)
	t.Cleanup(func() { cancel(); hub.Stop() })
	sh := hub.Share(configMapsGVR, informermanager.Spec{}, scope)
	t.Cleanup(sh.Release)
	c := sh.Cache()
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return c.Synced(""), nil }); err != nil {
		t.Fatal("the hub's informer did not list")
	}
	return c
}

// An upstream hub informer holds two workspaces' objects of the same namespace and name; each view
// shows its own only, by name, in lists, by namespace and in events.
func TestUpstreamViewsKeepWorkspacesApart(t *testing.T) {
	objs := []*unstructured.Unstructured{configMap("c1", "shop", "app", "c1"), configMap("c2", "shop", "app", "c2"), configMap("c2", "other", "x", "c2")}
	opts := informermanager.HubOptions{Side: "upstream", Lister: func(schema.GroupVersionResource) informermanager.Lister { return staticLister{objs} },
		KeyFunc: kcpcache.DeletionHandlingMetaClusterNamespaceKeyFunc,
		Indexers: cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc,
			kcpcache.ClusterAndNamespaceIndexName: kcpcache.ClusterAndNamespaceIndexFunc}}
	for _, c := range []string{"c1", "c2"} {
		v := hubCache(t, opts, upScope{logicalcluster.Name(c)})
		obj, err := v.Get("shop", "app")
		if err != nil || obj == nil {
			t.Fatalf("%s: shop/app not found: %v", c, err)
		}
		if got, _, _ := unstructured.NestedString(obj.(*unstructured.Unstructured).Object, "data", "from"); got != c {
			t.Errorf("%s: shop/app is %s's", c, got)
		}
		if keys := v.Keys("shop"); len(keys) != 1 || keys[0] != "shop/app" {
			t.Errorf("%s: namespace shop holds %v, want [shop/app]", c, keys)
		}
		var mu sync.Mutex
		heard := 0
		if _, err := v.AddHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) {
			mu.Lock()
			heard++
			mu.Unlock()
		}}); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"c1": 1, "c2": 2}[c]
		if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { mu.Lock(); defer mu.Unlock(); return heard == want, nil }); err != nil {
			t.Errorf("%s's handler heard %d objects, want its %d", c, heard, want)
		}
	}
	if n := len(hubCache(t, opts, upScope{"c2"}).List("")); n != 2 {
		t.Errorf("c2's view lists %d objects, want 2", n)
	}
	if obj, _ := hubCache(t, opts, upScope{"c1"}).Get("other", "x"); obj != nil {
		t.Error("c1's view shows c2's other/x")
	}
}

// A workspace's engine writes through its edge client into the mapped namespace, marked; it reads
// the object back (client and view) under its upstream namespace, owned by it; the other
// workspace's view does not see it, and the edge's own objects in the mapped namespace are the
// workspace's (upsync) while those elsewhere are nobody's.
func TestEdgeClientAndViews(t *testing.T) {
	ctx := context.Background()
	edge := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		configMapsGVR: "ConfigMapList", namespacesGVR: "NamespaceList"})
	namespaces := NewNamespaces()
	c1 := EdgeClient(edge, "c1", namespaces)

	desired, err := mapping.ToDownstream(configMap("c1", "shop", "app", "c1"), mapping.Options{OwnerLabelValue: "edge-1", Cluster: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Resource(configMapsGVR).Namespace("shop").Create(ctx, desired, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	edgeNS := mapping.WorkspaceNamespace("c1", "shop")
	raw, err := edge.Resource(configMapsGVR).Namespace(edgeNS).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("not written to %s at the edge: %v", edgeNS, err)
	}
	a := raw.GetAnnotations()
	if a[mapping.ClusterAnnotation] != "c1" || a[mapping.UpstreamNamespaceAnnotation] != "shop" || !mapping.OwnedDownstream(raw) {
		t.Errorf("edge object's marks: %v", a)
	}
	if desired.GetNamespace() != "shop" {
		t.Errorf("the engine's object was modified: namespace %q", desired.GetNamespace())
	}
	back, err := c1.Resource(configMapsGVR).Namespace("shop").Get(ctx, "app", metav1.GetOptions{})
	if err != nil || back.GetNamespace() != "shop" || !mapping.OwnedDownstream(back) || !mapping.UpToDate(desired, back) {
		t.Fatalf("read back %v (%v): namespace %q, owned %v, up to date %v", back, err, back.GetNamespace(), mapping.OwnedDownstream(back), mapping.UpToDate(desired, back))
	}

	// The edge's own objects: one in the mapped namespace (upsync's), one elsewhere.
	for _, obj := range []*unstructured.Unstructured{configMap("", edgeNS, "local", "edge"), configMap("", "default", "local", "edge")} {
		if _, err := edge.Resource(configMapsGVR).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	opts := informermanager.HubOptions{Side: "downstream", Lister: func(gvr schema.GroupVersionResource) informermanager.Lister { return edge.Resource(gvr) },
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, WorkspaceIndex: workspaceIndexFunc}}
	v1 := hubCache(t, opts, downScope{cluster: "c1", namespaces: namespaces})
	keys := v1.Keys("")
	if len(keys) != 2 || !contains(keys, "shop/app") || !contains(keys, "shop/local") {
		t.Errorf("c1's view keys %v, want shop/app and shop/local", keys)
	}
	obj, _ := v1.Get("shop", "app")
	if obj == nil || !mapping.OwnedDownstream(obj.(*unstructured.Unstructured)) {
		t.Errorf("c1's view: shop/app %v", obj)
	}
	if got := hubCache(t, opts, downScope{cluster: "c2", namespaces: namespaces}).Keys(""); len(got) != 0 {
		t.Errorf("c2's view shows %v", got)
	}
	// After a restart the map of namespaces is learnt from the edge's Namespaces.
	fresh := NewNamespaces()
	ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetName(edgeNS)
	ns.SetAnnotations(map[string]string{mapping.ClusterAnnotation: "c1", mapping.UpstreamNamespaceAnnotation: "shop"})
	fresh.Observe(ns)
	if c, up, ok := fresh.Origin(edgeNS); !ok || c != "c1" || up != "shop" {
		t.Errorf("Origin(%s) = %s, %s, %v", edgeNS, c, up, ok)
	}
	ns.SetName("tampered")
	fresh.Observe(ns)
	if _, _, ok := fresh.Origin("tampered"); ok {
		t.Error("a Namespace whose marks do not map to its name was taken for a workspace's")
	}

	// Namespaces themselves are renamed both ways.
	nsObj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
	nsObj.SetName("shop")
	nsDesired, _ := mapping.ToDownstream(nsObj, mapping.Options{OwnerLabelValue: "edge-1", Cluster: "c1"})
	created, err := c1.Resource(namespacesGVR).Create(ctx, nsDesired, metav1.CreateOptions{})
	if err != nil || created.GetName() != "shop" || !mapping.OwnedDownstream(created) {
		t.Fatalf("namespace create: %v, %v", created, err)
	}
	if _, err := edge.Resource(namespacesGVR).Get(ctx, edgeNS, metav1.GetOptions{}); err != nil {
		t.Errorf("namespace not created as %s: %v", edgeNS, err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name                                      string
		present, bound, running, draining, marked bool
		want                                      action
	}{
		{"bound, not served", true, true, false, false, false, start},
		{"bound, served", true, true, true, false, false, nothing},
		{"bound after a restart, objects at the edge", true, true, false, false, true, start},
		{"bound again while draining", true, true, true, true, false, restart},
		{"binding, not Bound yet", true, false, false, false, false, nothing},
		{"served, binding not Bound for now", true, false, true, false, false, nothing},
		{"not Bound for now after a restart", true, false, false, false, true, nothing},
		{"binding gone", false, false, true, false, false, drain},
		{"binding gone, draining", false, false, true, true, false, checkDrained},
		{"unbound while the syncer was down", false, false, false, false, true, startDraining},
		{"never bound, nothing at the edge", false, false, false, false, false, nothing},
	}
	for _, c := range cases {
		if got := decide(c.present, c.bound, c.running, c.draining, c.marked); got != c.want {
			t.Errorf("%s: decide = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestSharedDiscovery: engines reading the one syncer.Discovery the controller gives them all cause
// one walk, however many read at once and however many invalidated it before (every engine
// invalidates on the same CRD event).
func TestSharedDiscovery(t *testing.T) {
	fake := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"list"}}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Namespaced: true, Kind: "Deployment", Verbs: []string{"list"}}}},
	}}}
	d := syncer.NewDiscovery(fake)
	walk := func(engines int) {
		var wg sync.WaitGroup
		for range engines {
			wg.Go(func() {
				if _, lists, err := d.ServerGroupsAndResources(); err != nil || len(lists) != 2 {
					t.Errorf("ServerGroupsAndResources: %d lists, %v", len(lists), err)
				}
			})
		}
		wg.Wait()
	}
	walk(5)
	first := len(fake.Actions())
	if first != 3 { // the groups, then each group version once
		t.Errorf("5 engines' walks made %d requests, want 3", first)
	}
	d.Invalidate()
	d.Invalidate()
	walk(3)
	if got := len(fake.Actions()) - first; got != 3 {
		t.Errorf("after an invalidation, 3 engines' walks made %d requests, want 3", got)
	}
}

// TestRunStopsEverything: Run returns once ctx is done, having stopped every goroutine it started,
// here while it waits for the APIExportEndpointSlice (the provider workspace refuses every request).
func TestRunStopsEverything(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var refused atomic.Int32
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		refused.Add(1)
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`, http.StatusForbidden)
	}))
	defer refuse.Close()
	edge := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	c, err := NewController(Config{Provider: &rest.Config{Host: refuse.URL}, EndpointSlice: "slice", Downstream: edge,
		DownstreamDiscovery: syncer.NewDiscovery(&discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}),
		Engine:              syncer.Config{Metrics: metrics.New(prometheus.NewRegistry())}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	// Stopped while it waits: once it has been refused a few times.
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return refused.Load() >= 2, nil
	}); err != nil {
		t.Fatalf("the provider workspace was asked %d times", refused.Load())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	refuse.CloseClientConnections()
}

// TestDrainQuietPeriod: a workspace whose binding is gone is drained only once it has stayed gone for
// the quiet period; none drains at once.
func TestDrainQuietPeriod(t *testing.T) {
	c := &Controller{cfg: Config{DrainQuietPeriod: time.Hour},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	defer c.queue.ShutDown()
	ws := logicalcluster.Name("w")
	for i := 0; i < 2; i++ {
		if !c.quiet(context.Background(), ws) {
			t.Errorf("a binding just gone drained within the quiet period (look %d)", i)
		}
	}
	c.unbound[ws] = time.Now().Add(-2 * time.Hour)
	if c.quiet(context.Background(), ws) {
		t.Error("a binding gone for longer than the quiet period not drained")
	}
	c.cfg.DrainQuietPeriod = 0
	if c.quiet(context.Background(), "other") {
		t.Error("no quiet period, yet not drained")
	}
}
