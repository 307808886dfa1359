package framework

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Key identifies one object of one resource. Controllers choose which side's version the GVR names
// so that events from both sides for one object meet in one key.
type Key struct {
	GVR       schema.GroupVersionResource
	Namespace string
	Name      string
}

func (k Key) String() string {
	if k.Namespace == "" {
		return k.GVR.String() + " " + k.Name
	}
	return k.GVR.String() + " " + k.Namespace + "/" + k.Name
}

// ProcessFunc handles one key. A non-nil error retries the key with backoff; a positive duration
// looks at it again after that delay for a reason that is not an error.
type ProcessFunc func(ctx context.Context, key Key) (requeueAfter time.Duration, err error)

// Queue is a named, rate-limited work queue with its workers.
type Queue struct {
	name    string
	queue   workqueue.TypedRateLimitingInterface[Key]
	process ProcessFunc
}

// NewQueue makes a queue: per-key exponential backoff from 20ms to 5m on errors, and an overall
// token bucket (qps, burst) on retries.
func NewQueue(name string, provider workqueue.MetricsProvider, process ProcessFunc) *Queue {
	rl := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[Key](20*time.Millisecond, 5*time.Minute),
		&workqueue.TypedBucketRateLimiter[Key]{Limiter: rate.NewLimiter(rate.Limit(50), 500)},
	)
	return &Queue{
		name: name,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl,
			workqueue.TypedRateLimitingQueueConfig[Key]{Name: name, MetricsProvider: provider}),
		process: process,
	}
}

// Add enqueues a key now.
func (q *Queue) Add(key Key) { q.queue.Add(key) }

// AddAfter enqueues a key after a delay.
func (q *Queue) AddAfter(key Key, d time.Duration) { q.queue.AddAfter(key, d) }

// Len is the number of keys waiting.
func (q *Queue) Len() int { return q.queue.Len() }

// Run starts the workers and blocks until ctx is done and they have exited.
func (q *Queue) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx).WithValues("controller", q.name)
	ctx = klog.NewContext(ctx, logger)
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for q.processNext(ctx) {
				}
			}, time.Second)
		}()
	}
	<-ctx.Done()
	q.queue.ShutDown()
	wg.Wait()
	logger.Info("Workers stopped")
}

// ShutDown stops the queue; Run's workers return.
func (q *Queue) ShutDown() { q.queue.ShutDown() }

func (q *Queue) processNext(ctx context.Context) bool {
	key, shutdown := q.queue.Get()
	if shutdown {
		return false
	}
	defer q.queue.Done(key)
	logger := klog.FromContext(ctx).WithValues("key", key.String())
	requeueAfter, err := q.process(klog.NewContext(ctx, logger), key)
	switch {
	case err != nil:
		logger.Error(err, "Sync failed; will retry", "retries", q.queue.NumRequeues(key))
		q.queue.AddRateLimited(key)
	case requeueAfter > 0:
		q.queue.Forget(key)
		q.queue.AddAfter(key, requeueAfter)
	default:
		q.queue.Forget(key)
	}
	return true
}

// GetFromCache reads one object from an informer's store; nil when absent. It returns the cache's
// object: callers must not mutate it.
func GetFromCache(inf cache.SharedIndexInformer, namespace, name string) (*unstructured.Unstructured, error) {
	k := name
	if namespace != "" {
		k = namespace + "/" + name
	}
	obj, exists, err := inf.GetIndexer().GetByKey(k)
	if err != nil || !exists {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected %T in cache", obj)
	}
	return u, nil
}

// ObjectOf unwraps an informer event's object (tombstones included); nil if it is not unstructured.
func ObjectOf(obj interface{}) *unstructured.Unstructured {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

// Informers gives a side's synced informers by GVR; informermanager.Manager implements it.
type Informers interface {
	Synced(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, bool)
}
