package selection

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/problem"
)

func cfg(name string, spec edgev1.SyncerConfigSpec) *edgev1.SyncerConfig {
	return &edgev1.SyncerConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func gr(group, resource string) metav1.GroupResource {
	return metav1.GroupResource{Group: group, Resource: resource}
}

var (
	configMaps  = schema.GroupResource{Resource: "configmaps"}
	deployments = schema.GroupResource{Group: "apps", Resource: "deployments"}
	crds        = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
)

func TestMatches(t *testing.T) {
	sel, problems := Merge([]*edgev1.SyncerConfig{
		cfg("a", edgev1.SyncerConfigSpec{
			NamespaceScope: edgev1.NamespaceScopeDownsyncs{
				Namespaces: []string{"app"},
				Resources:  []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1"}},
			},
			ClusterScope: []edgev1.ClusterScopeDownsyncResource{
				{GroupResource: gr("apiextensions.k8s.io", "customresourcedefinitions"), APIVersion: "v1", Objects: []string{"widgets.example.com"}},
				{GroupResource: gr("rbac.authorization.k8s.io", "clusterroles"), APIVersion: "v1"},                             // omitted: all
				{GroupResource: gr("rbac.authorization.k8s.io", "clusterrolebindings"), APIVersion: "v1", Objects: []string{}}, // none
				{GroupResource: gr("storage.k8s.io", "storageclasses"), APIVersion: "v1", Objects: []string{"*"}},
			},
		}),
		cfg("b", edgev1.SyncerConfigSpec{
			NamespacedObjects: []edgev1.NamespaceScopeDownsyncObjects{
				{GroupResource: gr("apps", "deployments"), APIVersion: "v1", ObjectsByNamespace: []edgev1.NamespaceAndNames{
					{Namespace: "web", Names: []string{"front"}},
					{Namespace: "all", Names: []string{"*"}},
					{Namespace: "none", Names: []string{}},
				}},
				{GroupResource: gr("policy.example.com", "*"), APIVersion: "v1", ObjectsByNamespace: []edgev1.NamespaceAndNames{
					{Namespace: "policy", Names: []string{"*"}},
				}},
			},
		}),
	})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	for _, tc := range []struct {
		gr        schema.GroupResource
		namespace string
		name      string
		want      bool
	}{
		{configMaps, "app", "anything", true},
		{configMaps, "other", "anything", false},
		{configMaps, "", "app", false},
		{NamespacesResource, "", "app", true},
		{NamespacesResource, "", "web", true},
		{NamespacesResource, "", "all", true},
		{NamespacesResource, "", "none", false}, // names: [] selects nothing, not even the namespace
		{NamespacesResource, "", "other", false},
		{deployments, "web", "front", true},
		{deployments, "web", "back", false},
		{deployments, "all", "x", true},
		{deployments, "none", "x", false},
		{deployments, "app", "x", false},
		{crds, "", "widgets.example.com", true},
		{crds, "", "gadgets.example.com", false},
		{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, "", "any", true},
		{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}, "", "any", false},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}, "", "any", true},
		{schema.GroupResource{Group: "policy.example.com", Resource: "policies"}, "policy", "p", true},
		{schema.GroupResource{Group: "policy.example.com", Resource: "policies"}, "web", "p", false},
	} {
		if got := sel.Matches(obj(tc.gr, tc.namespace, tc.name)); got != tc.want {
			t.Errorf("Matches(%s, %q, %q) = %v, want %v", tc.gr, tc.namespace, tc.name, got, tc.want)
		}
	}
	if !sel.Mentions(schema.GroupResource{Group: "policy.example.com", Resource: "anything"}, "") {
		t.Error("a resource of a group selected with \"*\" is not mentioned")
	}
	if sel.Mentions(schema.GroupResource{Group: "batch", Resource: "jobs"}, "") {
		t.Error("batch/jobs is mentioned")
	}
}

func TestNamespaceWildcard(t *testing.T) {
	sel, _ := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{
		Namespaces: []string{"*"},
		Resources:  []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1"}},
	}})})
	if !sel.Matches(obj(configMaps, "anywhere", "x")) || !sel.Matches(obj(NamespacesResource, "", "anywhere")) {
		t.Error("namespace \"*\" does not select every namespace and its contents")
	}
}

func TestMergeIsAUnionAndOrderFree(t *testing.T) {
	a := cfg("a", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"x"},
		Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1"}}}})
	b := cfg("b", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"y"},
		Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1"}}}})
	ab, _ := Merge([]*edgev1.SyncerConfig{a, b})
	ba, _ := Merge([]*edgev1.SyncerConfig{b, a})
	if !ab.Equal(ba) {
		t.Error("merge depends on the order of the configs")
	}
	if !ab.Matches(obj(configMaps, "x", "c")) || !ab.Matches(obj(configMaps, "y", "c")) {
		t.Error("merge is not a union")
	}
	only, _ := Merge([]*edgev1.SyncerConfig{a})
	if only.Equal(ab) {
		t.Error("different selections compare equal")
	}
	empty, _ := Merge(nil)
	if empty.Matches(obj(configMaps, "x", "c")) || len(empty.Requests()) != 0 {
		t.Error("an empty merge selects something")
	}
}

func TestMergeReportsEmptyResource(t *testing.T) {
	_, problems := Merge([]*edgev1.SyncerConfig{cfg("bad", edgev1.SyncerConfigSpec{
		ClusterScope: []edgev1.ClusterScopeDownsyncResource{{APIVersion: "v1"}},
	})})
	if len(problems) != 1 || !strings.Contains(problems[0].String(), "SyncerConfig bad: clusterScope[0]") || problems[0].Config != "bad" || problems[0].Kind != problem.InvalidConfig {
		t.Fatalf("problems = %v", problems)
	}
}

func index() *Index {
	all := []string{"list", "watch", "get", "create", "patch", "delete", "update"}
	return NewIndex(
		[]*metav1.APIGroup{
			{Name: "", PreferredVersion: metav1.GroupVersionForDiscovery{Version: "v1"}},
			{Name: "apps", PreferredVersion: metav1.GroupVersionForDiscovery{Version: "v1"}},
			{Name: "example.com", PreferredVersion: metav1.GroupVersionForDiscovery{Version: "v2"}},
		},
		[]*metav1.APIResourceList{
			{GroupVersion: "v1", APIResources: []metav1.APIResource{
				{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: all},
				{Name: "namespaces", Kind: "Namespace", Verbs: all},
				{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
			}},
			{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
				{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: all},
				{Name: "deployments/status", Kind: "Deployment", Namespaced: true, Verbs: all},
			}},
			{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: all}}},
			{GroupVersion: "example.com/v2", APIResources: []metav1.APIResource{
				{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: all},
				{Name: "gadgets", Kind: "Gadget", Verbs: all},
			}},
		})
}

func TestResolve(t *testing.T) {
	sel, _ := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"app"}, Resources: []edgev1.NamespaceScopeDownsyncResource{
			{GroupResource: gr("apps", "*"), APIVersion: "v1"},
			{GroupResource: gr("", "*"), APIVersion: "v1"},
			{GroupResource: gr("example.com", "widgets"), APIVersion: "v1"},
			{GroupResource: gr("example.com", "doesnotexist"), APIVersion: "v1"},
			{GroupResource: gr("", "namespaces"), APIVersion: "v1"}, // cluster-scoped, listed as namespaced
		}},
	})})
	up := index()
	down := NewIndex(nil, []*metav1.APIResourceList{{GroupVersion: "example.com/v2", APIResources: []metav1.APIResource{
		{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: []string{"list", "watch", "get", "create", "patch", "delete"}},
	}}, {GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"list", "watch", "get", "create", "patch", "delete"}},
		{Name: "namespaces", Kind: "Namespace", Verbs: []string{"list", "watch", "get", "create", "patch", "delete"}},
	}}})
	res, problems := Resolve(sel, up, down)
	got := map[string]string{}
	for g, r := range res {
		got[g.String()] = r.Upstream.GVR.Version + "/" + r.Downstream.GVR.Version
	}
	want := map[string]string{
		"deployments.apps":    "v1/",   // served upstream only: waits for the edge
		"configmaps":          "v1/v1", // "*" in core: not bindings (not syncable), not namespaces (cluster-scoped)
		"widgets.example.com": "v1/",   // the version asked for, not the preferred v2
		"namespaces":          "v1/v1", // implied by namespaceScope
	}
	if len(got) != len(want) {
		t.Errorf("resolved %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s resolved to %q, want %q", k, got[k], v)
		}
	}
	joined := strings.Join(problem.Strings(problems), "\n")
	for _, p := range []string{`"doesnotexist.example.com" is not served upstream`, `"namespaces" is cluster-scoped, but is listed with namespaced resources`,
		`"widgets.example.com" is served downstream, but not at version v1`} {
		if !strings.Contains(joined, p) {
			t.Errorf("problems lack %q:\n%s", p, joined)
		}
	}
}

func TestLookupFallsBackToPreferred(t *testing.T) {
	idx := index()
	r, ok := idx.Lookup(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "v9")
	if !ok || r.GVR.Version != "v2" {
		t.Fatalf("Lookup = %v %v, want the preferred v2", r.GVR, ok)
	}
	if _, ok := idx.Lookup(schema.GroupResource{Group: "apps", Resource: "deployments/status"}, ""); ok {
		t.Fatal("subresources are indexed")
	}
}

// TestProblemsNameEveryConfig: a resource two configs name is a problem of each of them, carried as a
// value (config, field, resource), not as text to match.
func TestProblemsNameEveryConfig(t *testing.T) {
	spec := edgev1.SyncerConfigSpec{ClusterScope: []edgev1.ClusterScopeDownsyncResource{
		{GroupResource: metav1.GroupResource{Group: "example.com", Resource: "nosuchthings"}, APIVersion: "v1"}}}
	sel, _ := Merge([]*edgev1.SyncerConfig{cfg("b", spec), cfg("a", spec)})
	_, problems := Resolve(sel, index(), index())
	got := map[string]problem.Problem{}
	for _, p := range problems {
		got[p.Config] = p
	}
	want := schema.GroupResource{Group: "example.com", Resource: "nosuchthings"}
	for _, name := range []string{"a", "b"} {
		p, ok := got[name]
		if !ok || p.Kind != problem.UnknownResource || p.Resource != want || p.Field != "clusterScope[0]" || !p.Concerns(problem.SyncerConfig, name) || p.Concerns(problem.SyncerConfig, "other") || p.Concerns(problem.EdgeSyncConfig, name) {
			t.Errorf("problem of config %s: %+v (all: %v)", name, p, problems)
		}
	}
}

// TestNamesExplicitly: only a name written in the config counts, not "*" nor a whole namespace.
func TestNamesExplicitly(t *testing.T) {
	cms := schema.GroupResource{Resource: "configmaps"}
	sel, _ := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"whole"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: metav1.GroupResource{Resource: "configmaps"}}}},
		NamespacedObjects: []edgev1.NamespaceScopeDownsyncObjects{{GroupResource: metav1.GroupResource{Resource: "configmaps"},
			ObjectsByNamespace: []edgev1.NamespaceAndNames{{Namespace: "named", Names: []string{"kube-root-ca.crt"}}, {Namespace: "star", Names: []string{"*"}}}}},
		Upsync: []edgev1.UpsyncSet{{APIGroup: "", Resources: []string{"configmaps"}, Namespaces: []string{"*"}, Names: []string{"*", "listed"}}},
	})})
	for _, tc := range []struct {
		ns      string
		matches bool
		named   bool
	}{{"whole", true, false}, {"named", true, true}, {"star", true, false}, {"other", false, false}} {
		if got := sel.Matches(obj(cms, tc.ns, "kube-root-ca.crt")); got != tc.matches {
			t.Errorf("Matches(%s) = %v", tc.ns, got)
		}
		if got := sel.NamesExplicitly(obj(cms, tc.ns, "kube-root-ca.crt")); got != tc.named {
			t.Errorf("NamesExplicitly(%s) = %v", tc.ns, got)
		}
	}
	if !sel.UpsyncMatches(obj(cms, "x", "kube-root-ca.crt")) || sel.UpsyncNamesExplicitly(obj(cms, "x", "kube-root-ca.crt")) || !sel.UpsyncNamesExplicitly(obj(cms, "x", "listed")) {
		t.Error("upsync: a wildcard counted as naming, or a listed name did not")
	}
}

func TestNotServedSaysWhy(t *testing.T) {
	idx := index()
	if msg := idx.notServed(schema.GroupResource{Group: "apps", Resource: "deployment"}); !strings.Contains(msg, `did you mean "deployments"`) {
		t.Errorf("singular: %s", msg)
	}
	if msg := idx.notServed(schema.GroupResource{Group: "apps", Resource: "Deployment"}); !strings.Contains(msg, `did you mean "deployments"`) {
		t.Errorf("kind: %s", msg)
	}
	if msg := idx.notServed(schema.GroupResource{Group: "example.com", Resource: "gadgets"}); !strings.Contains(msg, "no CRD or APIBinding provides it") || strings.Contains(msg, "did you mean") {
		t.Errorf("missing API: %s", msg)
	}
}

// TestQuietProblemsAreWarnings: an empty config, and a version the upstream does not serve, are
// warnings naming the config; listed namespaces are known with the entries naming them.
func TestQuietProblemsAreWarnings(t *testing.T) {
	sel, problems := Merge([]*edgev1.SyncerConfig{cfg("empty", edgev1.SyncerConfigSpec{}), cfg("old", edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"ghost"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: metav1.GroupResource{Group: "apps", Resource: "deployments"}, APIVersion: "v1beta1"}}},
	})})
	if len(problems) != 1 || problems[0].Kind != problem.EmptyConfig || problems[0].Config != "empty" || !problems[0].Warning() {
		t.Errorf("merge problems %+v", problems)
	}
	_, resolved := Resolve(sel, index(), index())
	found := false
	for _, p := range resolved {
		if p.Kind == problem.VersionFallback && p.Config == "old" && p.Warning() && strings.Contains(p.Reason, "not served upstream at version v1beta1; using v1") {
			found = true
		}
	}
	if !found {
		t.Errorf("no version fallback warning in %v", problem.Strings(resolved))
	}
	if o := sel.NamedNamespaces()["ghost"]; len(o) != 1 || o[0].Config != "old" {
		t.Errorf("named namespaces %v", sel.NamedNamespaces())
	}
}

// TestNamespacesOf: the namespaces a resource's objects may be selected in are those its entries
// name — by resource, "*" of its group, or kind — whatever their selectors; one "*" namespace (in
// namespaceScope or namespacedObjects) makes it every namespace.
func TestNamespacesOf(t *testing.T) {
	cms := edgev1.NamespaceScopeDownsyncResource{GroupResource: gr("", "configmaps"), APIVersion: "v1"}
	labelled := cms
	labelled.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
	secretsByKind := edgev1.NamespaceScopeDownsyncResource{GroupResource: gr("", ""), Kind: "Secret", APIVersion: "v1"}
	objects := func(resource string, byNS ...edgev1.NamespaceAndNames) edgev1.SyncerConfigSpec {
		return edgev1.SyncerConfigSpec{NamespacedObjects: []edgev1.NamespaceScopeDownsyncObjects{
			{GroupResource: gr("apps", resource), APIVersion: "v1", ObjectsByNamespace: byNS}}}
	}
	scope := func(namespaces []string, rs ...edgev1.NamespaceScopeDownsyncResource) edgev1.SyncerConfigSpec {
		return edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: namespaces, Resources: rs}}
	}
	secrets := schema.GroupResource{Resource: "secrets"}
	for _, tc := range []struct {
		name    string
		configs []*edgev1.SyncerConfig
		gr      schema.GroupResource
		kind    string
		want    []string
		all     bool
	}{
		{"one config", []*edgev1.SyncerConfig{cfg("a", scope([]string{"b", "a"}, cms))}, configMaps, "ConfigMap", []string{"a", "b"}, false},
		{"two configs merged", []*edgev1.SyncerConfig{cfg("a", scope([]string{"a"}, cms)), cfg("b", scope([]string{"b"}, labelled))},
			configMaps, "ConfigMap", []string{"a", "b"}, false},
		{"a selector does not widen", []*edgev1.SyncerConfig{cfg("a", scope([]string{"x"}, labelled))}, configMaps, "ConfigMap", []string{"x"}, false},
		{"wildcard namespace", []*edgev1.SyncerConfig{cfg("a", scope([]string{"a"}, cms)), cfg("b", scope([]string{"*"}, labelled))},
			configMaps, "ConfigMap", nil, true},
		{"another resource's namespaces do not count", []*edgev1.SyncerConfig{cfg("a", scope([]string{"a"}, cms)), cfg("b", scope([]string{"*"}, secretsByKind))},
			configMaps, "ConfigMap", []string{"a"}, false},
		{"by kind", []*edgev1.SyncerConfig{cfg("a", scope([]string{"s"}, secretsByKind)), cfg("b", scope([]string{"c"}, cms))}, secrets, "Secret", []string{"s"}, false},
		{"objects by namespace", []*edgev1.SyncerConfig{cfg("a", objects("deployments",
			edgev1.NamespaceAndNames{Namespace: "web", Names: []string{"front"}},
			edgev1.NamespaceAndNames{Namespace: "none", Names: []string{}}))}, deployments, "Deployment", []string{"web"}, false},
		{"objects in every namespace", []*edgev1.SyncerConfig{cfg("a", objects("deployments",
			edgev1.NamespaceAndNames{Namespace: "*", Names: []string{"front"}}))}, deployments, "Deployment", nil, true},
		{"wildcard resource of the group", []*edgev1.SyncerConfig{cfg("a", objects("*",
			edgev1.NamespaceAndNames{Namespace: "ops", Names: []string{"*"}})), cfg("b", objects("deployments",
			edgev1.NamespaceAndNames{Namespace: "web", Names: []string{"front"}}))}, deployments, "Deployment", []string{"ops", "web"}, false},
		{"not selected", []*edgev1.SyncerConfig{cfg("a", scope([]string{"a"}, cms))}, secrets, "Secret", []string{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, problems := Merge(tc.configs)
			if len(problems) != 0 {
				t.Fatalf("problems: %v", problems)
			}
			got, all := sel.NamespacesOf(tc.gr, tc.kind)
			if all != tc.all || strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("NamespacesOf(%s) = %q, all %v; want %q, all %v", tc.gr, got, all, tc.want, tc.all)
			}
		})
	}
	if got, all := (*Selection)(nil).NamespacesOf(configMaps, "ConfigMap"); got != nil || all {
		t.Errorf("nil selection: %q, %v", got, all)
	}
}

// TestMalformedVersion: an apiVersion that is not a version at all (a group/version pair) is an
// error of its entry, which then selects nothing; a version that is well formed but not served
// upstream stays a warning with a fallback, for an entry of resource "*" too.
func TestMalformedVersion(t *testing.T) {
	sel, problems := Merge([]*edgev1.SyncerConfig{cfg("bad", edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"app"}, Resources: []edgev1.NamespaceScopeDownsyncResource{
			{GroupResource: gr("apps", "deployments"), APIVersion: "apps/v1"},
			{GroupResource: gr("", "configmaps"), APIVersion: "v1"},
			{GroupResource: gr("example.com", "*"), APIVersion: "v9"},
		}},
	})})
	if len(problems) != 1 || problems[0].Kind != problem.InvalidConfig || problems[0].Field != "namespaceScope.resources[0]" || problems[0].Warning() ||
		!strings.Contains(problems[0].Reason, `apiVersion "apps/v1" is not a version`) || !strings.Contains(problems[0].Reason, `"v1" as the version`) {
		t.Fatalf("merge problems: %v", problem.Strings(problems))
	}
	deployment := obj(deployments, "app", "web")
	if sel.Matches(deployment) {
		t.Error("the malformed entry selects its objects")
	}
	if !sel.Matches(obj(configMaps, "app", "c")) {
		t.Error("the config's other entries stopped selecting")
	}
	resolved, problems := Resolve(sel, index(), index())
	if _, ok := resolved[deployments]; ok {
		t.Error("the malformed entry's resource was resolved")
	}
	found := false
	for _, p := range problems {
		if p.Kind == problem.VersionFallback && p.Warning() && strings.Contains(p.Reason, `group "example.com" is not served upstream at version v9; using v2`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no fallback warning for the wildcard entry in %v", problem.Strings(problems))
	}
}
