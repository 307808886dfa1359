package informermanager

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/framework"
)

// Scope is what one engine sees of a Hub's informer: the objects of its workspace, named as the
// engine names them (upstream: as they are; at the edge: in their upstream namespaces). Package
// mailboxes, which knows the workspaces, defines them.
type Scope interface {
	// Matches tells whether a hub object is the workspace's.
	Matches(obj *unstructured.Unstructured) bool
	// ToEngine is the object as the engine sees it: obj itself, or a translated copy (the hub's
	// object is never modified).
	ToEngine(obj *unstructured.Unstructured) *unstructured.Unstructured
	// StoreKey is the hub's store key of the object the engine keys as namespace/name.
	StoreKey(namespace, name string) string
	// Candidates are the hub's objects that may be the workspace's: all of them, or those in the
	// engine's namespace ns when inNamespace, read from the hub's store and its indexes.
	Candidates(idx cache.Indexer, inNamespace bool, ns string) ([]interface{}, error)
}

// view is an engine's cache over a hub's informer: its events and its reads hold the workspace's
// objects only, as the engine names them.
type view struct {
	inf   *informer
	scope Scope

	mu   sync.Mutex
	regs map[framework.Registration]bool
}

func newView(inf *informer, scope Scope) *view {
	return &view{inf: inf, scope: scope, regs: map[framework.Registration]bool{}}
}

var _ framework.Cache = &view{}

// Get reads an object of the workspace by the engine's namespace and name.
func (v *view) Get(namespace, name string) (interface{}, error) {
	obj, exists, err := v.inf.getByKey(v.scope.StoreKey(namespace, name))
	if err != nil || !exists {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !v.scope.Matches(u) {
		return nil, nil
	}
	return v.scope.ToEngine(u), nil
}

// List is the workspace's objects (in the engine's namespace, unless ""), translated.
func (v *view) List(namespace string) []interface{} {
	objs, err := v.scope.Candidates(v.inf.indexer, namespace != "", namespace)
	if err != nil {
		return nil
	}
	out := make([]interface{}, 0, len(objs))
	for _, obj := range objs {
		if u, ok := obj.(*unstructured.Unstructured); ok && v.scope.Matches(u) {
			out = append(out, v.scope.ToEngine(u))
		}
	}
	return out
}

// Keys are the engine's keys of the workspace's objects.
func (v *view) Keys(namespace string) []string {
	objs := v.List(namespace)
	keys := make([]string, 0, len(objs))
	for _, obj := range objs {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			keys = append(keys, key)
		}
	}
	return keys
}

// AddHandler adds a handler that hears of the workspace's objects only, translated.
func (v *view) AddHandler(h cache.ResourceEventHandler) (framework.Registration, error) {
	reg, err := v.inf.AddHandler(scopedHandler{scope: v.scope, next: h})
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	v.regs[reg] = true
	v.mu.Unlock()
	return reg, nil
}

// RemoveHandler removes a handler.
func (v *view) RemoveHandler(reg framework.Registration) error {
	v.mu.Lock()
	delete(v.regs, reg)
	v.mu.Unlock()
	return v.inf.RemoveHandler(reg)
}

// Synced tells whether the hub's informer has listed.
func (v *view) Synced(namespace string) bool { return v.inf.Synced(namespace) }

// Complete tells whether the hub's informer is complete.
func (v *view) Complete(namespace string) bool { return v.inf.Complete(namespace) }

// removeAll removes the handlers the engine left (a released share hears nothing more).
func (v *view) removeAll() {
	v.mu.Lock()
	regs := v.regs
	v.regs = map[framework.Registration]bool{}
	v.mu.Unlock()
	for reg := range regs {
		_ = v.inf.RemoveHandler(reg)
	}
}

// scopedHandler passes on the events of the workspace's objects, translated. An update that moves an
// object into or out of the workspace (its marks changed) is an add or a delete.
type scopedHandler struct {
	scope Scope
	next  cache.ResourceEventHandler
}

func (h scopedHandler) OnAdd(obj interface{}, isInInitialList bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok && h.scope.Matches(u) {
		h.next.OnAdd(h.scope.ToEngine(u), isInInitialList)
	}
}

func (h scopedHandler) OnUpdate(oldObj, newObj interface{}) {
	o, _ := oldObj.(*unstructured.Unstructured)
	n, _ := newObj.(*unstructured.Unstructured)
	if o == nil || n == nil {
		return
	}
	switch was, is := h.scope.Matches(o), h.scope.Matches(n); {
	case was && is:
		h.next.OnUpdate(h.scope.ToEngine(o), h.scope.ToEngine(n))
	case is:
		h.next.OnAdd(h.scope.ToEngine(n), false)
	case was:
		h.next.OnDelete(h.scope.ToEngine(o))
	}
}

func (h scopedHandler) OnDelete(obj interface{}) {
	switch t := obj.(type) {
	case *unstructured.Unstructured:
		if h.scope.Matches(t) {
			h.next.OnDelete(h.scope.ToEngine(t))
		}
	case cache.DeletedFinalStateUnknown:
		if u, ok := t.Obj.(*unstructured.Unstructured); ok && h.scope.Matches(u) {
			e := h.scope.ToEngine(u)
			key, _ := cache.MetaNamespaceKeyFunc(e)
			h.next.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: e})
		}
	}
}
