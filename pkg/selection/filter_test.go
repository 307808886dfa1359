package selection

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/problem"
)

// labelled is an object with labels and annotations.
func labelled(gr schema.GroupResource, namespace, name string, l, a map[string]string) Object {
	return Object{Resource: gr, Namespace: namespace, Name: name, Labels: labels.Set(l), Annotations: labels.Set(a)}
}

func matchLabels(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

// TestSelectors: an entry selects an object only when its names and its label and annotation
// selectors all match; entries and configs stay a union.
func TestSelectors(t *testing.T) {
	cms := []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1",
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "back"}}}}}}
	sel, problems := Merge([]*edgev1.SyncerConfig{
		cfg("labels", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"}, Resources: cms}}),
		cfg("annotations", edgev1.SyncerConfigSpec{
			NamespacedObjects: []edgev1.NamespaceScopeDownsyncObjects{{GroupResource: gr("", "configmaps"), APIVersion: "v1",
				AnnotationSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"example.com/sync": "yes please"},
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "example.com/skip", Operator: metav1.LabelSelectorOpDoesNotExist}}},
				ObjectsByNamespace: []edgev1.NamespaceAndNames{{Namespace: "b", Names: []string{"*"}}}}},
			ClusterScope: []edgev1.ClusterScopeDownsyncResource{{GroupResource: gr("rbac.authorization.k8s.io", "clusterroles"), APIVersion: "v1",
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "edge", Operator: metav1.LabelSelectorOpExists}}}}},
		}),
		// A second entry for the same resource without selectors, in another namespace: a union.
		cfg("plain", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"c"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1"}}}}),
		// The same selector again, elsewhere: one rule for both.
		cfg("same", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"d"}, Resources: cms}}),
	})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	roles := schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}
	web := map[string]string{"app": "web", "tier": "front"}
	for _, tc := range []struct {
		what string
		o    Object
		want bool
	}{
		{"labels match", labelled(configMaps, "a", "x", web, nil), true},
		{"matchExpressions In fails", labelled(configMaps, "a", "x", map[string]string{"app": "web", "tier": "db"}, nil), false},
		{"matchLabels fails", labelled(configMaps, "a", "x", map[string]string{"app": "db", "tier": "front"}, nil), false},
		{"no labels", obj(configMaps, "a", "x"), false},
		{"labels right, namespace wrong", labelled(configMaps, "z", "x", web, nil), false},
		{"same selector, other config", labelled(configMaps, "d", "x", web, nil), true},
		{"same selector, other config, no labels", obj(configMaps, "d", "x"), false},
		{"annotation with free text value", labelled(configMaps, "b", "x", nil, map[string]string{"example.com/sync": "yes please"}), true},
		{"annotation DoesNotExist fails", labelled(configMaps, "b", "x", nil, map[string]string{"example.com/sync": "yes please", "example.com/skip": ""}), false},
		{"labels are not annotations", labelled(configMaps, "b", "x", map[string]string{"example.com/sync": "yes please"}, nil), false},
		{"unfiltered entry", obj(configMaps, "c", "x"), true},
		{"Exists", labelled(roles, "", "r", map[string]string{"edge": ""}, nil), true},
		{"Exists fails", obj(roles, "", "r"), false},
		{"namespaces are implied without selectors", obj(NamespacesResource, "", "a"), true},
	} {
		if got := sel.Matches(tc.o); got != tc.want {
			t.Errorf("%s: Matches(%+v) = %v, want %v", tc.what, tc.o, got, tc.want)
		}
	}
	if n := len(sel.rules.byResource[configMaps]); n != 3 {
		t.Errorf("%d configmaps rules, want 3 (labels, annotations, none): equal selectors share one", n)
	}

	// A changed selector is a changed selection; order does not matter.
	reordered, _ := Merge([]*edgev1.SyncerConfig{cfg("x", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"}, Resources: cms}})})
	other := append([]edgev1.NamespaceScopeDownsyncResource(nil), cms...)
	other[0].LabelSelector = matchLabels("app", "db")
	changed, _ := Merge([]*edgev1.SyncerConfig{cfg("x", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"}, Resources: other}})})
	if reordered.Equal(changed) {
		t.Error("selections with different selectors compare equal")
	}
}

// TestSelectorsNarrowStatusAndDeletion: the status-return and propagate-deletion subsets follow the
// selectors of their configs.
func TestSelectorsNarrowStatusAndDeletion(t *testing.T) {
	off := false
	all := []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1"}}
	labelled2 := []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1", LabelSelector: matchLabels("loud", "yes")}}
	sel, problems := Merge([]*edgev1.SyncerConfig{
		cfg("quiet-keep", edgev1.SyncerConfigSpec{ReturnStatus: &off, PropagateDeletion: &off,
			NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"}, Resources: all}}),
		cfg("loud", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"}, Resources: labelled2}}),
	})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	plain, loud := obj(configMaps, "a", "x"), labelled(configMaps, "a", "x", map[string]string{"loud": "yes"}, nil)
	if !sel.Matches(plain) || !sel.Matches(loud) {
		t.Fatal("both are selected")
	}
	if sel.ReturnsStatus(plain) || !sel.ReturnsStatus(loud) {
		t.Error("status return ignores the selector of the config that returns status")
	}
	if sel.PropagatesDeletion(plain) || !sel.PropagatesDeletion(loud) {
		t.Error("deletion propagation ignores the selector of the config that propagates deletion")
	}
}

// TestInvalidSelectors: a selector that cannot be parsed is an InvalidConfig problem of its entry,
// never a panic; the entry selects nothing and the rest still counts.
func TestInvalidSelectors(t *testing.T) {
	bad := []*metav1.LabelSelector{
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Resembles", Values: []string{"x"}}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}}}, // In needs values
		{MatchLabels: map[string]string{"bad key!": "x"}},
		{MatchLabels: map[string]string{"app": "not a label value"}},
	}
	for i, ls := range bad {
		sel, problems := Merge([]*edgev1.SyncerConfig{cfg("bad", edgev1.SyncerConfigSpec{
			NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"}, Resources: []edgev1.NamespaceScopeDownsyncResource{
				{GroupResource: gr("", "configmaps"), APIVersion: "v1", LabelSelector: ls},
				{GroupResource: gr("", "secrets"), APIVersion: "v1"},
			}},
			Upsync: []edgev1.UpsyncSet{{APIGroup: "", Resources: []string{"configmaps"}, Namespaces: []string{"*"}, Names: []string{"*"}, LabelSelector: ls}},
		})})
		if len(problems) != 2 || problems[0].Kind != problem.InvalidConfig || problems[0].Field != "namespaceScope.resources[0]" ||
			!strings.Contains(problems[0].Reason, "labelSelector") || problems[1].Field != "upsync[0]" {
			t.Errorf("selector %d: problems %v", i, problems)
		}
		if sel.Matches(labelled(configMaps, "a", "x", map[string]string{"app": "x"}, nil)) || !sel.Matches(obj(schema.GroupResource{Resource: "secrets"}, "a", "x")) {
			t.Errorf("selector %d: the invalid entry selects, or the valid one does not", i)
		}
		if sel.UpsyncMatches(obj(configMaps, "a", "x")) {
			t.Errorf("selector %d: the invalid upsync entry selects", i)
		}
		if len(sel.Requests()) != 2 { // secrets and the namespaces
			t.Errorf("selector %d: requests %v", i, sel.Requests())
		}
	}
	_, problems := Merge([]*edgev1.SyncerConfig{cfg("bad", edgev1.SyncerConfigSpec{ClusterScope: []edgev1.ClusterScopeDownsyncResource{
		{GroupResource: gr("", "namespaces"), AnnotationSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"": "x"}}}}})})
	if len(problems) != 1 || !strings.Contains(problems[0].Reason, "annotationSelector") {
		t.Errorf("bad annotation key: %v", problems)
	}
}

// TestUpsyncSelectors: upsync entries select by labels and annotations too.
func TestUpsyncSelectors(t *testing.T) {
	sel, problems := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{Upsync: []edgev1.UpsyncSet{
		{APIGroup: "", Resources: []string{"configmaps"}, Namespaces: []string{"*"}, Names: []string{"*", "named"}, LabelSelector: matchLabels("up", "yes")},
		{APIGroup: "", Kinds: []string{"Secret"}, Namespaces: []string{"*"}, Names: []string{"*"}, AnnotationSelector: matchLabels("up", "yes")},
	}})})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	secrets := schema.GroupResource{Resource: "secrets"}
	up := map[string]string{"up": "yes"}
	for _, tc := range []struct {
		o    Object
		want bool
	}{
		{labelled(configMaps, "x", "c", up, nil), true},
		{labelled(configMaps, "x", "c", nil, up), false},
		{obj(configMaps, "x", "named"), false}, // named, but the selector fails
		{Object{Resource: secrets, Kind: "Secret", Namespace: "x", Name: "s", Annotations: labels.Set(up)}, true},
		{Object{Resource: secrets, Kind: "Secret", Namespace: "x", Name: "s", Labels: labels.Set(up)}, false},
	} {
		if got := sel.UpsyncMatches(tc.o); got != tc.want {
			t.Errorf("UpsyncMatches(%+v) = %v, want %v", tc.o, got, tc.want)
		}
	}
	if sel.UpsyncNamesExplicitly(obj(configMaps, "x", "named")) || !sel.UpsyncNamesExplicitly(labelled(configMaps, "x", "named", up, nil)) {
		t.Error("UpsyncNamesExplicitly ignores the selector")
	}
}

// TestObjectOfReadsInPlace: ObjectOf sees an unstructured object's labels and annotations.
func TestObjectOfReadsInPlace(t *testing.T) {
	o := kinded(configMaps, "ConfigMap", "a", "x")
	if o.Labels.Has("app") || o.Kind != "ConfigMap" || o.Namespace != "a" || o.Name != "x" {
		t.Fatalf("%+v", o)
	}
	sel, _ := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"},
		Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), LabelSelector: matchLabels("app", "web"),
			AnnotationSelector: matchLabels("note", "free text")}}}})})
	u := unstructuredWith(map[string]string{"app": "web"}, map[string]string{"note": "free text"})
	if !sel.Matches(ObjectOf(configMaps, u)) {
		t.Error("labels and annotations of an unstructured object not seen")
	}
	u = unstructuredWith(map[string]string{"app": "db"}, map[string]string{"note": "free text"})
	if sel.Matches(ObjectOf(configMaps, u)) {
		t.Error("a label mismatch selects")
	}
}

// BenchmarkMatchesWithSelectors measures what an event costs the selection: ObjectOf on a cached
// object and Matches against an entry with label and annotation selectors. The selectors are built
// once, at Merge; matching copies nothing.
func BenchmarkMatchesWithSelectors(b *testing.B) {
	sel, _ := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"},
		Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"),
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "back"}}}},
			AnnotationSelector: matchLabels("note", "free text")}}}})})
	u := unstructuredWith(map[string]string{"app": "web", "tier": "front", "other": "x"}, map[string]string{"note": "free text"})
	b.ReportAllocs()
	for b.Loop() {
		if !sel.Matches(ObjectOf(configMaps, u)) {
			b.Fatal("not selected")
		}
	}
}
