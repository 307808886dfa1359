package downsync

import (
	"context"

	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/selection"
)

// EarlyLimit is how many upstream objects the controller keeps at most from initial lists still
// streaming in. Objects past it are written once their informer has synced, as all are without
// early objects; the limit bounds the extra copy (a few MiB) while the first objects are written.
const EarlyLimit = 1000

// early holds copies of upstream objects streamed in before their informer synced, so that writing
// starts while a long initial list is still arriving: the first object of 10,000 reaches the edge in
// milliseconds instead of after the whole list. Only creates and updates are made from it: an
// object's absence upstream is known only once the cache is complete, so nothing is deleted early.
type early struct {
	mu   sync.Mutex
	n    int
	objs map[schema.GroupVersionResource]map[string]*unstructured.Unstructured // by namespace/name
}

func newEarly() *early {
	return &early{objs: map[schema.GroupVersionResource]map[string]*unstructured.Unstructured{}}
}

// full tells whether the limit is reached (add would refuse).
func (e *early) full() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n >= EarlyLimit
}

// add keeps a copy of obj; false when the limit is reached.
func (e *early) add(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n >= EarlyLimit {
		return false
	}
	m := e.objs[gvr]
	if m == nil {
		m = map[string]*unstructured.Unstructured{}
		e.objs[gvr] = m
	}
	k := earlyKey(obj.GetNamespace(), obj.GetName())
	if _, ok := m[k]; !ok {
		e.n++
	}
	c := obj.DeepCopy()
	c.SetManagedFields(nil)
	m[k] = c
	return true
}

func (e *early) get(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.objs[gvr][earlyKey(namespace, name)]
}

// drop forgets what was kept of gvr.
func (e *early) drop(gvr schema.GroupVersionResource) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n -= len(e.objs[gvr])
	delete(e.objs, gvr)
}

// inNamespace lists the names kept of each resource in a namespace.
func (e *early) inNamespace(namespace string, f func(gvr schema.GroupVersionResource, name string)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for gvr, m := range e.objs {
		for _, o := range m {
			if o.GetNamespace() == namespace {
				f(gvr, o.GetName())
			}
		}
	}
}

func earlyKey(namespace, name string) string { return namespace + "/" + name }

// Early returns what to do with each upstream object of gvr streamed in before its informer synced:
// keep a copy and enqueue its key, so that it is created at the edge without waiting for the rest of
// the list. Downstream objects are not wanted early (their absence, which a create needs to know,
// shows only in a synced cache). Its enqueues are logged with ctx's logger.
func (c *Controller) Early(ctx context.Context, gvr schema.GroupVersionResource) func(*unstructured.Unstructured) {
	logger := klog.FromContext(ctx)
	return func(obj *unstructured.Unstructured) {
		if c.early.full() {
			return // the cheap test first: it holds for most objects of a long list
		}
		if _, synced := framework.SyncedCache(c.cfg.UpstreamInformers, gvr, ""); synced {
			return // a relist of a synced informer: its events come as usual
		}
		r, ok := c.cfg.Selection.Resource(gvr.GroupResource())
		if !ok || r.Upstream != gvr || obj.GetDeletionTimestamp() != nil || !c.cfg.Selection.Matches(selection.ObjectOf(gvr.GroupResource(), obj)) {
			return // only what may be written counts towards the limit (a shared upstream holds others' objects)
		}
		if !c.early.add(gvr, obj) {
			return
		}
		key := framework.Key{GVR: r.KeyGVR(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
		logger.V(logging.Trace).Info("Enqueue", "key", key.String(), "reason", "streamed in before the cache synced")
		c.queue.Add(key)
	}
}

// EarlyDone forgets the early objects of gvr: its informer has synced (or stopped).
func (c *Controller) EarlyDone(gvr schema.GroupVersionResource) { c.early.drop(gvr) }
