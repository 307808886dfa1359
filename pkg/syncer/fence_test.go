package syncer

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/selection"
)

// TestFenceOut: the admission policies and their bindings, upstream or (through a conversion) at the
// edge, leave the selection with a problem each; webhooks and everything else stay, for the edge's
// fence to judge.
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
	resources := map[schema.GroupResource]*selection.Resource{
		vap.GroupResource():       served(vap, vap),
		vapb.GroupResource():      served(vapb, schema.GroupVersionResource{}), // not served at the edge yet
		hooks.GroupResource():     served(hooks, hooks),
		cms.GroupResource():       served(cms, cms),
		denatured.GroupResource(): served(denatured, vap),
	}
	problems := fenceOut(resources)
	if diff := keys(resources); !slices.Equal(diff, []string{"configmaps", "validatingwebhookconfigurations.admissionregistration.k8s.io"}) {
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
		"validatingadmissionpolicybindings.admissionregistration.k8s.io"}
	if slices.Sort(fenced); !slices.Equal(fenced, want) {
		t.Errorf("problems for %v, want %v", fenced, want)
	}
}
