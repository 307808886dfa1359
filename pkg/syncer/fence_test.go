package syncer

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"

	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/selection"
)

// TestFenceOut: the admission policies and their bindings, upstream or (through a conversion) at the
// edge, and the resources that act on the whole cluster unless allowed, leave the selection, with a
// problem each that a config names (not one "*" expands to); webhooks and everything else stay, for
// the edge's fence to judge.
func TestFenceOut(t *testing.T) {
	gvr := func(group, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}
	}
	served := func(up, down schema.GroupVersionResource) *selection.Resource {
		return &selection.Resource{Upstream: selection.APIResource{GVR: up}, Downstream: selection.APIResource{GVR: down}}
	}
	vap, vapb := gvr("admissionregistration.k8s.io", "validatingadmissionpolicies"), gvr("admissionregistration.k8s.io", "validatingadmissionpolicybindings")
	hooks, cms := gvr("admissionregistration.k8s.io", "validatingwebhookconfigurations"), gvr("", "configmaps")
	denatured := gvr("admissionregistration.k8s.io.denatured", "validatingadmissionpolicies")
	prio, sc, nodes := gvr("scheduling.k8s.io", "priorityclasses"), gvr("storage.k8s.io", "storageclasses"), gvr("", "nodes")
	resources := map[schema.GroupResource]*selection.Resource{
		vap.GroupResource():       served(vap, vap),
		vapb.GroupResource():      served(vapb, schema.GroupVersionResource{}), // not served at the edge yet
		hooks.GroupResource():     served(hooks, hooks),
		cms.GroupResource():       served(cms, cms),
		denatured.GroupResource(): served(denatured, vap),
		prio.GroupResource():      served(prio, prio),   // named, not allowed
		sc.GroupResource():        served(sc, sc),       // named, allowed
		nodes.GroupResource():     served(nodes, nodes), // by "*" in the core group
	}
	cluster := func(gvr schema.GroupVersionResource) edgev1.ClusterScopeDownsyncResource {
		return edgev1.ClusterScopeDownsyncResource{GroupResource: metav1.GroupResource{Group: gvr.Group, Resource: gvr.Resource}, APIVersion: "v1"}
	}
	sel, _ := selection.Merge([]*edgev1.SyncerConfig{{Spec: edgev1.SyncerConfigSpec{ClusterScope: []edgev1.ClusterScopeDownsyncResource{
		cluster(vap), cluster(vapb), cluster(hooks), cluster(denatured), cluster(prio), cluster(sc), cluster(gvr("", "*"))}}}})
	problems := fenceOut(sel, resources, []string{"storageclasses.storage.k8s.io"})
	if diff := keys(resources); !slices.Equal(diff, []string{"configmaps", "storageclasses.storage.k8s.io", "validatingwebhookconfigurations.admissionregistration.k8s.io"}) {
		t.Errorf("left selected: %v", diff)
	}
	var fenced []string
	for _, p := range problems {
		if p.Kind != problem.OutsideFence || !strings.Contains(p.Reason, "outside the edge owner's fence") || p.Config != "" {
			t.Errorf("problem %+v", p)
		}
		fenced = append(fenced, p.Resource.String())
	}
	want := []string{"validatingadmissionpolicies.admissionregistration.k8s.io", "validatingadmissionpolicies.admissionregistration.k8s.io.denatured",
		"validatingadmissionpolicybindings.admissionregistration.k8s.io", "priorityclasses.scheduling.k8s.io"}
	slices.Sort(want)
	if slices.Sort(fenced); !slices.Equal(fenced, want) {
		t.Errorf("problems for %v, want %v", fenced, want)
	}
}
