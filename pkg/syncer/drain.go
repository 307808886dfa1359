package syncer

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// Drain makes the engine read no configs from now on: everything it wrote at the edge leaves the
// selection and is deleted (except what the marks keep: create-only copies and those whose configs
// did not propagate deletion). One syncer serving several workspaces drains the engine of a workspace
// that is no longer bound (package mailboxes).
func (s *Syncer) Drain() {
	if s.draining.Swap(true) {
		return
	}
	s.drainResolved.Store(false)
	s.resolveQueue.Add(resolveKey)
}

// Drained tells whether a draining engine is done: a resolve ran since Drain, and no edge object of
// its own that it would delete is left in any resource it watches.
func (s *Syncer) Drained() bool {
	if !s.draining.Load() || !s.drainResolved.Load() {
		return false
	}
	st := s.snapshot()
	if len(st.resources) > 0 {
		return false
	}
	for _, gvr := range st.leftovers {
		c, ok := framework.SyncedCache(s.down, gvr, "")
		if !ok {
			return false
		}
		for _, obj := range c.List("") {
			if u := framework.MetaOf(obj); u != nil && s.deletable(u) {
				return false
			}
		}
	}
	return s.downsync.Queue().Len() == 0
}

// deletable tells whether downsync has yet to delete an edge object of this engine once nothing
// selects it: one it owns (as downsync's delete decides), not kept by its marks, not already going.
func (s *Syncer) deletable(u *unstructured.Unstructured) bool {
	return mapping.OwnedDownstream(u) && mapping.OwnerOf(u) == s.ownerLabel && mapping.ClusterOf(u) == s.cfg.Cluster &&
		!mapping.CreateOnly(u) && !mapping.KeepOnDelete(u) && u.GetDeletionTimestamp() == nil
}

// Resolve asks for a resolve: for an owner that invalidated the discovery clients it shares among
// several engines (their DiscoveryRefreshPeriod being 0), once for all of them.
func (s *Syncer) Resolve() { s.resolveQueue.Add(resolveKey) }

// ObjectCounts reports objects_managed for this engine (what a standalone engine reports itself): an
// embedded engine's owner sums them over its engines.
func (s *Syncer) ObjectCounts(add func(direction, resource string, n int)) { s.countObjects(add) }
