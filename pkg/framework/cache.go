package framework

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Informers gives a side's synced informers by GVR; informermanager.Manager implements it.
type Informers interface {
	Synced(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, bool)
}

// GetFromCache reads one object from an informer's store; nil when absent. An object the cache
// holds as a Compact is decoded anew, others are the cache's: callers must not mutate them.
func GetFromCache(inf cache.SharedIndexInformer, namespace, name string) (*unstructured.Unstructured, error) {
	k := name
	if namespace != "" {
		k = namespace + "/" + name
	}
	obj, exists, err := inf.GetIndexer().GetByKey(k)
	if err != nil || !exists {
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

// Cached reads one object from a side's synced informer for gvr: nil when absent. synced is false
// while that informer is not running or not synced yet (its sync enqueues everything again, so
// callers just return). The object is the cache's: callers must not mutate it.
func Cached(infs Informers, gvr schema.GroupVersionResource, namespace, name string) (obj *unstructured.Unstructured, synced bool, err error) {
	inf, ok := infs.Synced(gvr)
	if !ok {
		return nil, false, nil
	}
	obj, err = GetFromCache(inf, namespace, name)
	return obj, true, err
}

// ObjectOf unwraps an informer event's object (tombstones and Events included), decoding a Compact
// whole; nil if it is neither unstructured nor a Compact. An unstructured object is the cache's, an
// Event's object its handlers': neither is to be changed.
func ObjectOf(obj interface{}) *unstructured.Unstructured { return decoded(obj, false) }

// ForEachKey calls f with the namespace and name of every object in a side's synced informer for
// gvr; nothing when it is not synced (its sync enqueues everything again).
func ForEachKey(infs Informers, gvr schema.GroupVersionResource, f func(namespace, name string)) {
	inf, ok := infs.Synced(gvr)
	if !ok {
		return
	}
	for _, k := range inf.GetStore().ListKeys() {
		ns, name, _ := cache.SplitMetaNamespaceKey(k)
		f(ns, name)
	}
}
