package syncer

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/framework/fakeinformers"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/selection"
)

var (
	cmGVR      = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretGVR  = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	widgetGVR  = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	verbs      = metav1.Verbs{"list", "watch", "get", "create", "update", "patch", "delete"}
	ownedLabel = informermanager.Spec{LabelSelector: mapping.OwnerLabel + "=edge1"}
)

// fakeDiscovery serves a fixed set of APIs, and fails the groups listed in failing.
type fakeDiscovery struct {
	widgets     bool
	edgeConfigs bool // serves edgesyncconfigs
	failing     []string
}

func (d *fakeDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	groups := []*metav1.APIGroup{{Name: "", PreferredVersion: metav1.GroupVersionForDiscovery{Version: "v1"}}}
	lists := []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: verbs},
		{Name: "secrets", Kind: "Secret", Namespaced: true, Verbs: verbs},
		{Name: "namespaces", Kind: "Namespace", Verbs: verbs},
	}}}
	if d.widgets {
		groups = append(groups, &metav1.APIGroup{Name: "example.com", PreferredVersion: metav1.GroupVersionForDiscovery{Version: "v1"}})
		lists = append(lists, &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Verbs: verbs}}})
	}
	if d.edgeConfigs {
		groups = append(groups, &metav1.APIGroup{Name: "edge.kubestellar.io", PreferredVersion: metav1.GroupVersionForDiscovery{Version: "v2alpha1"}})
		lists = append(lists, &metav1.APIResourceList{GroupVersion: "edge.kubestellar.io/v2alpha1", APIResources: []metav1.APIResource{
			{Name: "edgesyncconfigs", Kind: "EdgeSyncConfig", Verbs: verbs}}})
	}
	if len(d.failing) == 0 {
		return groups, lists, nil
	}
	failed := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{}}
	for _, g := range d.failing {
		failed.Groups[schema.GroupVersion{Group: g, Version: "v1"}] = context.DeadlineExceeded
		for i := range lists {
			if gv, _ := schema.ParseGroupVersion(lists[i].GroupVersion); gv.Group == g {
				lists[i] = nil
			}
		}
	}
	return groups, lists, failed
}

// fakeInformers records the informers asked for and serves caches a test fills.
type fakeInformers struct {
	specs    map[schema.GroupVersionResource]informermanager.Spec
	caches   fakeinformers.Informers
	overfull map[schema.GroupVersionResource]informermanager.Overflow
}

func (f *fakeInformers) Overfull() map[schema.GroupVersionResource]informermanager.Overflow {
	return f.overfull
}

func (f *fakeInformers) Hold(map[schema.GroupVersionResource]informermanager.Spec) {}

func (f *fakeInformers) Set(desired map[schema.GroupVersionResource]informermanager.Spec) []schema.GroupVersionResource {
	f.specs = desired
	return nil
}

func (f *fakeInformers) Cache(gvr schema.GroupVersionResource) (framework.Cache, bool) {
	return f.caches.Cache(gvr)
}

func syncerConfig(name string, spec map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncerConfig", "spec": spec}}
	u.SetName(name)
	return u
}

func namespaceScope(namespaces []interface{}, resources ...string) map[string]interface{} {
	var rs []interface{}
	for _, r := range resources {
		rs = append(rs, map[string]interface{}{"group": "", "resource": r, "apiVersion": "v1"})
	}
	return map[string]interface{}{"namespaceScope": map[string]interface{}{"namespaces": namespaces, "resources": rs}}
}

func clusterScope(group, resource string) map[string]interface{} {
	return map[string]interface{}{"clusterScope": []interface{}{map[string]interface{}{"group": group, "resource": resource, "apiVersion": "v1"}}}
}

type bed struct {
	r                  *resolver
	configs            []*unstructured.Unstructured
	upDisc, downDisc   *fakeDiscovery
	up, down           *fakeInformers
	current            *snapshot
	upClient, downClnt *dynamicfake.FakeDynamicClient
	// edgeServed is what the resolver last said of EdgeSyncConfigs being served; edgeListed what
	// it is told of their being listed.
	edgeServed, edgeListed bool
}

// newBed is a resolver over fakes; downObjs are the objects at the edge (for the scan at start).
func newBed(downObjs ...runtime.Object) *bed {
	b := &bed{upDisc: &fakeDiscovery{}, downDisc: &fakeDiscovery{},
		up: &fakeInformers{caches: fakeinformers.Informers{}}, current: emptySnapshot(),
		down: &fakeInformers{caches: fakeinformers.Informers{namespaceGVR: fakeinformers.With()}}} // every edge namespace, none the syncer's
	kinds := map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", secretGVR: "SecretList",
		namespaceGVR: "NamespaceList", widgetGVR: "WidgetList"}
	b.upClient = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds)
	b.downClnt = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, downObjs...)
	b.r = &resolver{
		configs: func() []*unstructured.Unstructured { return b.configs }, upDisc: b.upDisc, downDisc: b.downDisc,
		upClient: b.upClient, downClnt: b.downClnt, up: b.up, down: b.down, ownerLabel: "edge1",
		publish: func(s *snapshot) { b.current = s },
		watchEdgeConfigs: func(_ context.Context, served bool) bool {
			b.edgeServed = served
			return b.edgeListed
		},
	}
	b.edgeListed = true
	return b
}

func (b *bed) resolve(t *testing.T) *snapshot {
	t.Helper()
	next, err := b.r.resolve(context.Background(), b.current)
	if err != nil {
		t.Fatal(err)
	}
	if next != b.current {
		t.Fatal("the snapshot returned is not the one published")
	}
	return next
}

func keys[V any](m map[schema.GroupResource]V) []string {
	var out []string
	for gr := range m {
		out = append(out, gr.String())
	}
	return sortStrings(out)
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func ownedCM(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(map[string]string{mapping.OwnerLabel: "edge1"})
	u.SetAnnotations(map[string]string{mapping.DownsyncedAnnotation: mapping.MarkOf(u)})
	return u
}

// TestResolverFollowsConfigs: a config added, changed and deleted; the informers follow, and objects
// the syncer owns keep their resource watched (a leftover) until they are gone.
func TestResolverFollowsConfigs(t *testing.T) {
	b := newBed()
	s := b.resolve(t)
	if len(s.resources) != 0 || !cmp.Equal(b.down.specs, map[schema.GroupVersionResource]informermanager.Spec{namespaceGVR: {}}) || len(b.up.specs) != 0 {
		t.Fatalf("no config: resources %v, up %v, down %v", keys(s.resources), b.up.specs, b.down.specs)
	}

	b.configs = []*unstructured.Unstructured{syncerConfig("a", namespaceScope([]interface{}{"demo"}, "configmaps"))}
	s = b.resolve(t)
	if diff := cmp.Diff([]string{"configmaps", "namespaces"}, keys(s.resources)); diff != "" {
		t.Errorf("added: resources (-want +got):\n%s", diff)
	}
	wantDown := map[schema.GroupVersionResource]informermanager.Spec{namespaceGVR: {}, cmGVR: ownedLabel}
	if diff := cmp.Diff(wantDown, b.down.specs); diff != "" {
		t.Errorf("added: downstream informers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[schema.GroupVersionResource]informermanager.Spec{namespaceGVR: {}, cmGVR: {Namespaces: "demo"}}, b.up.specs); diff != "" {
		t.Errorf("added: upstream informers (-want +got):\n%s", diff)
	}

	// Changed to Secrets: ConfigMaps stay watched for the syncer's objects while the edge holds some.
	b.down.caches[cmGVR] = fakeinformers.With(ownedCM("demo", "x"))
	b.configs = []*unstructured.Unstructured{syncerConfig("a", namespaceScope([]interface{}{"demo"}, "secrets"))}
	s = b.resolve(t)
	if diff := cmp.Diff([]string{"namespaces", "secrets"}, keys(s.resources)); diff != "" {
		t.Errorf("changed: resources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"configmaps"}, keys(s.leftovers)); diff != "" {
		t.Errorf("changed: leftovers (-want +got):\n%s", diff)
	}
	if b.down.specs[cmGVR] != ownedLabel || b.down.specs[secretGVR] != ownedLabel {
		t.Errorf("changed: downstream informers %v", b.down.specs)
	}
	if _, ok := b.up.specs[cmGVR]; ok {
		t.Error("changed: ConfigMaps still watched upstream")
	}

	// Deleted, and the edge's ConfigMap gone: nothing is watched but Namespaces (which hold secrets'
	// leftovers only if owned objects remain: none here).
	b.down.caches[cmGVR] = fakeinformers.With()
	b.down.caches[secretGVR] = fakeinformers.With()
	b.configs = nil
	s = b.resolve(t)
	if len(s.resources) != 0 || len(s.leftovers) != 0 {
		t.Errorf("deleted: resources %v leftovers %v", keys(s.resources), keys(s.leftovers))
	}
	if diff := cmp.Diff(map[schema.GroupVersionResource]informermanager.Spec{namespaceGVR: {}}, b.down.specs); diff != "" {
		t.Errorf("deleted: downstream informers (-want +got):\n%s", diff)
	}
}

// TestResolverCRDAppears: a resource named before its API exists is a problem of that config; once
// discovery serves it, it resolves and the problem goes.
func TestResolverCRDAppears(t *testing.T) {
	b := newBed()
	b.configs = []*unstructured.Unstructured{syncerConfig("w", clusterScope("example.com", "widgets")), syncerConfig("other", namespaceScope([]interface{}{"x"}, "configmaps"))}
	s := b.resolve(t)
	if len(s.problems) != 1 || s.problems[0].Kind != problem.UnknownResource || s.problems[0].Config != "w" || s.problems[0].Resource != widgetGVR.GroupResource() {
		t.Fatalf("before the CRD: problems %+v", s.problems)
	}
	b.upDisc.widgets, b.downDisc.widgets = true, true
	s = b.resolve(t)
	if len(s.problems) != 0 {
		t.Errorf("after the CRD: problems %v", problem.Strings(s.problems))
	}
	if r, ok := s.resources[widgetGVR.GroupResource()]; !ok || !r.ServedDownstream() {
		t.Errorf("widgets not resolved: %+v", r)
	}
	if _, ok := b.up.specs[widgetGVR]; !ok {
		t.Error("widgets not watched upstream")
	}
}

// TestResolverKeepsWhatWorkedWhenDiscoveryPartlyFails: a group whose discovery fails this time keeps
// its resource (informers are not stopped on a guess); the other groups resolve as usual.
func TestResolverKeepsWhatWorkedWhenDiscoveryPartlyFails(t *testing.T) {
	b := newBed()
	b.upDisc.widgets, b.downDisc.widgets = true, true
	b.configs = []*unstructured.Unstructured{syncerConfig("w", clusterScope("example.com", "widgets"))}
	b.resolve(t)
	b.upDisc.failing = []string{"example.com"}
	b.downDisc.failing = []string{"example.com"}
	s := b.resolve(t)
	if r, ok := s.resources[widgetGVR.GroupResource()]; !ok || !r.ServedDownstream() {
		t.Fatalf("widgets dropped on a failed discovery: %+v", r)
	}
	if len(s.problems) != 0 {
		t.Errorf("a kept resource reported as unknown: %v", problem.Strings(s.problems))
	}
	if b.up.specs[widgetGVR] != (informermanager.Spec{}) || b.down.specs[widgetGVR] != ownedLabel {
		t.Errorf("widget informers stopped: up %v down %v", b.up.specs, b.down.specs)
	}
	// Discovery that fails entirely is an error: nothing changes.
	b.r.upDisc = failingDiscovery{}
	if _, err := b.r.resolve(context.Background(), b.current); err == nil {
		t.Error("a failed discovery resolved")
	}
}

type failingDiscovery struct{}

func (failingDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return nil, nil, context.DeadlineExceeded
}

// TestResolverFindsLeftoversAtStart: objects the syncer owns in a resource no config selects (it
// left the selection while the syncer was down) are found by the scan at start and watched, so that
// they can be deleted; the scan runs once.
func TestResolverFindsLeftoversAtStart(t *testing.T) {
	owned := ownedCM("old", "gone")
	b := newBed(owned)
	b.configs = []*unstructured.Unstructured{syncerConfig("a", namespaceScope([]interface{}{"demo"}, "secrets"))}
	s := b.resolve(t)
	if diff := cmp.Diff([]string{"configmaps"}, keys(s.leftovers)); diff != "" {
		t.Fatalf("leftovers (-want +got):\n%s", diff)
	}
	if b.down.specs[cmGVR] != ownedLabel {
		t.Errorf("leftover not watched for owned objects: %v", b.down.specs)
	}
	lists := 0
	for _, a := range b.downClnt.Actions() {
		if a.GetVerb() == "list" {
			lists++
		}
	}
	b.down.caches[cmGVR] = fakeinformers.With(owned)
	b.resolve(t)
	again := 0
	for _, a := range b.downClnt.Actions() {
		if a.GetVerb() == "list" {
			again++
		}
	}
	if lists == 0 || again != lists {
		t.Errorf("scan LISTs: %d at start, %d after a second resolve (want the scan once)", lists, again)
	}
}

func edgeSyncConfig(name string, spec map[string]interface{}) *unstructured.Unstructured {
	u := syncerConfig(name, spec)
	u.SetKind("EdgeSyncConfig")
	return u
}

// TestResolverReadsEdgeSyncConfigs: EdgeSyncConfigs are read beside SyncerConfigs once upstream
// serves them, and not before they are listed (a resolve without them would take their objects for
// deselected); their problems name them.
func TestResolverReadsEdgeSyncConfigs(t *testing.T) {
	b := newBed()
	b.configs = []*unstructured.Unstructured{syncerConfig("a", namespaceScope([]interface{}{"ns1"}, "configmaps"))}
	if s := b.resolve(t); b.edgeServed || keys(s.resources)[0] != "configmaps" {
		t.Fatalf("not served: the resolver said served=%v; resources %v", b.edgeServed, keys(s.resources))
	}

	b.upDisc.edgeConfigs, b.edgeListed = true, false
	before := b.current
	if _, err := b.r.resolve(context.Background(), b.current); !errors.Is(err, errConfigsNotListed) || !b.edgeServed || b.current != before {
		t.Fatalf("served, not listed: err %v, served %v, snapshot replaced %v", err, b.edgeServed, b.current != before)
	}

	b.edgeListed = true
	b.configs = append(b.configs,
		edgeSyncConfig("a", map[string]interface{}{"downSyncedResources": []interface{}{
			map[string]interface{}{"kind": "ConfigMap", "version": "v1", "namespace": "ns2", "name": "x"},
			map[string]interface{}{"namespace": "ns2", "name": "nokind"}}}),
		edgeSyncConfig("broken", map[string]interface{}{"downSyncedResources": "not a list"}))
	s := b.resolve(t)
	var got []string
	for _, p := range s.problems {
		if p.ConfigKind == problem.EdgeSyncConfig {
			got = append(got, string(p.Kind)+" "+p.Config+" "+p.Field)
		}
		if p.Concerns(problem.SyncerConfig, "a") && p.Config == "a" {
			t.Errorf("a problem shows on SyncerConfig a: %v", p)
		}
	}
	if want := []string{"InvalidConfig a downSyncedResources[1]", "InvalidConfig broken "}; !cmp.Equal(sortStrings(got), want) {
		t.Errorf("EdgeSyncConfig problems %q, want %q (all: %v)", got, want, problem.Strings(s.problems))
	}
	cms := schema.GroupResource{Resource: "configmaps"}
	for _, o := range []selection.Object{{Resource: cms, Kind: "ConfigMap", Namespace: "ns1", Name: "any"}, {Resource: cms, Kind: "ConfigMap", Namespace: "ns2", Name: "x"}} {
		if !s.selection.Matches(o) {
			t.Errorf("%v is not selected (the SyncerConfig selects ns1, the EdgeSyncConfig ns2/x)", o)
		}
	}
	if keys(s.resources)[0] != "configmaps" {
		t.Errorf("resources %v", keys(s.resources))
	}
}

// TestResolverScopesUpstreamInformers: a downsynced resource's upstream informer watches the
// namespaces the configs name for it when every entry selecting it names namespaces; a "*"
// namespace, a cluster-scoped resource, the Namespaces themselves, upsync of the resource and
// upsync leftovers in it make it cluster-wide.
func TestResolverScopesUpstreamInformers(t *testing.T) {
	b := newBed()
	b.upDisc.widgets, b.downDisc.widgets = true, true
	upsync := map[string]interface{}{"apiGroup": "", "resources": []interface{}{"configmaps"}, "namespaces": []interface{}{"edge"}, "names": []interface{}{"*"}}
	withUpsync := namespaceScope([]interface{}{"demo"}, "configmaps")
	withUpsync["upsync"] = []interface{}{upsync}
	steps := []struct {
		name    string
		configs []*unstructured.Unstructured
		want    map[schema.GroupVersionResource]informermanager.Spec
	}{
		{"two configs, their namespaces merged", []*unstructured.Unstructured{
			syncerConfig("a", namespaceScope([]interface{}{"demo", "b"}, "configmaps")),
			syncerConfig("b", namespaceScope([]interface{}{"a"}, "configmaps", "secrets")),
			syncerConfig("w", clusterScope("example.com", "widgets")),
		}, map[schema.GroupVersionResource]informermanager.Spec{
			namespaceGVR: {}, widgetGVR: {}, cmGVR: {Namespaces: "a,b,demo"}, secretGVR: {Namespaces: "a"},
		}},
		{"a config naming every namespace", []*unstructured.Unstructured{
			syncerConfig("a", namespaceScope([]interface{}{"demo"}, "configmaps")),
			syncerConfig("b", namespaceScope([]interface{}{"*"}, "secrets")),
		}, map[schema.GroupVersionResource]informermanager.Spec{
			namespaceGVR: {}, cmGVR: {Namespaces: "demo"}, secretGVR: {},
		}},
		{"upsync of the resource", []*unstructured.Unstructured{syncerConfig("a", withUpsync)},
			map[schema.GroupVersionResource]informermanager.Spec{namespaceGVR: {}, cmGVR: {}}},
		// Upsync gone: the copies it made upstream are to be deleted wherever they are.
		{"upsync leftovers in the resource", []*unstructured.Unstructured{syncerConfig("a", namespaceScope([]interface{}{"demo"}, "configmaps"))},
			map[schema.GroupVersionResource]informermanager.Spec{namespaceGVR: {}, cmGVR: {}}},
	}
	for _, step := range steps {
		b.configs = step.configs
		b.resolve(t)
		if diff := cmp.Diff(step.want, b.up.specs); diff != "" {
			t.Errorf("%s: upstream informers (-want +got):\n%s", step.name, diff)
		}
	}
	// The upstream cache shows no copy of this syncer's any more: the informer is scoped again.
	b.up.caches[cmGVR] = fakeinformers.With()
	s := b.resolve(t)
	if len(s.upLeftovers) != 0 {
		t.Errorf("upsync leftovers %v", keys(s.upLeftovers))
	}
	if diff := cmp.Diff(map[schema.GroupVersionResource]informermanager.Spec{namespaceGVR: {}, cmGVR: {Namespaces: "demo"}}, b.up.specs); diff != "" {
		t.Errorf("upsync leftovers gone: upstream informers (-want +got):\n%s", diff)
	}
}
