package fakeinformers

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/framework"
)

// Informers maps GVRs to caches.
type Informers map[schema.GroupVersionResource]*Cache

// Cache implements framework.Informers.
func (s Informers) Cache(gvr schema.GroupVersionResource) (framework.Cache, bool) {
	c, ok := s[gvr]
	if !ok {
		return nil, false
	}
	return c, true
}

// Cache is a cache holding fixed objects.
type Cache struct {
	indexer cache.Indexer
}

var _ framework.Cache = &Cache{}

// With returns a cache holding the given objects (nil ones skipped), as they are.
func With(objs ...*unstructured.Unstructured) *Cache {
	c := &Cache{indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
	for _, o := range objs {
		if o != nil {
			_ = c.indexer.Add(o)
		}
	}
	return c
}

// Add puts an object in the cache (replacing one of its name).
func (c *Cache) Add(obj *unstructured.Unstructured) { _ = c.indexer.Update(obj) }

// Delete removes an object from the cache.
func (c *Cache) Delete(obj *unstructured.Unstructured) { _ = c.indexer.Delete(obj) }

// Get reads one object.
func (c *Cache) Get(namespace, name string) (interface{}, error) {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, err := c.indexer.GetByKey(key)
	if err != nil || !exists {
		return nil, err
	}
	return obj, nil
}

// List is the objects of a namespace, or all.
func (c *Cache) List(namespace string) []interface{} {
	if namespace == "" {
		return c.indexer.List()
	}
	objs, _ := c.indexer.ByIndex(cache.NamespaceIndex, namespace)
	return objs
}

// Keys are the keys of a namespace's objects, or of all.
func (c *Cache) Keys(namespace string) []string {
	if namespace == "" {
		return c.indexer.ListKeys()
	}
	keys, _ := c.indexer.IndexKeys(cache.NamespaceIndex, namespace)
	return keys
}

// AddHandler accepts a handler and never calls it.
func (c *Cache) AddHandler(cache.ResourceEventHandler) (framework.Registration, error) { return c, nil }

// RemoveHandler does nothing.
func (c *Cache) RemoveHandler(framework.Registration) error { return nil }

// Synced is always true.
func (c *Cache) Synced(string) bool { return true }

// Complete is always true.
func (c *Cache) Complete(string) bool { return true }
