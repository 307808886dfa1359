package syncer

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/selection"
)

// overfullResource is a selected upstream resource held for having more objects than the syncer
// holds (resolver.maxObjects), with the count last found.
type overfullResource struct {
	count      int64
	namespaced bool // counted in the selected namespaces
}

// holdOverfull takes out of next the selected resources with more objects upstream than maxObjects:
// those the upstream informers found overfull since the last resolve, and those held before that a new
// count does not find back under the limit. Their informers stop, and their memory goes with them.
// What they wrote stays: the edge copies are held as for a resource not served upstream (never
// deleted), upsynced copies are not left over, and a problem says why. A held resource is counted
// again at each resolve (a config or API change, or every --discovery-refresh-period), one object
// listed per namespace selected. It returns the upsync resources that own upstream copies: those
// of next and the held ones.
func (r *resolver) holdOverfull(ctx context.Context, next *snapshot) map[schema.GroupResource]*selection.Resource {
	if r.maxObjects <= 0 {
		return next.upsync
	}
	logger := klog.FromContext(ctx)
	found := r.up.Overfull()
	for gvr, n := range found {
		r.overfull[gvr.GroupResource()] = overfullResource{count: n}
	}
	owning := maps.Clone(next.upsync)
	for gr := range r.overfull {
		res, scope := next.resources[gr], ""
		if res != nil && next.upsync[gr] == nil {
			scope = upstreamScope(next.selection, res)
		} else if res = next.upsync[gr]; res == nil {
			delete(r.overfull, gr) // no longer selected
			continue
		}
		if n, fresh := found[res.Upstream.GVR]; fresh {
			r.overfull[gr] = overfullResource{count: n, namespaced: scope != ""}
		} else {
			n, known, err := countUpstream(ctx, r.upClient, res.Upstream.GVR, scope)
			switch {
			case err != nil:
				logger.Error(err, "Cannot count the objects of a resource held for having too many; holding it", "resource", gr.String())
			case !known || n <= int64(r.maxObjects):
				logger.Info("A resource held for having too many objects has few enough now; syncing it again", "resource", gr.String(), "objects", n, "known", known)
				delete(r.overfull, gr)
				continue
			default:
				r.overfull[gr] = overfullResource{count: n, namespaced: scope != ""}
			}
		}
		delete(next.resources, gr)
		delete(next.upsync, gr)
		next.problems = append(next.problems, problem.Problem{Kind: problem.TooManyObjects, Resource: gr, Reason: r.overfullReason(gr, r.overfull[gr])})
	}
	next.indexRenamed()
	return owning
}

// overfullReason says what holding an overfull resource means.
func (r *resolver) overfullReason(gr schema.GroupResource, o overfullResource) string {
	where := "upstream"
	if o.namespaced {
		where = "upstream in the namespaces selected"
	}
	return fmt.Sprintf("%d or more objects of %s %s, over the %d the syncer holds of one resource (--max-objects-per-resource): "+
		"they are not synced and the edge keeps what it has, until they are %d or fewer (counted again at each config change and every --discovery-refresh-period)",
		o.count, gr, where, r.maxObjects, r.maxObjects)
}

// countUpstream counts the objects of gvr upstream, in the namespaces of scope (all of them when
// ""), listing one object per namespace; known is false when the apiserver does not say.
func countUpstream(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, scope string) (total int64, known bool, err error) {
	namespaces := informermanager.Spec{Namespaces: scope}.NamespaceList()
	if namespaces == nil {
		return framework.CountObjects(ctx, client.Resource(gvr))
	}
	for _, ns := range namespaces {
		n, known, err := framework.CountObjects(ctx, client.Resource(gvr).Namespace(ns))
		if err != nil || !known {
			return 0, known, err
		}
		total += n
	}
	return total, true, nil
}
