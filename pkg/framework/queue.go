package framework

import (
	"context"
	"fmt"
	"sort"
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

// Queue is a named, rate-limited work queue with its workers. It remembers when each key was
// first added since it was last processed successfully (for sync latency) and which keys are
// failing (for conditions).
type Queue struct {
	name    string
	queue   workqueue.TypedRateLimitingInterface[Key]
	process ProcessFunc

	mu       sync.Mutex
	observed map[Key]time.Time
	failures map[Key]string
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
		process:  process,
		observed: map[Key]time.Time{},
		failures: map[Key]string{},
	}
}

// Add enqueues a key now, as the result of an observed change.
func (q *Queue) Add(key Key) {
	q.mu.Lock()
	if _, ok := q.observed[key]; !ok {
		q.observed[key] = time.Now()
	}
	q.mu.Unlock()
	q.queue.Add(key)
}

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
	q.mu.Lock()
	observed, hasObserved := q.observed[key]
	delete(q.observed, key) // a change arriving while this runs is observed anew
	q.mu.Unlock()
	logger := klog.FromContext(ctx).WithValues("key", key.String())
	pctx := klog.NewContext(ctx, logger)
	if hasObserved {
		pctx = context.WithValue(pctx, observedKey{}, observed)
	}
	requeueAfter, err := q.process(pctx, key)
	q.mu.Lock()
	if err != nil {
		msg := err.Error()
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		q.failures[key] = msg
		if _, newer := q.observed[key]; hasObserved && !newer {
			q.observed[key] = observed // the change is still not applied
		}
	} else {
		delete(q.failures, key)
	}
	q.mu.Unlock()
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

type observedKey struct{}

// ObservedSince tells how long ago the change being processed was first observed (the first Add
// since the key was last processed), if it was.
func ObservedSince(ctx context.Context) (time.Duration, bool) {
	t, ok := ctx.Value(observedKey{}).(time.Time)
	if !ok {
		return 0, false
	}
	return time.Since(t), true
}

// Failures returns how many keys failed on their last attempt, and up to limit of them with their
// errors, sorted.
func (q *Queue) Failures(limit int) (int, []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]string, 0, len(q.failures))
	for k, msg := range q.failures {
		out = append(out, k.String()+": "+msg)
	}
	sort.Strings(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return len(q.failures), out
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

// ObserveLatency records on o the seconds since the change being processed was observed, if known.
// Controllers call it after the write that applied the change.
func ObserveLatency(ctx context.Context, o interface{ Observe(float64) }) {
	if d, ok := ObservedSince(ctx); ok {
		o.Observe(d.Seconds())
	}
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
