package main

import (
	"context"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// statusRelayWorkers is the bare status relay's concurrency: the syncer's default --status-workers.
const statusRelayWorkers = 4

// startStatusRelay is the simplest status return: an edge informer on the workload's resource whose
// handler queues each object whose status changed, and workers that merge-patch that status onto the
// upstream object's status subresource, one request, nothing read first. Nothing else: no marks, no
// generations, no checks. It runs until the returned stop is called (and has returned).
func (b *bench) startStatusRelay(ctx context.Context, w workload) (stop func(), err error) {
	nsSet := map[string]bool{}
	for _, ns := range w.namespaces {
		nsSet[ns] = true
	}
	rctx, cancel := context.WithCancel(ctx)
	q := workqueue.NewTyped[types.NamespacedName]()
	f := dynamicinformer.NewDynamicSharedInformerFactory(b.down.dyn, 0)
	inf := f.ForResource(w.gvr).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj interface{}) {
		o, _ := oldObj.(*unstructured.Unstructured)
		n, ok := newObj.(*unstructured.Unstructured)
		if ok && o != nil && nsSet[n.GetNamespace()] && !reflect.DeepEqual(o.Object["status"], n.Object["status"]) {
			q.Add(types.NamespacedName{Namespace: n.GetNamespace(), Name: n.GetName()})
		}
	}}); err != nil {
		cancel()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); inf.Run(rctx.Done()) }()
	if !cache.WaitForCacheSync(rctx.Done(), inf.HasSynced) {
		cancel()
		wg.Wait()
		return nil, ctx.Err()
	}
	startWorkers(&wg, statusRelayWorkers, q, func(key types.NamespacedName) {
		if obj, exists, _ := inf.GetIndexer().GetByKey(key.Namespace + "/" + key.Name); exists {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				_ = mergePatch(rctx, b.up, w.gvr, key.Namespace, key.Name, map[string]interface{}{"status": u.Object["status"]}, "status")
			}
		}
	})
	return func() {
		q.ShutDown()
		cancel()
		wg.Wait()
	}, nil
}

// startWorkers runs n workers, counted in wg, that take the queue's items to do until it shuts down.
func startWorkers[T comparable](wg *sync.WaitGroup, n int, q workqueue.TypedInterface[T], do func(T)) {
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				do(item)
				q.Done(item)
			}
		}()
	}
}
