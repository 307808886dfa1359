package selection

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/problem"
)

// obj is an object of no particular kind, without labels or annotations.
func obj(gr schema.GroupResource, namespace, name string) Object {
	return Object{Resource: gr, Namespace: namespace, Name: name}
}

// kinded is an object of a kind, read as the engine reads it from a cache.
func kinded(gr schema.GroupResource, kind, namespace, name string) Object {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"kind": kind}}
	u.SetNamespace(namespace)
	u.SetName(name)
	return ObjectOf(gr, u)
}

// TestKindEntries: an entry may name its resource by kind instead of resource, or by both; objects
// are matched by their kind with no discovery, and resolution finds the resource.
func TestKindEntries(t *testing.T) {
	sel, problems := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"app"}, Resources: []edgev1.NamespaceScopeDownsyncResource{
			{GroupResource: gr("", ""), Kind: "ConfigMap", APIVersion: "v1"},
		}},
		NamespacedObjects: []edgev1.NamespaceScopeDownsyncObjects{
			{GroupResource: gr("apps", "deployments"), Kind: "Deployment", ObjectsByNamespace: []edgev1.NamespaceAndNames{{Namespace: "web", Names: []string{"front"}}}},
			{GroupResource: gr("example.com", ""), Kind: "Widget", ObjectsByNamespace: []edgev1.NamespaceAndNames{{Namespace: "w", Names: []string{"*"}}}},
		},
		ClusterScope: []edgev1.ClusterScopeDownsyncResource{{GroupResource: gr("example.com", ""), Kind: "Gadget", Objects: []string{"g1"}}},
	})})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	gadgets := schema.GroupResource{Group: "example.com", Resource: "gadgets"}
	for _, tc := range []struct {
		o    Object
		want bool
	}{
		{kinded(configMaps, "ConfigMap", "app", "x"), true},
		{kinded(configMaps, "ConfigMap", "other", "x"), false},
		{obj(configMaps, "app", "x"), false}, // a kind entry needs the object's kind
		{kinded(schema.GroupResource{Resource: "secrets"}, "Secret", "app", "x"), false},
		{kinded(deployments, "Deployment", "web", "front"), true},
		{kinded(deployments, "ReplicaSet", "web", "front"), false}, // resource and kind: both must fit
		{kinded(widgets, "Widget", "w", "any"), true},
		{kinded(schema.GroupResource{Group: "other.com", Resource: "widgets"}, "Widget", "w", "any"), false}, // group counts
		{kinded(gadgets, "Gadget", "", "g1"), true},
		{kinded(gadgets, "Gadget", "", "g2"), false},
		{kinded(NamespacesResource, "Namespace", "", "app"), true}, // the namespaces of kind entries
	} {
		if got := sel.Matches(tc.o); got != tc.want {
			t.Errorf("Matches(%+v) = %v, want %v", tc.o, got, tc.want)
		}
	}
	if !sel.NamesExplicitly(kinded(gadgets, "Gadget", "", "g1")) || sel.NamesExplicitly(kinded(widgets, "Widget", "w", "any")) {
		t.Error("NamesExplicitly wrong for kind entries")
	}
	if !sel.Mentions(widgets, "Widget") || sel.Mentions(widgets, "") || sel.Mentions(schema.GroupResource{Resource: "secrets"}, "Secret") {
		t.Error("Mentions wrong for kind entries")
	}

	res, problems := Resolve(sel, index(), index())
	if len(problems) != 0 {
		t.Errorf("problems: %v", problem.Strings(problems))
	}
	for _, want := range []schema.GroupResource{configMaps, deployments, widgets, gadgets, NamespacesResource} {
		if _, ok := res[want]; !ok {
			t.Errorf("%s not resolved (got %v)", want, res)
		}
	}
}

// TestKindProblems: an unknown kind is an unknown resource with a hint; a kind that disagrees with
// the resource beside it is a problem and resolves nothing; an entry with neither is invalid.
func TestKindProblems(t *testing.T) {
	sel, problems := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{
		ClusterScope: []edgev1.ClusterScopeDownsyncResource{
			{GroupResource: gr("example.com", ""), Kind: "gadgets"},
			{GroupResource: gr("example.com", ""), Kind: "Nothing"},
			{GroupResource: gr("example.com", "gadgets"), Kind: "Widget"},
			{GroupResource: gr("example.com", "")},
		},
	})})
	if len(problems) != 1 || problems[0].Kind != problem.InvalidConfig || problems[0].Field != "clusterScope[3]" {
		t.Errorf("merge problems: %v", problems)
	}
	res, problems := Resolve(sel, index(), index())
	if len(res) != 0 {
		t.Errorf("resolved %v", res)
	}
	byField := map[string]problem.Problem{}
	for _, p := range problems {
		byField[p.Field] = p
	}
	if p := byField["clusterScope[0]"]; p.Kind != problem.UnknownResource || !strings.Contains(p.Reason, `did you mean kind "Gadget"`) {
		t.Errorf("plural as kind: %+v", p)
	}
	if p := byField["clusterScope[1]"]; p.Kind != problem.UnknownResource || !strings.Contains(p.Reason, `kind "Nothing" is not served upstream in group "example.com"`) {
		t.Errorf("unknown kind: %+v", p)
	}
	if p := byField["clusterScope[2]"]; p.Kind != problem.InvalidConfig || !strings.Contains(p.Reason, `disagree`) {
		t.Errorf("disagreeing kind: %+v", p)
	}
	if sel.Matches(kinded(schema.GroupResource{Group: "example.com", Resource: "gadgets"}, "Gadget", "", "g")) {
		t.Error("an entry whose kind disagrees with its resource selects")
	}
}

// TestKindWildcards: kind "*" is resource "*"; resource "*" with a kind is that kind.
func TestKindWildcards(t *testing.T) {
	sel, problems := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"app"}, Resources: []edgev1.NamespaceScopeDownsyncResource{
			{GroupResource: gr("apps", ""), Kind: "*"},
			{GroupResource: gr("example.com", "*"), Kind: "Widget"},
		}},
	})})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	if !sel.Matches(obj(deployments, "app", "d")) || !sel.Matches(kinded(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "Widget", "app", "w")) ||
		sel.Matches(kinded(schema.GroupResource{Group: "example.com", Resource: "things"}, "Thing", "app", "w")) {
		t.Error("wildcards wrong")
	}
}

// TestUpsyncKinds: upsync entries may list kinds instead of resources.
func TestUpsyncKinds(t *testing.T) {
	sel, _ := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{Upsync: []edgev1.UpsyncSet{
		{APIGroup: "apps", Kinds: []string{"Deployment"}, Namespaces: []string{"x"}, Names: []string{"*"}},
		{APIGroup: "example.com", Kinds: []string{"Nothing", "widgets"}, Namespaces: []string{"x"}, Names: []string{"*"}},
	}})})
	if !sel.UpsyncMatches(kinded(deployments, "Deployment", "x", "d")) || sel.UpsyncMatches(kinded(deployments, "Deployment", "y", "d")) ||
		sel.UpsyncMatches(obj(deployments, "x", "d")) {
		t.Error("UpsyncMatches wrong for kinds")
	}
	if !sel.UpsyncMentions(deployments, "Deployment") || sel.UpsyncMentions(deployments, "") {
		t.Error("UpsyncMentions wrong for kinds")
	}
	res, problems := ResolveUpsync(sel, index(), index())
	if _, ok := res[deployments]; !ok || len(res) != 1 {
		t.Errorf("resolved %v", res)
	}
	all := strings.Join(problem.Strings(problems), "\n")
	for _, want := range []string{`kind "Nothing" is not served at the edge in group "example.com"`, `kind "widgets" is not served at the edge in group "example.com"; did you mean kind "Widget"`} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
}

func unstructuredWith(l, a map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"kind": "ConfigMap"}}
	u.SetNamespace("a")
	u.SetName("x")
	u.SetLabels(l)
	u.SetAnnotations(a)
	return u
}
