package informermanager

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Spec says how to watch one resource.
type Spec struct {
	// LabelSelector restricts the informer to matching objects; empty means all.
	LabelSelector string
}

// Handlers builds the event handler for a resource's informer, and is told when its cache has synced.
type Handlers interface {
	HandlerFor(gvr schema.GroupVersionResource) cache.ResourceEventHandler
	Synced(gvr schema.GroupVersionResource)
}

// Manager runs the informers of one side.
type Manager struct {
	side     string
	client   dynamic.Interface
	handlers Handlers
	resync   time.Duration

	mu        sync.Mutex
	ctx       context.Context
	stopped   bool // Stop was called: nothing starts again
	informers map[schema.GroupVersionResource]*entry
}

type entry struct {
	spec         Spec
	informer     cache.SharedIndexInformer
	registration cache.ResourceEventHandlerRegistration
	cancel       context.CancelFunc
	done         sync.WaitGroup
}

// New returns a Manager for one side; nothing runs until Start.
func New(side string, client dynamic.Interface, handlers Handlers, resync time.Duration) *Manager {
	return &Manager{side: side, client: client, handlers: handlers, resync: resync, informers: map[schema.GroupVersionResource]*entry{}}
}

// Start gives the manager the context its informers live in. Informers asked for before Start run
// from then on; cancelling ctx stops them all (Stop waits for them).
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.ctx = ctx
	for gvr, e := range m.informers {
		m.run(gvr, e)
	}
}

// Set makes the running informers exactly those of desired: it starts the missing ones, stops those no
// longer wanted, and restarts those whose Spec changed. It returns the resources it started. After
// Stop it does nothing.
func (m *Manager) Set(desired map[schema.GroupVersionResource]Spec) []schema.GroupVersionResource {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return nil
	}
	var stopped []*entry
	for gvr, e := range m.informers {
		if spec, ok := desired[gvr]; !ok || spec.LabelSelector != e.spec.LabelSelector {
			stopped = append(stopped, e)
			delete(m.informers, gvr)
		}
	}
	var started []schema.GroupVersionResource
	for gvr, spec := range desired {
		if _, ok := m.informers[gvr]; ok {
			continue
		}
		e := m.newEntry(gvr, spec)
		m.informers[gvr] = e
		if m.ctx != nil {
			m.run(gvr, e)
		}
		started = append(started, gvr)
	}
	m.mu.Unlock()
	for _, e := range stopped {
		e.stop()
	}
	return started
}

func (m *Manager) newEntry(gvr schema.GroupVersionResource, spec Spec) *entry {
	selector := spec.LabelSelector
	inf := dynamicinformer.NewFilteredDynamicInformer(m.client, gvr, metav1.NamespaceAll, m.resync,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) { o.LabelSelector = selector }).Informer()
	_ = inf.SetTransform(func(obj interface{}) (interface{}, error) {
		if acc, ok := obj.(metav1.Object); ok {
			acc.SetManagedFields(nil)
		}
		return obj, nil
	})
	return &entry{spec: spec, informer: inf}
}

// run starts an entry's informer; m.mu is held.
func (m *Manager) run(gvr schema.GroupVersionResource, e *entry) {
	ctx, cancel := context.WithCancel(m.ctx)
	e.cancel = cancel
	logger := klog.FromContext(ctx).WithValues("side", m.side, "gvr", gvr.String())
	if m.handlers != nil {
		reg, err := e.informer.AddEventHandler(m.handlers.HandlerFor(gvr))
		if err != nil {
			logger.Error(err, "Could not add an event handler")
		}
		e.registration = reg
	}
	e.done.Add(2)
	go func() {
		defer e.done.Done()
		e.informer.Run(ctx.Done())
	}()
	go func() {
		defer e.done.Done()
		if cache.WaitForNamedCacheSyncWithContext(ctx, e.informer.HasSynced) && m.handlers != nil {
			logger.V(2).Info("Informer synced")
			m.handlers.Synced(gvr)
		}
	}()
	logger.V(2).Info("Started informer")
}

// stop cancels the informer, removes its handler and waits until its goroutines have exited.
func (e *entry) stop() {
	if e.cancel == nil {
		return
	}
	if e.registration != nil {
		_ = e.informer.RemoveEventHandler(e.registration)
	}
	e.cancel()
	e.done.Wait()
}

// Stop stops every informer and waits for them; the manager starts nothing afterwards.
func (m *Manager) Stop() {
	m.mu.Lock()
	m.stopped = true
	entries := m.informers
	m.informers = map[schema.GroupVersionResource]*entry{}
	m.mu.Unlock()
	for _, e := range entries {
		e.stop()
	}
}

// Informer returns the running informer of a resource, if any.
func (m *Manager) Informer(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.informers[gvr]
	if !ok {
		return nil, false
	}
	return e.informer, true
}

// Synced returns the informer of a resource when it runs and its cache has synced.
func (m *Manager) Synced(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, bool) {
	inf, ok := m.Informer(gvr)
	if !ok || !inf.HasSynced() {
		return nil, false
	}
	return inf, true
}

// Running lists the resources with a running informer.
func (m *Manager) Running() []schema.GroupVersionResource {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]schema.GroupVersionResource, 0, len(m.informers))
	for gvr := range m.informers {
		out = append(out, gvr)
	}
	return out
}
