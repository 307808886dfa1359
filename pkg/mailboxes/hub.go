package mailboxes

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"

	"github.com/kubestellar/syncer/pkg/informermanager"
)

// Lister lists and watches one resource: across every workspace upstream (kcp-dev/client-go's
// ResourceClusterInterface on the virtual workspace), or at the edge.
type Lister = informermanager.Lister

// hubKey names one shared informer.
type hubKey struct {
	gvr  schema.GroupVersionResource
	spec informermanager.Spec
}

// Hub runs the informers of one side for every engine: one list and one watch per resource (and
// label selector), whatever the number of workspaces. Engines take shares of them (Source), each
// seeing its own workspace's objects through a view.
type Hub struct {
	side string
	// clusterAware: the store is keyed by logical cluster, namespace and name (upstream, where two
	// workspaces have objects of the same name); else by namespace and name (the edge).
	clusterAware bool
	lister       func(gvr schema.GroupVersionResource) Lister
	onChange     func() // told when an informer starts or stops

	mu      sync.Mutex
	ctx     context.Context
	stopped bool
	entries map[hubKey]*hubEntry
}

// hubEntry is one shared informer and who holds it.
type hubEntry struct {
	key      hubKey
	informer cache.SharedIndexInformer
	refs     int
	cancel   context.CancelFunc
	done     chan struct{}
	health   informermanager.Health
}

// NewHub returns a hub for one side; informers run from Start on.
func NewHub(side string, clusterAware bool, lister func(gvr schema.GroupVersionResource) Lister) *Hub {
	return &Hub{side: side, clusterAware: clusterAware, lister: lister, entries: map[hubKey]*hubEntry{}}
}

// Start gives the hub the context its informers run in; those acquired before run from now on.
func (h *Hub) Start(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ctx = ctx
	for _, e := range h.entries {
		h.run(e)
	}
}

// Stop stops every informer and waits for them; nothing starts afterwards.
func (h *Hub) Stop() {
	h.mu.Lock()
	h.stopped = true
	entries := h.entries
	h.entries = map[hubKey]*hubEntry{}
	h.mu.Unlock()
	for _, e := range entries {
		e.stop()
	}
}

// Counts are the running and synced informers.
func (h *Hub) Counts() (running, synced int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.entries {
		running++
		if e.informer.HasSynced() {
			synced++
		}
	}
	return running, synced
}

// acquire returns the entry of key, made and started when new, with one more holder.
func (h *Hub) acquire(key hubKey) *hubEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.entries[key]
	if !ok {
		e = h.newEntry(key)
		if !h.stopped {
			h.entries[key] = e
			if h.ctx != nil {
				h.run(e)
			}
		}
	}
	e.refs++
	return e
}

// release drops one holder of an entry; the last one stops its informer.
func (h *Hub) release(e *hubEntry) {
	h.mu.Lock()
	e.refs--
	last := e.refs == 0 && h.entries[e.key] == e
	if last {
		delete(h.entries, e.key)
	}
	h.mu.Unlock()
	if last {
		e.stop()
		if h.onChange != nil {
			h.onChange()
		}
	}
}

func (h *Hub) newEntry(key hubKey) *hubEntry {
	e := &hubEntry{key: key}
	newInformer := cache.NewSharedIndexInformerWithOptions
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, WorkspaceIndex: workspaceIndexFunc}
	if h.clusterAware {
		// Keyed by logical cluster, namespace and name: two workspaces have objects of one name.
		newInformer = func(lw cache.ListerWatcher, obj runtime.Object, o cache.SharedIndexInformerOptions) cache.SharedIndexInformer {
			return kcpinformers.NewSharedIndexInformerWithOptions(lw, obj, o)
		}
		indexers = cache.Indexers{
			kcpcache.ClusterIndexName:             kcpcache.ClusterIndexFunc,
			kcpcache.ClusterAndNamespaceIndexName: kcpcache.ClusterAndNamespaceIndexFunc,
		}
	}
	e.informer = informermanager.NewInformer(h.lister(key.gvr), key.spec, false, &e.health, nil, key.gvr.String(), indexers, newInformer)
	return e
}

// run starts an entry's informer; h.mu is held.
func (h *Hub) run(e *hubEntry) {
	ctx, cancel := context.WithCancel(h.ctx)
	e.cancel, e.done = cancel, make(chan struct{})
	klog.FromContext(ctx).V(2).Info("Started shared informer", "side", h.side, "gvr", e.key.gvr.String(), "labelSelector", e.key.spec.LabelSelector)
	go func() {
		defer close(e.done)
		e.informer.Run(ctx.Done())
	}()
	if h.onChange != nil {
		go h.onChange()
	}
}

func (e *hubEntry) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	<-e.done
}

// share is one engine's share of an entry.
type share struct {
	hub   *Hub
	entry *hubEntry
	view  *view
	once  sync.Once
}

func (s *share) Informer() cache.SharedIndexInformer { return s.view }

func (s *share) Denied() error { return s.entry.health.Denied() }

func (s *share) Broken() bool { return s.entry.health.Broken() }

// Release removes the view's handlers and drops the share.
func (s *share) Release() {
	s.once.Do(func() {
		s.view.removeAll()
		s.hub.release(s.entry)
	})
}

// Share takes a share of the informer of gvr (with spec's label selector) seen through scope.
func (h *Hub) Share(gvr schema.GroupVersionResource, spec informermanager.Spec, sc scope) informermanager.Shared {
	e := h.acquire(hubKey{gvr: gvr, spec: spec})
	return &share{hub: h, entry: e, view: newView(e.informer, sc)}
}
