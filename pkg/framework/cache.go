package framework

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Cache is one resource's informer cache on one side, as the syncer's readers use it: objects by
// name and by namespace, event handlers, and how far the cache can be trusted. informermanager
// implements it (an informer of the whole cluster or of some namespaces, a workspace's view of a
// shared one); fakeinformers does for unit tests.
type Cache interface {
	// Get is the object namespace/name ("" for a cluster-scoped one) as the cache holds it (a
	// Compact, or an unstructured object its readers must not change); nil when absent.
	Get(namespace, name string) (interface{}, error)
	// List is every object of a namespace, or of all for "".
	List(namespace string) []interface{}
	// Keys are the keys (namespace/name, or name) of every object of a namespace, or of all for "".
	Keys(namespace string) []string
	// AddHandler adds an event handler; it is first given every object the cache holds, as added
	// (in its initial list). Events reach a handler one at a time, in order.
	AddHandler(h cache.ResourceEventHandler) (Registration, error)
	// RemoveHandler removes a handler; it is called no more once this returns. It waits for the
	// event the handler may be handling to end, so a handler must never remove itself (nor call
	// anything that does) from one of its own events: that waits for ever.
	RemoveHandler(r Registration) error
	// Synced tells whether the objects of a namespace (of every namespace for "") have been listed:
	// an object absent from the cache then does not exist, as far as the last list knew.
	Synced(namespace string) bool
	// Complete tells whether the cache is synced and no re-list is under way: after a dropped watch
	// the cache may miss objects and changes until the re-list that follows has replaced it.
	Complete(namespace string) bool
}

// Registration is an event handler's registration with a Cache, for RemoveHandler.
type Registration interface{}

// Informers gives a side's caches by GVR; informermanager.Manager implements it.
type Informers interface {
	// Cache is the cache of gvr while its informer runs (and is not about to be replaced); whether
	// it has synced is the Cache's to say.
	Cache(gvr schema.GroupVersionResource) (Cache, bool)
}

// GetFromCache reads one object from a cache; nil when absent. An object the cache holds as a
// Compact is decoded anew, others are the cache's: callers must not mutate them.
func GetFromCache(c Cache, namespace, name string) (*unstructured.Unstructured, error) {
	obj, err := c.Get(namespace, name)
	if err != nil || obj == nil {
		return nil, err
	}
	switch t := obj.(type) {
	case *unstructured.Unstructured:
		return t, nil
	case *Compact:
		return t.Object()
	}
	return nil, fmt.Errorf("unexpected %T in cache", obj)
}

// Cached reads one object from a side's cache of gvr: nil when absent. synced is false while that
// informer is not running or the object's namespace not listed yet (its sync enqueues everything
// again, so callers just return). The object is the cache's: callers must not mutate it.
func Cached(infs Informers, gvr schema.GroupVersionResource, namespace, name string) (obj *unstructured.Unstructured, synced bool, err error) {
	c, ok := SyncedCache(infs, gvr, namespace)
	if !ok {
		return nil, false, nil
	}
	obj, err = GetFromCache(c, namespace, name)
	return obj, true, err
}

// SyncedCache is a side's cache of gvr when it runs and has listed namespace (everything for "").
func SyncedCache(infs Informers, gvr schema.GroupVersionResource, namespace string) (Cache, bool) {
	c, ok := infs.Cache(gvr)
	if !ok || !c.Synced(namespace) {
		return nil, false
	}
	return c, true
}

// ObjectOf unwraps an informer event's object (tombstones and Events included), decoding a Compact
// whole; nil if it is neither unstructured nor a Compact. An unstructured object is the cache's, an
// Event's object its handlers': neither is to be changed.
func ObjectOf(obj interface{}) *unstructured.Unstructured { return decoded(obj, false) }

// ForEachKey calls f with the namespace and name of every listed object of a side's cache of gvr, in
// one namespace or in all (""); nothing of a namespace not listed yet (its own sync enqueues it).
func ForEachKey(infs Informers, gvr schema.GroupVersionResource, namespace string, f func(namespace, name string)) {
	c, listed, ok := Listed(infs, gvr, namespace)
	if !ok {
		return
	}
	for _, k := range c.Keys(namespace) {
		ns, name, _ := cache.SplitMetaNamespaceKey(k)
		if listed(ns) {
			f(ns, name)
		}
	}
}

// Listed is a side's cache of gvr for a walk of one namespace or of all (""), and which namespaces
// of it have been listed. A resource watched namespace by namespace lists them one at a time: a walk
// of all of them, when one side syncs, must still reach the other side's namespaces listed so far,
// or a key passed over earlier (because the first side had not synced then) waits for no sync at
// all. ok is false when the cache does not run, or namespace (not "") has not been listed.
func Listed(infs Informers, gvr schema.GroupVersionResource, namespace string) (c Cache, listed func(namespace string) bool, ok bool) {
	c, ok = infs.Cache(gvr)
	switch {
	case !ok:
		return nil, nil, false
	case c.Synced(namespace):
		return c, func(string) bool { return true }, true
	case namespace != "":
		return nil, nil, false
	}
	return c, func(ns string) bool { return ns != "" && c.Synced(ns) }, true
}
