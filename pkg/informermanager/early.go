package informermanager

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EarlyHandlers are Handlers that also want a resource's objects as its initial list streams in,
// before the informer has synced: client-go's reflector keeps a streamed list (watch-list, served by
// kube-apiserver from v1.35 on by default) aside and hands it to the informer only once it is
// complete, so with 10,000 objects nothing would reach a handler for seconds.
type EarlyHandlers interface {
	// Early returns the function to call with each object of gvr's initial list as it arrives, or
	// nil when the resource's objects are not wanted early. The function must not keep obj, nor
	// change it (the informer stores it next): it copies what it keeps. ctx carries the logger.
	Early(ctx context.Context, gvr schema.GroupVersionResource) func(obj *unstructured.Unstructured)
	// EarlyDone tells that gvr's informer has synced or stopped: what Early kept may go.
	EarlyDone(gvr schema.GroupVersionResource)
}
