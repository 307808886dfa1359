package mailboxes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// scope is what one engine sees of a hub's informer: the objects of its workspace, named as the
// engine names them (upstream: as they are; at the edge: in their upstream namespaces).
type scope interface {
	// matches tells whether a hub object is the workspace's.
	matches(obj *unstructured.Unstructured) bool
	// toEngine is the object as the engine sees it: obj itself, or a translated copy (the hub's
	// object is never modified).
	toEngine(obj *unstructured.Unstructured) *unstructured.Unstructured
	// storeKey is the hub's store key of the object the engine keys as namespace/name.
	storeKey(namespace, name string) string
	// candidates are the hub's objects that may be the workspace's: all of them, or those in the
	// engine's namespace ns when inNamespace.
	candidates(idx cache.Indexer, inNamespace bool, ns string) ([]interface{}, error)
}

// view is an engine's informer over a hub's: the hub runs it (Run does nothing), events and the store
// hold the workspace's objects only, as the engine names them.
type view struct {
	cache.SharedIndexInformer // the hub's; its Run and the like are not the engine's to call
	sc                        scope

	mu   sync.Mutex
	regs map[cache.ResourceEventHandlerRegistration]bool
}

func newView(inf cache.SharedIndexInformer, sc scope) *view {
	return &view{SharedIndexInformer: inf, sc: sc, regs: map[cache.ResourceEventHandlerRegistration]bool{}}
}

// Run does nothing: the hub runs the informer.
func (v *view) Run(<-chan struct{}) {}

// errShared refuses what only the owner of an informer may set.
var errShared = errors.New("a workspace's view of a shared informer: its transform and watch error handler are the hub's")

func (v *view) SetWatchErrorHandler(cache.WatchErrorHandler) error { return errShared }

func (v *view) SetWatchErrorHandlerWithContext(cache.WatchErrorHandlerWithContext) error {
	return errShared
}

func (v *view) SetTransform(cache.TransformFunc) error { return errShared }

// RunWithContext does nothing: the hub runs the informer.
func (v *view) RunWithContext(context.Context) {}

func (v *view) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return v.AddEventHandlerWithOptions(h, cache.HandlerOptions{})
}

func (v *view) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, p time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return v.AddEventHandlerWithOptions(h, cache.HandlerOptions{ResyncPeriod: &p})
}

func (v *view) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	reg, err := v.SharedIndexInformer.AddEventHandlerWithOptions(scopedHandler{sc: v.sc, next: h}, opts)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	v.regs[reg] = true
	v.mu.Unlock()
	return reg, nil
}

func (v *view) RemoveEventHandler(reg cache.ResourceEventHandlerRegistration) error {
	v.mu.Lock()
	delete(v.regs, reg)
	v.mu.Unlock()
	return v.SharedIndexInformer.RemoveEventHandler(reg)
}

// removeAll removes the handlers the engine left (a released share hears nothing more).
func (v *view) removeAll() {
	v.mu.Lock()
	regs := v.regs
	v.regs = map[cache.ResourceEventHandlerRegistration]bool{}
	v.mu.Unlock()
	for reg := range regs {
		_ = v.SharedIndexInformer.RemoveEventHandler(reg)
	}
}

func (v *view) GetStore() cache.Store { return v.GetIndexer() }

func (v *view) GetIndexer() cache.Indexer {
	return &viewIndexer{Indexer: v.SharedIndexInformer.GetIndexer(), sc: v.sc}
}

// scopedHandler passes on the events of the workspace's objects, translated. An update that moves an
// object into or out of the workspace (its marks changed) is an add or a delete.
type scopedHandler struct {
	sc   scope
	next cache.ResourceEventHandler
}

func (h scopedHandler) OnAdd(obj interface{}, isInInitialList bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok && h.sc.matches(u) {
		h.next.OnAdd(h.sc.toEngine(u), isInInitialList)
	}
}

func (h scopedHandler) OnUpdate(oldObj, newObj interface{}) {
	o, _ := oldObj.(*unstructured.Unstructured)
	n, _ := newObj.(*unstructured.Unstructured)
	if o == nil || n == nil {
		return
	}
	switch was, is := h.sc.matches(o), h.sc.matches(n); {
	case was && is:
		h.next.OnUpdate(h.sc.toEngine(o), h.sc.toEngine(n))
	case is:
		h.next.OnAdd(h.sc.toEngine(n), false)
	case was:
		h.next.OnDelete(h.sc.toEngine(o))
	}
}

func (h scopedHandler) OnDelete(obj interface{}) {
	switch t := obj.(type) {
	case *unstructured.Unstructured:
		if h.sc.matches(t) {
			h.next.OnDelete(h.sc.toEngine(t))
		}
	case cache.DeletedFinalStateUnknown:
		if u, ok := t.Obj.(*unstructured.Unstructured); ok && h.sc.matches(u) {
			e := h.sc.toEngine(u)
			key, _ := cache.MetaNamespaceKeyFunc(e)
			h.next.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: e})
		}
	}
}

// viewIndexer is the store as an engine sees it: read-only, the workspace's objects under the keys
// the engine uses (namespace/name) and its namespace index; other indexes are not served.
type viewIndexer struct {
	cache.Indexer // the hub's, for the methods an engine never calls
	sc            scope
}

func (i *viewIndexer) GetByKey(key string) (interface{}, bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, false, err
	}
	obj, exists, err := i.Indexer.GetByKey(i.sc.storeKey(ns, name))
	if err != nil || !exists {
		return nil, false, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !i.sc.matches(u) {
		return nil, false, nil
	}
	return i.sc.toEngine(u), true, nil
}

func (i *viewIndexer) Get(obj interface{}) (interface{}, bool, error) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return i.GetByKey(key)
}

func (i *viewIndexer) List() []interface{} {
	objs, _ := i.list(false, "")
	return objs
}

func (i *viewIndexer) ListKeys() []string {
	objs := i.List()
	keys := make([]string, 0, len(objs))
	for _, obj := range objs {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			keys = append(keys, key)
		}
	}
	return keys
}

func (i *viewIndexer) ByIndex(indexName, value string) ([]interface{}, error) {
	if indexName != cache.NamespaceIndex {
		return nil, fmt.Errorf("index %q is not served by a workspace's view", indexName)
	}
	return i.list(true, value)
}

func (i *viewIndexer) IndexKeys(indexName, value string) ([]string, error) {
	objs, err := i.ByIndex(indexName, value)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(objs))
	for _, obj := range objs {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			keys = append(keys, key)
		}
	}
	return keys, nil
}

func (i *viewIndexer) Index(indexName string, obj interface{}) ([]interface{}, error) {
	ns, err := cache.MetaNamespaceIndexFunc(obj)
	if err != nil {
		return nil, fmt.Errorf("index %q of %T: %w", indexName, obj, err)
	}
	if len(ns) != 1 {
		return nil, fmt.Errorf("index %q of %T: no namespace", indexName, obj)
	}
	return i.ByIndex(indexName, ns[0])
}

// list is the workspace's objects (in the engine's namespace ns when inNamespace), translated.
func (i *viewIndexer) list(inNamespace bool, ns string) ([]interface{}, error) {
	objs, err := i.sc.candidates(i.Indexer, inNamespace, ns)
	if err != nil {
		return nil, err
	}
	out := make([]interface{}, 0, len(objs))
	for _, obj := range objs {
		if u, ok := obj.(*unstructured.Unstructured); ok && i.sc.matches(u) {
			out = append(out, i.sc.toEngine(u))
		}
	}
	return out, nil
}
