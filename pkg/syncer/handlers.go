package syncer

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/selection"
)

// sideHandlers connects one side's informers to the downsync, status and upsync queues.
type sideHandlers struct {
	s          *Syncer
	downstream bool
}

// HandlerFor passes each event of a resource's informer to the three controllers, each of which
// keeps what concerns it.
func (h sideHandlers) HandlerFor(ctx context.Context, gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	return fanOut{h.s.downsync.Handler(ctx, h.downstream, gvr), h.s.status.Handler(h.downstream, gvr), h.s.upsync.Handler(h.downstream, gvr)}
}

// Synced enqueues everything of a resource (or of one namespace of it) once its cache has listed it
// (keys seen before were passed over), and again after every re-list (decisions taken while the
// cache was behind are taken again), and lets the resolver look again at a leftover resource that may
// have emptied.
func (h sideHandlers) Synced(gvr schema.GroupVersionResource, namespace string) {
	h.s.updateInformerGauges()
	gr := gvr.GroupResource()
	h.s.downsync.EnqueueResource(gr, namespace)
	h.s.status.EnqueueResource(gr, namespace)
	h.s.upsync.EnqueueResource(gr, namespace)
	if h.downstream {
		h.s.leftoverMayBeEmpty(gr)
	} else {
		h.s.upLeftoverMayBeEmpty(gr)
	}
}

// Early passes the upstream objects of a resource's initial list to downsync as they stream in, so
// that it writes the first ones before the list is complete.
func (h sideHandlers) Early(ctx context.Context, gvr schema.GroupVersionResource) func(*unstructured.Unstructured) {
	if h.downstream {
		return nil
	}
	return h.s.downsync.Early(ctx, gvr)
}

// EarlyDone tells downsync that an upstream resource's informer synced or stopped.
func (h sideHandlers) EarlyDone(gvr schema.GroupVersionResource) {
	if !h.downstream {
		h.s.downsync.EarlyDone(gvr)
	}
}

// fanOut passes each event to several handlers. An object the cache holds as a Compact is passed
// as a framework.Event, decoded once for all of them, and only as far as one asks: most events need
// only the object's head.
type fanOut []cache.ResourceEventHandler

func (f fanOut) OnAdd(obj interface{}, isInInitialList bool) {
	obj = framework.EventOf(obj)
	for _, h := range f {
		h.OnAdd(obj, isInInitialList)
	}
}

func (f fanOut) OnUpdate(oldObj, newObj interface{}) {
	oldObj, newObj = framework.EventOf(oldObj), framework.EventOf(newObj)
	for _, h := range f {
		h.OnUpdate(oldObj, newObj)
	}
}

func (f fanOut) OnDelete(obj interface{}) {
	obj = framework.EventOf(obj)
	for _, h := range f {
		h.OnDelete(obj)
	}
}

func grNames(m map[schema.GroupResource]*selection.Resource) []string {
	out := make([]string, 0, len(m))
	for gr := range m {
		out = append(out, gr.String())
	}
	sort.Strings(out)
	return out
}
