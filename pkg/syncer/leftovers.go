package syncer

import (
	"context"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/selection"
)

// findLeftovers finds the downstream resources to watch for owned objects besides the selected ones:
// those whose objects are no longer selected (to delete them) or whose API is missing upstream (to
// hold them).
func (r *resolver) findLeftovers(ctx context.Context, old *snapshot, down side, selected map[schema.GroupResource]*selection.Resource) (map[schema.GroupResource]schema.GroupVersionResource, error) {
	carried := map[schema.GroupResource]schema.GroupVersionResource{}
	maps.Copy(carried, old.leftovers)
	for _, res := range old.resources {
		if res.ServedDownstream() {
			carried[res.Downstream.GVR.GroupResource()] = res.Downstream.GVR
		}
	}
	// Leftovers are downstream resources: a conversion may write a selected resource elsewhere.
	selectedDown := map[schema.GroupResource]bool{}
	for _, s := range selected {
		if s.ServedDownstream() {
			selectedDown[s.Downstream.GVR.GroupResource()] = true
		}
	}
	return r.leftovers(ctx, leftoverSearch{
		carried: carried, scanned: &r.scanned, client: r.downClnt, side: down, informers: r.down, label: mapping.OwnerLabel,
		selected: func(gr schema.GroupResource) bool { return selectedDown[gr] }, found: r.ownedDown,
	})
}

// findUpsyncLeftovers finds the upstream resources, other than the upsync-selected ones, that hold
// copies this syncer upsynced (to delete them).
func (r *resolver) findUpsyncLeftovers(ctx context.Context, old *snapshot, up side, selected map[schema.GroupResource]*selection.Resource) (map[schema.GroupResource]schema.GroupVersionResource, error) {
	carried := map[schema.GroupResource]schema.GroupVersionResource{}
	maps.Copy(carried, old.upLeftovers)
	selectedUp := map[schema.GroupResource]bool{}
	for _, res := range old.owningUpstream() {
		carried[res.Upstream.GVR.GroupResource()] = res.Upstream.GVR
	}
	for _, res := range selected {
		selectedUp[res.Upstream.GVR.GroupResource()] = true
	}
	return r.leftovers(ctx, leftoverSearch{
		carried: carried, scanned: &r.upScanned, client: r.upClient, side: up, informers: r.up, label: mapping.UpsyncOwnerLabel,
		selected: func(gr schema.GroupResource) bool { return selectedUp[gr] },
	})
}

// leftoverSearch is where to look for objects of this syncer outside the selection, on one side.
type leftoverSearch struct {
	carried   map[schema.GroupResource]schema.GroupVersionResource // candidates from the previous snapshot
	scanned   *bool                                                // the scan at start was done
	client    dynamic.Interface
	side      side
	informers informerSet
	label     string // the label key whose value is this syncer's owner label value
	selected  func(schema.GroupResource) bool
	// found, if set, replaces the scan at start: the resources already known to hold objects of ours.
	found func() map[schema.GroupResource]schema.GroupVersionResource
}

// leftovers are the carried candidates, plus those a scan of the label finds once at start; a
// candidate is dropped when it is selected, once its cache holds nothing of ours, or when its API is
// gone from that side (and its objects with it).
func (r *resolver) leftovers(ctx context.Context, ls leftoverSearch) (map[schema.GroupResource]schema.GroupVersionResource, error) {
	if !*ls.scanned {
		var found map[schema.GroupResource]schema.GroupVersionResource
		if ls.found != nil {
			found = ls.found()
		} else {
			var err error
			if found, err = scanOwned(ctx, ls.client, ls.side.index, ls.selected, ls.label+"="+r.ownerLabel); err != nil {
				return nil, err
			}
		}
		maps.Copy(ls.carried, found)
		*ls.scanned = true
	}
	out := map[schema.GroupResource]schema.GroupVersionResource{}
	for gr, gvr := range ls.carried {
		if ls.selected(gr) {
			continue
		}
		if c, ok := framework.SyncedCache(ls.informers, gvr, ""); ok && !holdsLabelled(c, ls.label, r.ownerLabel) {
			continue // nothing of ours is left there
		}
		if _, served := ls.side.index.Lookup(gr, gvr.Version); !served && !ls.side.failed.Has(gr.Group) {
			continue // the API is gone, and its objects with it
		}
		out[gr] = gvr
	}
	return out, nil
}

// scanOwned finds the resources of a side, other than those skipped, that hold an object with the
// label selector: it stops at the first such object of each. Resources the syncer may not list are
// passed over.
func scanOwned(ctx context.Context, client dynamic.Interface, idx *selection.Index, skip func(schema.GroupResource) bool,
	selector string) (map[schema.GroupResource]schema.GroupVersionResource, error) {
	found := map[schema.GroupResource]schema.GroupVersionResource{}
	for _, res := range idx.All() {
		gr := res.GVR.GroupResource()
		if skip(gr) || !res.Syncable() {
			continue
		}
		if err := framework.ScanLabelled(ctx, client, res.GVR, selector, 1, func(*unstructured.Unstructured) bool {
			found[gr] = res.GVR
			return false
		}); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// holdsLabelled tells whether a cache holds an object with the label key=value.
func holdsLabelled(c framework.Cache, key, value string) bool {
	for _, obj := range c.List("") {
		if u := framework.MetaOf(obj); u != nil && u.GetLabels()[key] == value {
			return true
		}
	}
	return false
}
