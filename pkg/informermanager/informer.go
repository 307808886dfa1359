package informermanager

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/framework"
)

// informer lists and watches one resource with client-go's Reflector into a store of its own, and
// tells its handlers what changed. It does what the syncer used of client-go's SharedIndexInformer
// and says what that one does not: when a re-list has replaced the cache (Complete, and onSynced
// called again), so that what was decided while the cache was behind the apiserver is looked at
// again. The reflector calls the store methods (Add, Update, Delete, Replace) from one goroutine.
type informer struct {
	description string
	lw          cache.ListerWatcher
	keyFunc     cache.KeyFunc
	indexer     cache.Indexer
	health      *Health
	// transform is applied to every object before it is stored (nil: stored as it comes).
	transform cache.TransformFunc
	// accept, when set, keeps only the objects it accepts (a whole-cluster informer filtered to some
	// namespaces): the others are neither stored nor told.
	accept func(obj interface{}) bool
	// onSynced is told after the first list is in the store, and again after every re-list.
	onSynced func(first bool)
	// onGrown, when set, is told after the store has taken a new object or a list.
	onGrown func()

	mu        sync.Mutex // orders the store's changes with the handlers' registrations
	listeners map[*listener]bool
	synced    bool
	stopped   bool
	count     atomic.Int64 // objects stored; changed with mu held, read without (Len)
}

// informerConfig is what newInformer needs.
type informerConfig struct {
	description string
	lw          cache.ListerWatcher
	health      *Health
	keyFunc     cache.KeyFunc // cache.DeletionHandlingMetaNamespaceKeyFunc when nil
	indexers    cache.Indexers
	transform   cache.TransformFunc
	accept      func(obj interface{}) bool
	onSynced    func(first bool)
	onGrown     func()
}

func newInformer(cfg informerConfig) *informer {
	keyFunc := cfg.keyFunc
	if keyFunc == nil {
		keyFunc = cache.DeletionHandlingMetaNamespaceKeyFunc
	}
	indexers := cfg.indexers
	if indexers == nil {
		indexers = cache.Indexers{}
	}
	return &informer{description: cfg.description, lw: cfg.lw, keyFunc: keyFunc, indexer: cache.NewIndexer(keyFunc, indexers), health: cfg.health,
		transform: cfg.transform, accept: cfg.accept, onSynced: cfg.onSynced, onGrown: cfg.onGrown, listeners: map[*listener]bool{}}
}

var _ framework.Cache = &informer{}

// Run lists and watches until ctx is done, then stops the handlers' goroutines.
func (i *informer) Run(ctx context.Context) {
	r := cache.NewReflectorWithOptions(i.lw, &unstructured.Unstructured{}, i, cache.ReflectorOptions{Name: i.description, TypeDescription: i.description})
	r.RunWithContext(ctx)
	i.mu.Lock()
	i.stopped = true
	listeners := i.listeners
	i.listeners = map[*listener]bool{}
	i.mu.Unlock()
	for l := range listeners {
		l.stop()
	}
}

// Add stores an object the watch brought and tells the handlers.
func (i *informer) Add(obj interface{}) error { return i.Update(obj) }

// Update stores an object the watch brought (new or changed) and tells the handlers.
func (i *informer) Update(obj interface{}) error {
	obj, err := i.prepare(obj)
	if err != nil || obj == nil {
		return err
	}
	i.mu.Lock()
	old, exists, err := i.indexer.Get(obj)
	if err == nil {
		err = i.indexer.Update(obj)
	}
	switch {
	case err != nil:
	case exists:
		i.tell(notification{kind: updated, old: old, obj: obj})
	default:
		i.count.Add(1)
		i.tell(notification{kind: added, obj: obj})
	}
	i.mu.Unlock()
	if err == nil && !exists && i.onGrown != nil {
		i.onGrown()
	}
	return err
}

// Delete removes an object the watch says is gone and tells the handlers.
func (i *informer) Delete(obj interface{}) error {
	if i.accept != nil && !i.accept(obj) {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	old, exists, err := i.indexer.Get(obj)
	if err != nil || !exists {
		return err
	}
	if err := i.indexer.Delete(old); err != nil {
		return err
	}
	i.count.Add(-1)
	i.tell(notification{kind: deleted, obj: old})
	return nil
}

// Replace makes the store hold exactly a list's objects: those gone are told as deleted (as
// tombstones), new ones as added, the others as updated (the same resourceVersion when unchanged).
// The first list synces the informer; each later one (after a dropped watch) ends a re-list.
func (i *informer) Replace(list []interface{}, resourceVersion string) error {
	items := make([]interface{}, 0, len(list))
	for _, obj := range list {
		obj, err := i.prepare(obj)
		if err != nil {
			return err
		}
		if obj != nil {
			items = append(items, obj)
		}
	}
	i.mu.Lock()
	first := !i.synced
	news := make(map[string]bool, len(items))
	var tell []notification
	for _, obj := range items {
		key, err := i.key(obj)
		if err != nil {
			i.mu.Unlock()
			return err
		}
		news[key] = true
		if old, exists, _ := i.indexer.GetByKey(key); exists {
			tell = append(tell, notification{kind: updated, old: old, obj: obj})
		} else {
			tell = append(tell, notification{kind: added, obj: obj, initial: first})
		}
	}
	for _, key := range i.indexer.ListKeys() {
		if !news[key] {
			old, _, _ := i.indexer.GetByKey(key)
			tell = append(tell, notification{kind: deleted, obj: cache.DeletedFinalStateUnknown{Key: key, Obj: old}})
		}
	}
	if err := i.indexer.Replace(items, resourceVersion); err != nil {
		i.mu.Unlock()
		return err
	}
	for _, n := range tell {
		i.tell(n)
	}
	i.synced = true
	i.count.Store(int64(len(news)))
	i.mu.Unlock()
	i.health.replaced()
	if i.onGrown != nil {
		i.onGrown()
	}
	if i.onSynced != nil {
		i.onSynced(first)
	}
	return nil
}

// Resync does nothing: the syncer's informers never resync.
func (i *informer) Resync() error { return nil }

// prepare is the object as stored: transformed; nil when it is not accepted.
func (i *informer) prepare(obj interface{}) (interface{}, error) {
	if i.accept != nil && !i.accept(obj) {
		return nil, nil
	}
	if i.transform == nil {
		return obj, nil
	}
	return i.transform(obj)
}

func (i *informer) key(obj interface{}) (string, error) { return i.keyFunc(obj) }

// tell queues a notification for every handler; i.mu is held.
func (i *informer) tell(n notification) {
	for l := range i.listeners {
		l.push(n)
	}
}

// Get reads one object by namespace and name.
func (i *informer) Get(namespace, name string) (interface{}, error) {
	obj, exists, err := i.indexer.GetByKey(objectKey(namespace, name))
	if err != nil || !exists {
		return nil, err
	}
	return obj, nil
}

// getByKey reads one object by its store key (a cluster-aware one, in a hub).
func (i *informer) getByKey(key string) (interface{}, bool, error) { return i.indexer.GetByKey(key) }

// List is every object, or those of one namespace.
func (i *informer) List(namespace string) []interface{} {
	if namespace == "" {
		return i.indexer.List()
	}
	objs, _ := i.indexer.ByIndex(cache.NamespaceIndex, namespace)
	return objs
}

// Len is how many objects the store holds.
func (i *informer) Len() int64 { return i.count.Load() }

// Keys are the store keys of every object, or of those of one namespace.
func (i *informer) Keys(namespace string) []string {
	if namespace == "" {
		return i.indexer.ListKeys()
	}
	keys, _ := i.indexer.IndexKeys(cache.NamespaceIndex, namespace)
	return keys
}

// AddHandler adds an event handler, first told every object stored, as added.
func (i *informer) AddHandler(h cache.ResourceEventHandler) (framework.Registration, error) {
	l := newListener(h)
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopped {
		l.stop()
		return l, nil
	}
	for _, obj := range i.indexer.List() {
		l.push(notification{kind: added, obj: obj, initial: true})
	}
	i.listeners[l] = true
	return l, nil
}

// RemoveHandler removes a handler and waits until it is called no more: never from one of the
// handler's own events (framework.Cache), which it would wait for.
func (i *informer) RemoveHandler(r framework.Registration) error {
	l, ok := r.(*listener)
	if !ok {
		return errNotOurs(r)
	}
	i.mu.Lock()
	delete(i.listeners, l)
	i.mu.Unlock()
	l.stop()
	return nil
}

// Synced tells whether the first list is in the store (whatever the namespace).
func (i *informer) Synced(string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.synced
}

// Complete tells whether the store is synced and holds the apiserver's state, as far as the watch
// goes: not while a dropped watch is being re-established or a re-list is under way.
func (i *informer) Complete(namespace string) bool {
	return i.Synced(namespace) && i.health.current()
}
