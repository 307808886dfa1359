// Package fakeinformers serves informers whose stores a unit test fills directly, for controllers
// that read through framework.Informers.
package fakeinformers

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Informers maps GVRs to informers that are never run; every one counts as synced.
type Informers map[schema.GroupVersionResource]cache.SharedIndexInformer

// Synced implements framework.Informers.
func (s Informers) Synced(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, bool) {
	inf, ok := s[gvr]
	return inf, ok
}

// With returns an unstarted informer whose store holds the given objects (nil ones skipped).
func With(objs ...*unstructured.Unstructured) cache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
	for _, o := range objs {
		if o != nil {
			_ = inf.GetIndexer().Add(o)
		}
	}
	return inf
}
