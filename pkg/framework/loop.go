package framework

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// NewLoopQueue is the queue of an engine-level loop (the engine's resolver, the workspaces of many
// mailboxes): named for the workqueue metrics, retrying a failing key with SlowRetry.
func NewLoopQueue[K comparable](name string, provider workqueue.MetricsProvider) workqueue.TypedRateLimitingInterface[K] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(SlowRetry[K](),
		workqueue.TypedRateLimitingQueueConfig[K]{Name: name, MetricsProvider: provider})
}

// SlowRetry is the backoff of a failing key of an engine-level loop: 500 ms, doubling up to a
// minute. What fails there (discovery, an engine's start) fails for a while; the objects' own
// queues (NewQueue) retry faster.
func SlowRetry[K comparable]() workqueue.TypedRateLimiter[K] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[K](500*time.Millisecond, time.Minute)
}

// RunLoop processes q's keys one at a time with process until ctx is done (then q shuts down), and
// returns once the loop has stopped: an error retries the key with q's rate limiter (process logs
// it); a positive delay looks at the key again after it; otherwise the key's backoff is forgotten.
func RunLoop[K comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[K], process func(context.Context, K) (time.Duration, error)) {
	var shutdown sync.WaitGroup
	defer shutdown.Wait()
	stop := make(chan struct{})
	defer close(stop)
	shutdown.Go(func() {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		q.ShutDown()
	})
	for {
		key, done := q.Get()
		if done {
			return
		}
		after, err := process(ctx, key)
		switch {
		case err != nil && ctx.Err() == nil:
			q.AddRateLimited(key)
		case after > 0 && ctx.Err() == nil:
			q.Forget(key)
			q.AddAfter(key, after)
		default:
			q.Forget(key)
		}
		q.Done(key)
	}
}
