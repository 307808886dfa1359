package syncer

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/selection"
)

// TestResolverHoldsOverfullResources: a resource the upstream informers find with more objects than
// the limit leaves the snapshot (its informer stops) with a problem, while its edge copies stay
// watched as leftovers (held, not deleted) and its upsynced copies are not left over; a count at a
// later resolve keeps it held while it is over the limit, and brings it back once it is not.
func TestResolverHoldsOverfullResources(t *testing.T) {
	b := newBed()
	b.r.maxObjects, b.r.overfull = 2, map[schema.GroupResource]informermanager.Overflow{}
	upsync := map[string]interface{}{"apiGroup": "", "resources": []interface{}{"secrets"}, "namespaces": []interface{}{"edge"}, "names": []interface{}{"*"}}
	spec := namespaceScope([]interface{}{"demo"}, "configmaps")
	spec["upsync"] = []interface{}{upsync}
	b.configs = []*unstructured.Unstructured{syncerConfig("a", spec)}
	s := b.resolve(t)
	if s.resources[cmGVR.GroupResource()] == nil || b.up.specs[cmGVR].MaxObjects != 2 || s.upsync[secretGVR.GroupResource()] == nil ||
		b.up.specs[namespaceGVR].MaxObjects != 0 {
		t.Fatalf("under the limit: resources %v, upsync %v, upstream informers %v", keys(s.resources), keys(s.upsync), b.up.specs)
	}
	for _, name := range []string{"a", "b", "c"} {
		cm := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}
		cm.SetNamespace("demo")
		cm.SetName(name)
		if _, err := b.upClient.Resource(cmGVR).Namespace("demo").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Found overfull by the informers: held without a count of its own.
	b.up.overfull = map[schema.GroupVersionResource]informermanager.Overflow{cmGVR: {Count: 7, Namespaces: "demo"}, secretGVR: {Count: 9}}
	s = b.resolve(t)
	held := func(gr schema.GroupResource, want string) {
		t.Helper()
		if s.resources[gr] != nil || s.upsync[gr] != nil {
			t.Errorf("%s: still selected", gr)
		}
		for _, p := range s.problems {
			if p.Kind == problem.TooManyObjects && p.Resource == gr && strings.Contains(p.Reason, want) {
				return
			}
		}
		t.Errorf("%s: no problem saying %q in %v", gr, want, problem.Strings(s.problems))
	}
	held(cmGVR.GroupResource(), "7 or more objects of configmaps upstream in the namespaces selected, over the 2 the syncer holds of one resource (--max-objects-per-resource)")
	held(secretGVR.GroupResource(), "9 or more objects of secrets upstream, over the 2")
	if _, ok := b.up.specs[cmGVR]; ok {
		t.Errorf("the informer of a held resource runs: %v", b.up.specs)
	}
	if s.leftovers[cmGVR.GroupResource()] != cmGVR || b.down.specs[cmGVR] != ownedLabel {
		t.Errorf("the edge copies of a held resource are not watched: leftovers %v, edge informers %v", s.leftovers, b.down.specs)
	}
	if r, _ := s.downsyncResource(cmGVR.GroupResource()); !r.Held || !r.Upstream.Empty() {
		t.Errorf("downsync sees a held resource as %+v; want a held leftover", r)
	}
	if len(s.upLeftovers) != 0 {
		t.Errorf("the upsynced copies of a held resource are left over: %v", s.upLeftovers)
	}

	// Counted again: three ConfigMaps are still over the limit; no Secret is not.
	b.up.overfull = nil
	s = b.resolve(t)
	held(cmGVR.GroupResource(), "3 or more objects of configmaps")
	if s.upsync[secretGVR.GroupResource()] == nil {
		t.Errorf("secrets, back under the limit, are not upsynced again")
	}
	if err := b.upClient.Resource(cmGVR).Namespace("demo").Delete(context.Background(), "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s = b.resolve(t)
	if s.resources[cmGVR.GroupResource()] == nil || b.up.specs[cmGVR].MaxObjects != 2 {
		t.Errorf("back under the limit: resources %v, upstream informers %v", keys(s.resources), b.up.specs)
	}
	for _, p := range s.problems {
		if p.Kind == problem.TooManyObjects {
			t.Errorf("problem left: %s", p)
		}
	}
}

// TestHoldOverfullRenamed: a resource renamed between the sides (a conversion) is held by its
// upstream name: out of the downsync and upsync selections (upsync keyed by its edge name), its
// edge copies held under their edge name.
func TestHoldOverfullRenamed(t *testing.T) {
	up := schema.GroupVersionResource{Group: "denatured.example.com", Version: "v1", Resource: "configmaps"}
	served := func(up, down schema.GroupVersionResource) *selection.Resource {
		return &selection.Resource{Upstream: selection.APIResource{GVR: up}, Downstream: selection.APIResource{GVR: down}}
	}
	r := &resolver{maxObjects: 2, overfull: map[schema.GroupResource]informermanager.Overflow{},
		up: &fakeInformers{overfull: map[schema.GroupVersionResource]informermanager.Overflow{up: {Count: 3}}}}
	next := &snapshot{
		resources: map[schema.GroupResource]*selection.Resource{up.GroupResource(): served(up, cmGVR), secretGVR.GroupResource(): served(secretGVR, secretGVR)},
		upsync:    map[schema.GroupResource]*selection.Resource{cmGVR.GroupResource(): served(up, cmGVR)},
		leftovers: map[schema.GroupResource]schema.GroupVersionResource{cmGVR.GroupResource(): cmGVR},
	}
	r.holdOverfull(context.Background(), next)
	if keys(next.resources)[0] != "secrets" || len(next.resources) != 1 || len(next.upsync) != 0 {
		t.Errorf("left selected: %v, upsync %v", keys(next.resources), keys(next.upsync))
	}
	if !next.heldDown[cmGVR.GroupResource()] || next.heldUpsync[cmGVR.GroupResource()] == nil {
		t.Errorf("held at the edge %v, upsync %v; want configmaps in both", next.heldDown, keys(next.heldUpsync))
	}
	if res, _ := next.downsyncResource(cmGVR.GroupResource()); !res.Held {
		t.Errorf("downsync sees the edge copies as %+v; want held", res)
	}
	if owning := next.owningUpstream(); owning[cmGVR.GroupResource()] == nil {
		t.Errorf("the held upsync resource does not own its upstream copies: %v", keys(owning))
	}
}
