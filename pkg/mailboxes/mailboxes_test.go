package mailboxes

import (
	"context"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/mapping"
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

// An upstream hub informer holds two workspaces' objects of the same namespace and name; each view
// shows its own only, by key, in lists, in the namespace index and in events.
func TestUpstreamViewsKeepWorkspacesApart(t *testing.T) {
	hub := NewHub("upstream", true, func(schema.GroupVersionResource) Lister { return nil })
	e := hub.newEntry(hubKey{gvr: configMapsGVR})
	idx := e.informer.GetIndexer()
	for _, obj := range []*unstructured.Unstructured{
		configMap("c1", "shop", "app", "c1"), configMap("c2", "shop", "app", "c2"), configMap("c2", "other", "x", "c2"),
	} {
		if err := idx.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"c1", "c2"} {
		v := newView(e.informer, upScope{logicalcluster.Name(c)})
		obj, ok, err := v.GetIndexer().GetByKey("shop/app")
		if err != nil || !ok {
			t.Fatalf("%s: shop/app not found: %v", c, err)
		}
		if got, _, _ := unstructured.NestedString(obj.(*unstructured.Unstructured).Object, "data", "from"); got != c {
			t.Errorf("%s: shop/app is %s's", c, got)
		}
		keys, err := v.GetIndexer().IndexKeys(cache.NamespaceIndex, "shop")
		if err != nil || len(keys) != 1 || keys[0] != "shop/app" {
			t.Errorf("%s: namespace shop holds %v (%v), want [shop/app]", c, keys, err)
		}
	}
	if n := len(newView(e.informer, upScope{"c2"}).GetStore().List()); n != 2 {
		t.Errorf("c2's view lists %d objects, want 2", n)
	}
	if _, ok, _ := newView(e.informer, upScope{"c1"}).GetIndexer().GetByKey("other/x"); ok {
		t.Error("c1's view shows c2's other/x")
	}

	var got []string
	h := scopedHandler{sc: upScope{"c1"}, next: cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { got = append(got, "add "+obj.(*unstructured.Unstructured).GetName()) },
		DeleteFunc: func(obj interface{}) { got = append(got, "delete") },
	}}
	h.OnAdd(configMap("c2", "shop", "app", "c2"), false)
	h.OnAdd(configMap("c1", "shop", "app", "c1"), false)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "c2|shop/app", Obj: configMap("c2", "shop", "app", "c2")})
	if len(got) != 1 || got[0] != "add app" {
		t.Errorf("c1's handler heard %v, want only its own add", got)
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
	hub := NewHub("downstream", false, func(gvr schema.GroupVersionResource) Lister { return edge.Resource(gvr) })
	e := hub.newEntry(hubKey{gvr: configMapsGVR, spec: informermanager.Spec{}})
	list, _ := edge.Resource(configMapsGVR).List(ctx, metav1.ListOptions{})
	for i := range list.Items {
		_ = e.informer.GetIndexer().Add(&list.Items[i])
	}
	v1 := newView(e.informer, downScope{cluster: "c1", namespaces: namespaces})
	keys := v1.GetStore().ListKeys()
	if len(keys) != 2 || !contains(keys, "shop/app") || !contains(keys, "shop/local") {
		t.Errorf("c1's view keys %v, want shop/app and shop/local", keys)
	}
	obj, ok, _ := v1.GetIndexer().GetByKey("shop/app")
	if !ok || !mapping.OwnedDownstream(obj.(*unstructured.Unstructured)) {
		t.Errorf("c1's view: shop/app %v, owned %v", ok, ok && mapping.OwnedDownstream(obj.(*unstructured.Unstructured)))
	}
	if got := newView(e.informer, downScope{cluster: "c2", namespaces: namespaces}).GetStore().ListKeys(); len(got) != 0 {
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

// Engines reading one sharedDiscovery cause one walk per invalidation, whatever their number.
func TestSharedDiscovery(t *testing.T) {
	fake := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"list"}}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Namespaced: true, Kind: "Deployment", Verbs: []string{"list"}}}},
	}}}
	d := newSharedDiscovery(fake)
	for range 5 {
		if _, lists, err := d.ServerGroupsAndResources(); err != nil || len(lists) != 2 {
			t.Fatalf("ServerGroupsAndResources: %d lists, %v", len(lists), err)
		}
	}
	first := len(fake.Actions())
	if first != 3 { // the groups, then each group version once
		t.Errorf("5 walks made %d requests, want 3", first)
	}
	d.Invalidate()
	d.Invalidate()
	for range 3 {
		_, _, _ = d.ServerGroupsAndResources()
	}
	if got := len(fake.Actions()) - first; got != 3 {
		t.Errorf("after an invalidation, 3 walks made %d requests, want 3", got)
	}
}
