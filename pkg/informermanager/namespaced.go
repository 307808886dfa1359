package informermanager

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
)

// NamespaceScope is the Spec.Namespaces of the given namespaces: sorted, without duplicates, joined
// by commas ("" for none, i.e. cluster-wide). Namespace names hold no commas.
func NamespaceScope(namespaces []string) string {
	sorted := append([]string(nil), namespaces...)
	sort.Strings(sorted)
	out := sorted[:0]
	for i, ns := range sorted {
		if ns != "" && (i == 0 || ns != sorted[i-1]) {
			out = append(out, ns)
		}
	}
	return strings.Join(out, ",")
}

// NamespaceList is the namespaces of a Spec, sorted; nil when it is cluster-wide.
func (s Spec) NamespaceList() []string {
	if s.Namespaces == "" {
		return nil
	}
	return strings.Split(s.Namespaces, ",")
}

// namespacedInformer is one informer over several namespaces, made of one informer per namespace
// (each listing and watching its namespace only). Its consumers see one informer: event handlers
// are added to every namespace's informer (and called one event at a time, as a single informer
// calls them), the store reads from the informer of the key's namespace, lists concatenate, and it
// has synced once every namespace's informer has. It is read-only: the Manager runs, transforms and
// watches the errors of the namespaces' informers, so Run does nothing and the setters refuse.
type namespacedInformer struct {
	names []string // sorted
	parts map[string]cache.SharedIndexInformer
}

func newNamespacedInformer(parts map[string]cache.SharedIndexInformer) *namespacedInformer {
	i := &namespacedInformer{parts: parts}
	for ns := range parts {
		i.names = append(i.names, ns)
	}
	sort.Strings(i.names)
	return i
}

var _ cache.SharedIndexInformer = &namespacedInformer{}

// errNamespaced refuses what only the Manager, which runs the namespaces' informers, may do.
var errNamespaced = errors.New("an informer over several namespaces: its namespaces' informers are the informer manager's to run, transform and watch")

// Run does nothing: the Manager runs each namespace's informer.
func (i *namespacedInformer) Run(<-chan struct{}) {}

// RunWithContext does nothing: the Manager runs each namespace's informer.
func (i *namespacedInformer) RunWithContext(context.Context) {}

func (i *namespacedInformer) SetWatchErrorHandler(cache.WatchErrorHandler) error {
	return errNamespaced
}

func (i *namespacedInformer) SetWatchErrorHandlerWithContext(cache.WatchErrorHandlerWithContext) error {
	return errNamespaced
}

func (i *namespacedInformer) SetTransform(cache.TransformFunc) error { return errNamespaced }

func (i *namespacedInformer) AddIndexers(cache.Indexers) error { return errNamespaced }

// HasSynced tells whether every namespace's informer has synced.
func (i *namespacedInformer) HasSynced() bool {
	for _, ns := range i.names {
		if !i.parts[ns].HasSynced() {
			return false
		}
	}
	return true
}

// IsStopped tells whether every namespace's informer has stopped.
func (i *namespacedInformer) IsStopped() bool {
	for _, ns := range i.names {
		if !i.parts[ns].IsStopped() {
			return false
		}
	}
	return true
}

// LastSyncResourceVersion is "": each namespace's informer has its own.
func (i *namespacedInformer) LastSyncResourceVersion() string { return "" }

func (i *namespacedInformer) GetController() cache.Controller { return namespacedController{i} }

func (i *namespacedInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, cache.HandlerOptions{})
}

func (i *namespacedInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, p time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, cache.HandlerOptions{ResyncPeriod: &p})
}

// AddEventHandlerWithOptions adds the handler to every namespace's informer; all or none.
func (i *namespacedInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	serial := &serialHandler{next: h}
	reg := &namespacedRegistration{regs: map[string]cache.ResourceEventHandlerRegistration{}}
	for _, ns := range i.names {
		r, err := i.parts[ns].AddEventHandlerWithOptions(serial, opts)
		if err != nil {
			_ = i.RemoveEventHandler(reg)
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		reg.regs[ns] = r
	}
	return reg, nil
}

// RemoveEventHandler removes a handler from every namespace's informer.
func (i *namespacedInformer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	reg, ok := handle.(*namespacedRegistration)
	if !ok {
		return fmt.Errorf("registration %T is not of an informer over several namespaces", handle)
	}
	var errs []error
	for ns, r := range reg.regs {
		if err := i.parts[ns].RemoveEventHandler(r); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}

func (i *namespacedInformer) GetStore() cache.Store { return i.GetIndexer() }

func (i *namespacedInformer) GetIndexer() cache.Indexer { return namespacedIndexer{i} }

// namespacedRegistration is one handler's registrations with the namespaces' informers.
type namespacedRegistration struct {
	regs map[string]cache.ResourceEventHandlerRegistration
}

// HasSynced tells whether the handler has been given every namespace's initial list.
func (r *namespacedRegistration) HasSynced() bool {
	for _, reg := range r.regs {
		if !reg.HasSynced() {
			return false
		}
	}
	return true
}

// serialHandler calls its handler for one event at a time: the namespaces' informers deliver
// their events from goroutines of their own, and a handler may count on a single informer's
// one-at-a-time delivery.
type serialHandler struct {
	mu   sync.Mutex
	next cache.ResourceEventHandler
}

func (h *serialHandler) OnAdd(obj interface{}, isInInitialList bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next.OnAdd(obj, isInInitialList)
}

func (h *serialHandler) OnUpdate(oldObj, newObj interface{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next.OnUpdate(oldObj, newObj)
}

func (h *serialHandler) OnDelete(obj interface{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next.OnDelete(obj)
}

// namespacedController is the controller a consumer may ask for: it tells whether the informer has
// synced; running is the Manager's.
type namespacedController struct{ i *namespacedInformer }

func (c namespacedController) Run(<-chan struct{})            {}
func (c namespacedController) RunWithContext(context.Context) {}
func (c namespacedController) HasSynced() bool                { return c.i.HasSynced() }
func (c namespacedController) LastSyncResourceVersion() string {
	return c.i.LastSyncResourceVersion()
}

// namespacedIndexer is the store of an informer over several namespaces: read-only, an object
// read from its namespace's store, lists and indexes concatenated (every namespace's store has the
// same indexers, and an object is in one of them only).
type namespacedIndexer struct{ i *namespacedInformer }

var errReadOnly = errors.New("the store of an informer over several namespaces is read-only")

func (x namespacedIndexer) Add(interface{}) error               { return errReadOnly }
func (x namespacedIndexer) Update(interface{}) error            { return errReadOnly }
func (x namespacedIndexer) Delete(interface{}) error            { return errReadOnly }
func (x namespacedIndexer) Replace([]interface{}, string) error { return errReadOnly }
func (x namespacedIndexer) Resync() error                       { return errReadOnly }
func (x namespacedIndexer) AddIndexers(cache.Indexers) error    { return errReadOnly }

// part is the store of one namespace's informer, if the namespace is one of the informer's.
func (x namespacedIndexer) part(ns string) (cache.Indexer, bool) {
	inf, ok := x.i.parts[ns]
	if !ok {
		return nil, false
	}
	return inf.GetIndexer(), true
}

// GetByKey reads the object from its namespace's store; an object of another namespace (or a
// cluster-scoped key) is absent.
func (x namespacedIndexer) GetByKey(key string) (interface{}, bool, error) {
	ns, _, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, false, err
	}
	idx, ok := x.part(ns)
	if !ok {
		return nil, false, nil
	}
	return idx.GetByKey(key)
}

func (x namespacedIndexer) Get(obj interface{}) (interface{}, bool, error) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return x.GetByKey(key)
}

func (x namespacedIndexer) List() []interface{} {
	out, _ := concat(x.stores("", ""), func(idx cache.Indexer) ([]interface{}, error) { return idx.List(), nil })
	return out
}

func (x namespacedIndexer) ListKeys() []string {
	out, _ := concat(x.stores("", ""), func(idx cache.Indexer) ([]string, error) { return idx.ListKeys(), nil })
	return out
}

// ByIndex reads the namespace index from that namespace's store only; other indexes from every
// namespace's store.
func (x namespacedIndexer) ByIndex(indexName, value string) ([]interface{}, error) {
	return concat(x.stores(indexName, value), func(idx cache.Indexer) ([]interface{}, error) { return idx.ByIndex(indexName, value) })
}

func (x namespacedIndexer) IndexKeys(indexName, value string) ([]string, error) {
	return concat(x.stores(indexName, value), func(idx cache.Indexer) ([]string, error) { return idx.IndexKeys(indexName, value) })
}

func (x namespacedIndexer) Index(indexName string, obj interface{}) ([]interface{}, error) {
	return concat(x.stores("", ""), func(idx cache.Indexer) ([]interface{}, error) { return idx.Index(indexName, obj) })
}

// stores are the namespaces' stores that may hold what an index lookup asks for: the one of the
// namespace looked up in the namespace index (none, for a namespace not watched), else all of them.
func (x namespacedIndexer) stores(indexName, value string) []cache.Indexer {
	if indexName == cache.NamespaceIndex {
		if idx, ok := x.part(value); ok {
			return []cache.Indexer{idx}
		}
		return nil
	}
	out := make([]cache.Indexer, 0, len(x.i.names))
	for _, ns := range x.i.names {
		out = append(out, x.i.parts[ns].GetIndexer())
	}
	return out
}

// concat concatenates what read returns of each store, in order; the first error stops it.
func concat[T any](stores []cache.Indexer, read func(cache.Indexer) ([]T, error)) ([]T, error) {
	var out []T
	for _, idx := range stores {
		items, err := read(idx)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

func (x namespacedIndexer) ListIndexFuncValues(indexName string) []string {
	seen := map[string]bool{}
	var out []string
	for _, idx := range x.stores("", "") {
		for _, v := range idx.ListIndexFuncValues(indexName) {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

func (x namespacedIndexer) GetIndexers() cache.Indexers {
	if len(x.i.names) == 0 {
		return cache.Indexers{}
	}
	return x.i.parts[x.i.names[0]].GetIndexer().GetIndexers()
}
