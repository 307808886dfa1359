package selection

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/problem"
)

func esc(name string, spec edgev1.EdgeSyncConfigSpec) *edgev1.EdgeSyncConfig {
	return &edgev1.EdgeSyncConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 2}, Spec: spec}
}

// TestFromEdgeSyncConfig: each EdgeSyncConfig entry becomes the SyncerConfig entry that selects the
// same objects, named by kind, and remembers which entry it comes from.
func TestFromEdgeSyncConfig(t *testing.T) {
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	conv := edgev1.Conversion{
		Upstream:   edgev1.EdgeSyncConfigResource{Kind: "CustomResourceDefinition", Group: "apiextensions.k8s.io", Name: "widgets.example.com.denatured"},
		Downstream: edgev1.EdgeSyncConfigResource{Kind: "CustomResourceDefinition", Group: "apiextensions.k8s.io", Name: "widgets.example.com"},
	}
	tests := []struct {
		name     string
		spec     edgev1.EdgeSyncConfigSpec
		want     edgev1.SyncerConfigSpec
		fields   map[string]string
		problems []string // kind and field of each problem
	}{{
		name: "cluster-scoped object",
		spec: edgev1.EdgeSyncConfigSpec{DownSyncedResources: []edgev1.EdgeSyncConfigResource{
			{Kind: "CustomResourceDefinition", Group: "apiextensions.k8s.io", Version: "v1", Name: "widgets.example.com"}}},
		want: edgev1.SyncerConfigSpec{ClusterScope: []edgev1.ClusterScopeDownsyncResource{
			{GroupResource: metav1.GroupResource{Group: "apiextensions.k8s.io"}, Kind: "CustomResourceDefinition", APIVersion: "v1", Objects: []string{"widgets.example.com"}}}},
		fields: map[string]string{"clusterScope[0]": "downSyncedResources[0]"},
	}, {
		name: "namespaced object, with a label selector",
		spec: edgev1.EdgeSyncConfigSpec{DownSyncedResources: []edgev1.EdgeSyncConfigResource{
			{Kind: "ConfigMap", Version: "v1", Namespace: "app", Name: "settings", LabelSelector: team}}},
		want: edgev1.SyncerConfigSpec{NamespacedObjects: []edgev1.NamespaceScopeDownsyncObjects{{Kind: "ConfigMap", APIVersion: "v1", LabelSelector: team,
			ObjectsByNamespace: []edgev1.NamespaceAndNames{{Namespace: "app", Names: []string{"settings"}}}}}},
		fields: map[string]string{"namespacedObjects[0]": "downSyncedResources[0]"},
	}, {
		name: `"*" as name and namespace; entries split between both lists keep their own index`,
		spec: edgev1.EdgeSyncConfigSpec{DownSyncedResources: []edgev1.EdgeSyncConfigResource{
			{Kind: "Deployment", Group: "apps", Namespace: "*", Name: "web"},
			{Kind: "ClusterRole", Group: "rbac.authorization.k8s.io", Name: "*"},
			{Kind: "Secret", Namespace: "app", Name: "*"}}},
		want: edgev1.SyncerConfigSpec{
			NamespacedObjects: []edgev1.NamespaceScopeDownsyncObjects{
				{GroupResource: metav1.GroupResource{Group: "apps"}, Kind: "Deployment", ObjectsByNamespace: []edgev1.NamespaceAndNames{{Namespace: "*", Names: []string{"web"}}}},
				{Kind: "Secret", ObjectsByNamespace: []edgev1.NamespaceAndNames{{Namespace: "app", Names: []string{"*"}}}}},
			ClusterScope: []edgev1.ClusterScopeDownsyncResource{
				{GroupResource: metav1.GroupResource{Group: "rbac.authorization.k8s.io"}, Kind: "ClusterRole", Objects: []string{"*"}}}},
		fields: map[string]string{"namespacedObjects[0]": "downSyncedResources[0]", "clusterScope[0]": "downSyncedResources[1]",
			"namespacedObjects[1]": "downSyncedResources[2]"},
	}, {
		name: "upsync, namespaced and cluster-scoped",
		spec: edgev1.EdgeSyncConfigSpec{UpSyncedResources: []edgev1.EdgeSyncConfigResource{
			{Kind: "PolicyReport", Group: "wgpolicyk8s.io", Version: "v1alpha2", Namespace: "*", Name: "*"},
			{Kind: "ClusterPolicyReport", Group: "wgpolicyk8s.io", Name: "r"}}},
		want: edgev1.SyncerConfigSpec{Upsync: []edgev1.UpsyncSet{
			{APIGroup: "wgpolicyk8s.io", Kinds: []string{"PolicyReport"}, Namespaces: []string{"*"}, Names: []string{"*"}},
			{APIGroup: "wgpolicyk8s.io", Kinds: []string{"ClusterPolicyReport"}, Names: []string{"r"}}}},
		fields: map[string]string{"upsync[0]": "upSyncedResources[0]", "upsync[1]": "upSyncedResources[1]"},
	}, {
		name: "conversions are carried",
		spec: edgev1.EdgeSyncConfigSpec{
			DownSyncedResources: []edgev1.EdgeSyncConfigResource{{Kind: "CustomResourceDefinition", Group: "apiextensions.k8s.io", Name: "widgets.example.com.denatured"}},
			Conversions:         []edgev1.Conversion{conv}},
		want: edgev1.SyncerConfigSpec{
			ClusterScope: []edgev1.ClusterScopeDownsyncResource{{GroupResource: metav1.GroupResource{Group: "apiextensions.k8s.io"}, Kind: "CustomResourceDefinition",
				Objects: []string{"widgets.example.com.denatured"}}},
			Conversions: []edgev1.Conversion{conv}},
		fields: map[string]string{"clusterScope[0]": "downSyncedResources[0]"},
	}, {
		name: "entries without a name select nothing and are reported",
		spec: edgev1.EdgeSyncConfigSpec{
			DownSyncedResources: []edgev1.EdgeSyncConfigResource{{Kind: "ConfigMap", Namespace: "app"}, {Kind: "ConfigMap", Namespace: "app", Name: "x"}},
			UpSyncedResources:   []edgev1.EdgeSyncConfigResource{{Kind: "ConfigMap", Namespace: "app"}}},
		want: edgev1.SyncerConfigSpec{NamespacedObjects: []edgev1.NamespaceScopeDownsyncObjects{
			{Kind: "ConfigMap", ObjectsByNamespace: []edgev1.NamespaceAndNames{{Namespace: "app", Names: []string{"x"}}}}}},
		fields:   map[string]string{"namespacedObjects[0]": "downSyncedResources[1]"},
		problems: []string{"EmptyEntry downSyncedResources[0]", "EmptyEntry upSyncedResources[0]"},
	}, {
		name:   "conversions only", // they apply to what other configs select: not empty
		spec:   edgev1.EdgeSyncConfigSpec{Conversions: []edgev1.Conversion{conv}},
		want:   edgev1.SyncerConfigSpec{Conversions: []edgev1.Conversion{conv}},
		fields: map[string]string{},
	}, {
		name:     "no entries",
		spec:     edgev1.EdgeSyncConfigSpec{},
		want:     edgev1.SyncerConfigSpec{},
		fields:   map[string]string{},
		problems: []string{"EmptyConfig "},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, fields, problems := FromEdgeSyncConfig(esc("legacy", tt.spec))
			if got.Name != "legacy" || got.Generation != 2 {
				t.Errorf("metadata not carried: %+v", got.ObjectMeta)
			}
			if d := cmp.Diff(tt.want, got.Spec); d != "" {
				t.Errorf("spec (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.fields, fields); d != "" {
				t.Errorf("fields (-want +got):\n%s", d)
			}
			var kinds []string
			for _, p := range problems {
				if p.ConfigKind != problem.EdgeSyncConfig || p.Config != "legacy" {
					t.Errorf("problem not attributed to EdgeSyncConfig legacy: %+v", p)
				}
				kinds = append(kinds, string(p.Kind)+" "+p.Field)
			}
			if d := cmp.Diff(tt.problems, kinds); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}

// TestMergeNamesTheEdgeSyncConfig: a problem with an EdgeSyncConfig entry names the EdgeSyncConfig
// and its own field, and is not shown on a SyncerConfig of the same name (nor the other way round).
func TestMergeNamesTheEdgeSyncConfig(t *testing.T) {
	sel, problems := Merge([]*edgev1.SyncerConfig{cfg("same", edgev1.SyncerConfigSpec{})},
		esc("same", edgev1.EdgeSyncConfigSpec{DownSyncedResources: []edgev1.EdgeSyncConfigResource{
			{Kind: "ConfigMap", Version: "v1", Namespace: "app", Name: "x"}, {Namespace: "app", Name: "nokind"}}}))
	if sel == nil {
		t.Fatal("no selection")
	}
	var fromESC, fromSC []problem.Problem
	for _, p := range problems {
		switch {
		case p.Concerns(problem.EdgeSyncConfig, "same") && p.Field == "downSyncedResources[1]":
			fromESC = append(fromESC, p)
			if p.Concerns(problem.SyncerConfig, "same") {
				t.Errorf("a problem of the EdgeSyncConfig shows on the SyncerConfig of the same name: %v", p)
			}
			if want := "EdgeSyncConfig same: downSyncedResources[1]: "; p.String()[:len(want)] != want {
				t.Errorf("problem reads %q, want it to start with %q", p.String(), want)
			}
		case p.Concerns(problem.SyncerConfig, "same") && p.Kind == problem.EmptyConfig:
			fromSC = append(fromSC, p)
			if p.Concerns(problem.EdgeSyncConfig, "same") {
				t.Errorf("a problem of the SyncerConfig shows on the EdgeSyncConfig of the same name: %v", p)
			}
		}
	}
	if len(fromESC) != 1 || fromESC[0].Kind != problem.InvalidConfig || len(fromSC) != 1 {
		t.Errorf("want one InvalidConfig at EdgeSyncConfig same downSyncedResources[1], one EmptyConfig of SyncerConfig same; got %v", problem.Strings(problems))
	}
}

// TestEdgeSyncConfigSelects: an EdgeSyncConfig alone selects its objects by kind, for downsync (with
// status return and deletion propagation, as release-0.14 did) and upsync, and resolves against
// discovery like a SyncerConfig.
func TestEdgeSyncConfigSelects(t *testing.T) {
	sel, problems := Merge(nil, esc("legacy", edgev1.EdgeSyncConfigSpec{
		DownSyncedResources: []edgev1.EdgeSyncConfigResource{
			{Kind: "ConfigMap", Version: "v1", Namespace: "app", Name: "settings"},
			{Kind: "Gadget", Group: "example.com", Name: "*"}},
		UpSyncedResources: []edgev1.EdgeSyncConfigResource{{Kind: "Deployment", Group: "apps", Namespace: "*", Name: "report"}}}))
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problem.Strings(problems))
	}
	gadgets := schema.GroupResource{Group: "example.com", Resource: "gadgets"}
	for _, o := range []Object{kinded(configMaps, "ConfigMap", "app", "settings"), kinded(gadgets, "Gadget", "", "any"),
		kinded(NamespacesResource, "Namespace", "", "app")} {
		if !sel.Matches(o) || !sel.PropagatesDeletion(o) || (o.Resource != NamespacesResource && !sel.ReturnsStatus(o)) {
			t.Errorf("%v: matches %v, propagates deletion %v, returns status %v", o, sel.Matches(o), sel.PropagatesDeletion(o), sel.ReturnsStatus(o))
		}
	}
	for _, o := range []Object{kinded(configMaps, "ConfigMap", "app", "other"), kinded(configMaps, "ConfigMap", "elsewhere", "settings")} {
		if sel.Matches(o) {
			t.Errorf("%v is selected", o)
		}
	}
	if !sel.UpsyncMatches(kinded(deployments, "Deployment", "any", "report")) || sel.UpsyncMatches(kinded(deployments, "Deployment", "any", "web")) {
		t.Errorf("upsync of Deployment report wrong")
	}
	resources, problems := Resolve(sel, index(), index())
	if _, ok := resources[gadgets]; !ok || resources[configMaps] == nil || len(problems) != 0 {
		t.Errorf("resolved %v, problems %v", resources, problem.Strings(problems))
	}
	if up, problems := ResolveUpsync(sel, index(), index()); up[deployments] == nil || len(problems) != 0 {
		t.Errorf("upsync resolved %v, problems %v", up, problem.Strings(problems))
	}
}

// TestConversionsOfBothKindsMerge: the conversions of an EdgeSyncConfig and a SyncerConfig are one
// set; a disagreement between them is reported on the config (and kind) each comes from.
func TestConversionsOfBothKindsMerge(t *testing.T) {
	crd := func(name string) edgev1.EdgeSyncConfigResource {
		return edgev1.EdgeSyncConfigResource{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: name}
	}
	reports := edgev1.Conversion{Upstream: crd("policyreports.wgpolicyk8s.io.denatured"), Downstream: crd("policyreports.wgpolicyk8s.io")}
	widgets := edgev1.Conversion{Upstream: edgev1.EdgeSyncConfigResource{Group: "denatured.example.com", Kind: "Widget", Name: "*"},
		Downstream: edgev1.EdgeSyncConfigResource{Group: "example.com", Kind: "Widget"}}
	sel, problems := Merge([]*edgev1.SyncerConfig{cfg("same", edgev1.SyncerConfigSpec{Conversions: []edgev1.Conversion{widgets}})},
		esc("same", edgev1.EdgeSyncConfigSpec{Conversions: []edgev1.Conversion{reports}}))
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problem.Strings(problems))
	}
	gvkCRD := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	if r := sel.Conversions().For(gvkCRD); r == nil || r.DownName("policyreports.wgpolicyk8s.io.denatured") != "policyreports.wgpolicyk8s.io" {
		t.Errorf("the EdgeSyncConfig's CRD conversion does not apply: %+v", r)
	}
	widget := schema.GroupVersionKind{Group: "denatured.example.com", Version: "v1", Kind: "Widget"}
	if got := sel.Conversions().Down(widget); got.Group != "example.com" {
		t.Errorf("the SyncerConfig's kind conversion (name \"*\") does not apply: %v", got)
	}

	other := edgev1.Conversion{Upstream: crd("policyreports.wgpolicyk8s.io.denatured"), Downstream: crd("policyreports.example.com")}
	_, problems = Merge([]*edgev1.SyncerConfig{cfg("same", edgev1.SyncerConfigSpec{Conversions: []edgev1.Conversion{other}})},
		esc("same", edgev1.EdgeSyncConfigSpec{Conversions: []edgev1.Conversion{reports}}))
	if len(problems) != 1 || problems[0].Kind != problem.InvalidConfig || problems[0].Field != "conversions[0]" ||
		!strings.Contains(problems[0].Reason, "disagrees") {
		t.Fatalf("want one disagreement, got %v", problem.Strings(problems))
	}
	kind := problems[0].ConfigKind
	if kind != problem.SyncerConfig && kind != problem.EdgeSyncConfig || problems[0].Config != "same" {
		t.Errorf("the disagreement names %q %q", kind, problems[0].Config)
	}
}
