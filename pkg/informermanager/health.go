package informermanager

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Lister lists and watches one resource (a dynamic client's resource, or kcp-dev/client-go's
// cluster-wide one).
type Lister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Health is what the lists and watches of one informer tell of it: whether the apiserver refuses
// them, and whether the watch dropped.
type Health struct {
	mu sync.Mutex
	// denied is the last list or watch the apiserver refused (forbidden, unauthorized, not found); it
	// holds until a list or watch succeeds again.
	denied error
	// broken is set when the list or watch dropped with an error, until one is established again:
	// meanwhile the cache may be behind the apiserver.
	broken bool
}

// observe remembers a list or watch the apiserver refuses until one succeeds.
func (h *Health) observe(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		h.denied, h.broken = nil, false
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err):
		h.denied = err
	}
}

// Denied is the refusal that holds: no list or watch has succeeded since.
func (h *Health) Denied() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.denied
}

// Broken tells whether the list or watch dropped with an error and is not established again.
func (h *Health) Broken() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.broken
}

// NewInformer makes an informer of l's objects as spec asks (its label selector, and a slim cache
// for spec.AppliedBy) whose health h follows, with the syncer's transform (transformFor) and the
// given indexers; spec.Namespaces is the caller's business. With compact, the cache holds each object
// as a framework.Compact (its JSON), which its readers decode (framework.ObjectOf, GetFromCache,
// MetaOf). newInformer is the constructor (client-go's, or kcp's cluster-aware one);
// watchListClient, when not nil, says whether the client serves watch-list.
func NewInformer(l Lister, spec Spec, compact bool, h *Health, watchListClient any, description string, indexers cache.Indexers,
	newInformer func(cache.ListerWatcher, runtime.Object, cache.SharedIndexInformerOptions) cache.SharedIndexInformer) cache.SharedIndexInformer {
	selector := func(o *metav1.ListOptions) { o.LabelSelector = spec.LabelSelector }
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			selector(&o)
			list, err := l.List(ctx, o)
			h.observe(err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			selector(&o)
			w, err := l.Watch(ctx, o)
			h.observe(err)
			return w, err
		},
	}
	var listWatcher cache.ListerWatcher = lw
	if watchListClient != nil {
		// The client says whether it serves watch-list (a fake does not): the reflector then lists instead.
		listWatcher = cache.ToListWatcherWithWatchListSemantics(lw, watchListClient)
	}
	inf := newInformer(listWatcher, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{Indexers: indexers, ObjectDescription: description})
	_ = inf.SetTransform(transformFor(spec, compact))
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		h.mu.Lock()
		h.broken = true
		h.mu.Unlock()
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return inf
}
