package syncer

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/selection"
)

// holdOverfull takes out of next the selected resources with more objects upstream than maxObjects
// (r.overfull, by upstream GroupResource): those the upstream informers found overfull since the last
// resolve, and those held before that a new count does not find back under the limit. Their
// informers stop, and their memory goes with them. What they wrote stays: their edge copies are
// held (next.heldDown: leftovers downsync keeps), their upsync resources kept as owning their
// upstream copies (next.heldUpsync), and a problem says why. A held resource is counted again at
// each resolve (a config or API change, or every --discovery-refresh-period), in the scope its
// informer would have now, one object listed per namespace; a count the apiserver does not give
// releases it, for its informer's cache to count.
func (r *resolver) holdOverfull(ctx context.Context, next *snapshot) {
	next.heldDown, next.heldUpsync = map[schema.GroupResource]bool{}, map[schema.GroupResource]*selection.Resource{}
	if r.maxObjects <= 0 {
		return
	}
	logger := klog.FromContext(ctx)
	fresh := map[schema.GroupResource]bool{}
	for gvr, o := range r.up.Overfull() {
		r.overfull[gvr.GroupResource()], fresh[gvr.GroupResource()] = o, true
	}
	for gr, held := range r.overfull {
		down, upsync := next.resources[gr], upsyncOf(next.upsync, gr)
		if down == nil && len(upsync) == 0 {
			delete(r.overfull, gr) // no longer selected
			continue
		}
		var gvr schema.GroupVersionResource
		for _, res := range upsync {
			gvr = res.Upstream.GVR // watched cluster-wide
		}
		if down != nil && len(upsync) == 0 {
			gvr, held.Namespaces = down.Upstream.GVR, upstreamScope(next.selection, down)
		} else {
			held.Namespaces = ""
		}
		if !fresh[gr] {
			n, known, err := countUpstream(ctx, r.upClient, gvr, held.Namespaces)
			switch {
			case err != nil:
				logger.Error(err, "Cannot count the objects of a resource held for having too many; holding it", "resource", gr.String())
			case !known || n <= int64(r.maxObjects):
				logger.Info("A resource held for having too many objects has few enough now; syncing it again", "resource", gr.String(), "objects", n, "known", known)
				delete(r.overfull, gr)
				continue
			default:
				held.Count = n
				r.overfull[gr] = held
			}
		}
		if delete(next.resources, gr); down != nil && down.ServedDownstream() {
			next.heldDown[down.Downstream.GVR.GroupResource()] = true
		}
		for key, res := range upsync {
			delete(next.upsync, key)
			next.heldUpsync[key] = res
		}
		next.problems = append(next.problems, problem.Problem{Kind: problem.TooManyObjects, Resource: gr, Reason: r.overfullReason(gr, held)})
	}
	next.indexRenamed()
}

// upsyncOf are the upsync resources (keyed as upsync is, by their edge GroupResource) read from the
// upstream GroupResource gr.
func upsyncOf(upsync map[schema.GroupResource]*selection.Resource, gr schema.GroupResource) map[schema.GroupResource]*selection.Resource {
	out := map[schema.GroupResource]*selection.Resource{}
	for key, res := range upsync {
		if res.Upstream.GVR.GroupResource() == gr {
			out[key] = res
		}
	}
	return out
}

// overfullReason says what holding an overfull resource means.
func (r *resolver) overfullReason(gr schema.GroupResource, o informermanager.Overflow) string {
	where := "upstream"
	if o.Namespaces != "" {
		where = "upstream in the namespaces selected"
	}
	return fmt.Sprintf("%d or more objects of %s %s, over the %d the syncer holds of one resource (--max-objects-per-resource): "+
		"they are not synced and the edge keeps what it has, until they are %d or fewer (counted again at each config change and every --discovery-refresh-period)",
		o.Count, gr, where, r.maxObjects, r.maxObjects)
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
