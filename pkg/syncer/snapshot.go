package syncer

import (
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/downsync"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/selection"
	"github.com/kubestellar/syncer/pkg/status"
	"github.com/kubestellar/syncer/pkg/upsync"
	"github.com/kubestellar/syncer/pkg/warnings"
)

// snapshot is what the engine currently knows: the merged selection and the resources it resolved
// to. It is immutable; the resolver publishes a new one after each resolution and the controllers
// read whichever is current through the views below.
type snapshot struct {
	selection *selection.Selection
	// resources are the selected resources served upstream.
	resources map[schema.GroupResource]*selection.Resource
	// leftovers are downstream resources watched only for owned objects that are no longer selected
	// (to delete them) or whose API is missing upstream (to hold them).
	leftovers map[schema.GroupResource]schema.GroupVersionResource
	// upsync are the resources selected for upsync, served on both sides at one version.
	upsync map[schema.GroupResource]*selection.Resource
	// upLeftovers are upstream resources watched only for this syncer's upsynced copies whose
	// resource left the upsync selection (to delete them).
	upLeftovers map[schema.GroupResource]schema.GroupVersionResource
	problems    []problem.Problem
	// bindings is kcp's APIBinding resource when the upstream serves it (a kcp workspace).
	bindings schema.GroupVersionResource
	// renamedDown finds a selected resource by its downstream GroupResource where a conversion makes
	// it differ from the upstream one; renamedUp finds an upsynced resource by its upstream one.
	renamedDown, renamedUp map[schema.GroupResource]schema.GroupResource
	// byEdgeKind finds a selected resource served at the edge by the group and kind of its edge objects.
	byEdgeKind map[schema.GroupKind]schema.GroupResource
	// heldDown are the edge GroupResources of selected resources held for having too many objects
	// upstream (holdOverfull): their edge copies, leftovers, are kept. heldUpsync are the upsync
	// resources held so, keyed as upsync: their upstream copies are not left over.
	heldDown   map[schema.GroupResource]bool
	heldUpsync map[schema.GroupResource]*selection.Resource
}

// owningUpstream are the upsync resources whose copies upstream are not left over: those upsynced,
// and those held.
func (s *snapshot) owningUpstream() map[schema.GroupResource]*selection.Resource {
	out := make(map[schema.GroupResource]*selection.Resource, len(s.upsync)+len(s.heldUpsync))
	maps.Copy(out, s.upsync)
	maps.Copy(out, s.heldUpsync)
	return out
}

// indexRenamed builds the snapshot's indexes of resources whose GroupResource differs between the
// sides (conversions).
func (s *snapshot) indexRenamed() {
	s.renamedDown, s.renamedUp = map[schema.GroupResource]schema.GroupResource{}, map[schema.GroupResource]schema.GroupResource{}
	s.byEdgeKind = map[schema.GroupKind]schema.GroupResource{}
	for gr, r := range s.resources {
		if !r.ServedDownstream() {
			continue
		}
		if d := r.Downstream.GVR.GroupResource(); d != gr {
			s.renamedDown[d] = gr
		}
		s.byEdgeKind[r.Downstream.GVK().GroupKind()] = gr
	}
	for gr, r := range s.upsync {
		if u := r.Upstream.GVR.GroupResource(); u != gr {
			s.renamedUp[u] = gr
		}
	}
}

func emptySnapshot() *snapshot {
	return &snapshot{
		resources: map[schema.GroupResource]*selection.Resource{}, leftovers: map[schema.GroupResource]schema.GroupVersionResource{},
		upsync: map[schema.GroupResource]*selection.Resource{}, upLeftovers: map[schema.GroupResource]schema.GroupVersionResource{},
	}
}

// selected finds a selected resource by its upstream GroupResource or, when a conversion renames
// it, its downstream one; it returns the upstream GroupResource (the resources' key) with it.
func (s *snapshot) selected(gr schema.GroupResource) (schema.GroupResource, *selection.Resource, bool) {
	if r, ok := s.resources[gr]; ok {
		return gr, r, true
	}
	if up, ok := s.renamedDown[gr]; ok {
		return up, s.resources[up], true
	}
	return gr, nil, false
}

// downsyncResource tells how downsync sees a resource, named by its upstream GroupResource or, when
// a conversion renames it, its downstream one: selected (read upstream), or a leftover.
func (s *snapshot) downsyncResource(gr schema.GroupResource) (downsync.Resource, bool) {
	if gr, r, ok := s.selected(gr); ok {
		down := r.Downstream.GVR
		if down.Empty() {
			down = s.leftovers[gr] // still watched downstream while the edge's discovery of it fails
		}
		return downsync.Resource{Upstream: r.Upstream.GVR, Downstream: down, Namespaced: r.Upstream.Namespaced, UpstreamHasStatus: r.Upstream.HasStatus,
			Rename: r.Rename}, true
	}
	if gvr, ok := s.leftovers[gr]; ok {
		return downsync.Resource{Downstream: gvr, Held: s.heldDown[gr]}, true
	}
	return downsync.Resource{}, false
}

// The views show each controller the current snapshot through its own small interface.
type (
	downsyncView struct{ current func() *snapshot }
	statusView   struct{ current func() *snapshot }
	upsyncView   struct{ current func() *snapshot }
	warningsView struct{ current func() *snapshot }
)

func (v downsyncView) Resource(gr schema.GroupResource) (downsync.Resource, bool) {
	return v.current().downsyncResource(gr)
}

func (v downsyncView) Matches(o selection.Object) bool {
	return v.current().selection.Matches(o)
}

func (v downsyncView) NamesExplicitly(o selection.Object) bool {
	return v.current().selection.NamesExplicitly(o)
}

func (v downsyncView) PolicyOf(o selection.Object, now time.Time) selection.Policy {
	return v.current().selection.PolicyOf(o, now)
}

func (v downsyncView) Mentions(gr schema.GroupResource, kind string) bool {
	return v.current().selection.Mentions(gr, kind)
}

func (v downsyncView) Resources() []downsync.Resource {
	var out []downsync.Resource
	for _, r := range v.current().resources {
		out = append(out, downsync.Resource{Upstream: r.Upstream.GVR, Downstream: r.Downstream.GVR, Namespaced: r.Upstream.Namespaced,
			UpstreamHasStatus: r.Upstream.HasStatus, Rename: r.Rename})
	}
	return out
}

func (v statusView) Resource(gr schema.GroupResource) (status.Resource, bool) {
	_, r, ok := v.current().selected(gr)
	if !ok || !r.ServedDownstream() {
		return status.Resource{}, false
	}
	return status.Resource{Upstream: r.Upstream.GVR, Downstream: r.Downstream.GVR, UpstreamHasStatus: r.Upstream.HasStatus, Rename: r.Rename}, true
}

func (v statusView) StatusProjection(o selection.Object) mapping.StatusProjection {
	return v.current().selection.StatusProjection(o)
}

func (v warningsView) ByKind(gk schema.GroupKind) (warnings.Resource, bool) {
	st := v.current()
	r, ok := st.resources[st.byEdgeKind[gk]]
	if !ok {
		return warnings.Resource{}, false
	}
	return warnings.Resource{Upstream: r.Upstream.GVR, Downstream: r.Downstream.GVR, Rename: r.Rename}, true
}

func (v upsyncView) Resource(gr schema.GroupResource) (upsync.Resource, bool) {
	st := v.current()
	r, ok := st.upsync[gr]
	if !ok {
		r, ok = st.upsync[st.renamedUp[gr]]
	}
	if ok {
		return upsync.Resource{Upstream: r.Upstream.GVR, Downstream: r.Downstream.GVR, Namespaced: r.Downstream.Namespaced,
			UpstreamHasStatus: r.Upstream.HasStatus, Selected: true, Rename: r.Rename}, true
	}
	if gvr, ok := st.upLeftovers[gr]; ok {
		return upsync.Resource{Upstream: gvr, Downstream: gvr}, true
	}
	return upsync.Resource{}, false
}

func (v upsyncView) Resources() []upsync.Resource {
	var out []upsync.Resource
	for gr := range v.current().upsync {
		if r, ok := v.Resource(gr); ok {
			out = append(out, r)
		}
	}
	return out
}

func (v upsyncView) UpsyncMatches(o selection.Object) bool {
	return v.current().selection.UpsyncMatches(o)
}

func (v upsyncView) UpsyncNamesExplicitly(o selection.Object) bool {
	return v.current().selection.UpsyncNamesExplicitly(o)
}
