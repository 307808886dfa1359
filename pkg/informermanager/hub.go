package informermanager

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
)

// HubOptions say how a Hub's informers list, watch, key and index their objects.
type HubOptions struct {
	// Side names the side in log lines.
	Side string
	// Lister is the lister of a resource (across every workspace upstream; the edge's).
	Lister func(gvr schema.GroupVersionResource) Lister
	// KeyFunc keys the stores (cache.DeletionHandlingMetaNamespaceKeyFunc when nil; kcp's
	// cluster-aware one where two workspaces have objects of one name).
	KeyFunc cache.KeyFunc
	// Indexers are the stores' indexes, which the Scopes read (Scope.Candidates).
	Indexers cache.Indexers
	// WatchList lets the informers stream their lists as watches; client-go's reflector keys a
	// streamed list by namespace and name, so a cluster-aware store must not.
	WatchList bool
	// OnChange, if set, is told when an informer starts, syncs or stops (for gauges).
	OnChange func()
}

// Hub runs the informers of one side for several engines (one syncer serving several workspaces):
// one list and one watch per resource (and label selector), whatever the number of workspaces.
// Engines take shares of them, each seeing its own workspace's objects through a view (a Scope).
type Hub struct {
	opts HubOptions

	mu      sync.Mutex
	ctx     context.Context
	stopped bool
	entries map[hubKey]*hubEntry
	// changes are the OnChange calls under way, joined by Stop.
	changes sync.WaitGroup
}

// hubKey names one shared informer.
type hubKey struct {
	gvr  schema.GroupVersionResource
	spec Spec
}

// hubEntry is one shared informer and who holds it.
type hubEntry struct {
	key      hubKey
	informer *informer
	health   Health
	refs     int
	cancel   context.CancelFunc
	done     chan struct{}
}

// NewHub returns a hub for one side; informers run from Start on.
func NewHub(opts HubOptions) *Hub {
	return &Hub{opts: opts, entries: map[hubKey]*hubEntry{}}
}

// Start gives the hub the context its informers run in; those acquired before run from now on.
func (h *Hub) Start(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	h.ctx = ctx
	for _, e := range h.entries {
		h.run(e)
	}
}

// Stop stops every informer and waits for them, and for the OnChange calls under way; nothing starts
// afterwards.
func (h *Hub) Stop() {
	h.mu.Lock()
	h.stopped = true
	entries := h.entries
	h.entries = map[hubKey]*hubEntry{}
	h.mu.Unlock()
	for _, e := range entries {
		e.stop()
	}
	h.changes.Wait()
}

// Counts are the running and synced informers.
func (h *Hub) Counts() (running, synced int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.entries {
		running++
		if e.informer.Synced("") {
			synced++
		}
	}
	return running, synced
}

// Share takes a share of the informer of gvr (with spec's label selector) seen through scope.
func (h *Hub) Share(gvr schema.GroupVersionResource, spec Spec, scope Scope) Shared {
	e := h.acquire(hubKey{gvr: gvr, spec: spec})
	return &share{hub: h, entry: e, view: newView(e.informer, scope)}
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
		h.changed()
	}
}

func (h *Hub) newEntry(key hubKey) *hubEntry {
	e := &hubEntry{key: key}
	e.informer = newInformer(informerConfig{
		description: key.gvr.String(),
		lw:          listWatch(h.opts.Lister(key.gvr), key.spec, &e.health, h.opts.WatchList, nil),
		health:      &e.health,
		keyFunc:     h.opts.KeyFunc,
		indexers:    h.opts.Indexers,
		transform:   transformFor(key.spec, false),
		onSynced:    func(bool) { h.changed() },
	})
	return e
}

// changed calls OnChange in a goroutine of its own, joined by Stop.
func (h *Hub) changed() {
	if h.opts.OnChange == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	h.changes.Go(h.opts.OnChange)
}

// run starts an entry's informer; h.mu is held.
func (h *Hub) run(e *hubEntry) {
	ctx, cancel := context.WithCancel(h.ctx)
	e.cancel, e.done = cancel, make(chan struct{})
	klog.FromContext(ctx).V(logging.Change).Info("Started shared informer", "side", h.opts.Side, "gvr", e.key.gvr.String(), "labelSelector", e.key.spec.LabelSelector)
	go func() {
		defer close(e.done)
		e.informer.Run(ctx)
	}()
	if h.opts.OnChange != nil && !h.stopped {
		h.changes.Go(h.opts.OnChange)
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

func (s *share) Cache() framework.Cache { return s.view }

func (s *share) Denied() error { return s.entry.health.Denied() }

func (s *share) Broken() bool { return s.entry.health.Broken() }

// Release removes the view's handlers and drops the share.
func (s *share) Release() {
	s.once.Do(func() {
		s.view.removeAll()
		s.hub.release(s.entry)
	})
}
