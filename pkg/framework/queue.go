package framework

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/time/rate"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/problem"
)

// ProcessFunc handles one key. A non-nil error retries the key with backoff; a positive duration
// looks at it again after that delay for a reason that is not an error.
type ProcessFunc func(ctx context.Context, key Key) (requeueAfter time.Duration, err error)

// maxFailureLen bounds the error text kept per failing key.
const maxFailureLen = 300

// Queue is a named, rate-limited work queue with its workers. It remembers when each key was
// first added since it was last processed successfully (for sync latency) and which keys are
// failing (for conditions).
type Queue struct {
	name    string
	queue   workqueue.TypedRateLimitingInterface[Key]
	lanes   *lanes
	process ProcessFunc

	mu       sync.Mutex
	observed map[Key]time.Time
	peak     Peak // of observed
	failures map[Key]string
	// processing are the keys a worker processes now.
	processing map[Key]struct{}
}

// NewQueue makes a queue: per-key exponential backoff from 20ms to 5m on errors, and an overall
// token bucket (qps, burst) on retries.
func NewQueue(name string, provider workqueue.MetricsProvider, process ProcessFunc) *Queue {
	rl := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[Key](20*time.Millisecond, 5*time.Minute),
		&workqueue.TypedBucketRateLimiter[Key]{Limiter: rate.NewLimiter(rate.Limit(50), 500)},
	)
	l := newLanes()
	q := newBaseQueue(name, l, provider)
	return &Queue{
		name: name,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[Key]{Name: name, MetricsProvider: provider,
			DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[Key]{Name: name, MetricsProvider: provider, Queue: q})}),
		lanes:      l,
		process:    process,
		observed:   map[Key]time.Time{},
		failures:   map[Key]string{},
		processing: map[Key]struct{}{},
	}
}

// Add enqueues a key now, as the result of an observed change.
func (q *Queue) Add(key Key) {
	q.mu.Lock()
	if _, ok := q.observed[key]; !ok {
		q.observed[key] = time.Now()
		q.peak.Saw(len(q.observed))
	}
	q.mu.Unlock()
	q.queue.Add(key)
}

// AddWaited enqueues a key that waited for something that has now happened (its namespace at the
// edge), ahead of the keys not looked at yet: in an initial sync the objects of the first namespaces
// created then go before the creation of the other namespaces.
func (q *Queue) AddWaited(key Key) {
	q.lanes.markFirst(key)
	q.Add(key)
}

// Run starts the workers and blocks until ctx is done and they have exited.
func (q *Queue) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", q.name)
	ctx = klog.NewContext(ctx, logger)
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for q.processNext(ctx) {
				}
			}, time.Second)
		})
	}
	<-ctx.Done()
	q.queue.ShutDown()
	wg.Wait()
	logger.Info("Workers stopped")
}

// Len is how many keys wait to be processed (not counting those processing or waiting out a delay).
func (q *Queue) Len() int { return q.queue.Len() }

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
	q.processing[key] = struct{}{}
	if q.peak.Drained(len(q.observed)) {
		q.observed = Remade(q.observed) // give back what a backlog (an initial sync) took
	}
	q.mu.Unlock()

	logger := klog.FromContext(ctx).WithValues("key", key.String())
	pctx := klog.NewContext(ctx, logger)
	if hasObserved {
		pctx = context.WithValue(pctx, observedKey{}, observed)
	}
	requeueAfter, err := q.process(pctx, key)
	q.mu.Lock()
	delete(q.processing, key)
	q.mu.Unlock()

	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// Shutdown cancelled the request: not a failure, and nobody is left to retry it.
		logger.V(logging.Detail).Info("Sync interrupted by shutdown")
		q.queue.Forget(key)
		return true
	}
	repeated := q.recordOutcome(key, err, observed, hasObserved)
	switch {
	case err != nil:
		if repeated && Permanent(err) {
			// Refused for good, and said so already: retried quietly until the edge or the object changes.
			logger.V(logging.Skip).Info("Sync failed again; will retry", "err", err, "retries", q.queue.NumRequeues(key))
		} else {
			logger.Error(err, "Sync failed; will retry", "retries", q.queue.NumRequeues(key))
		}
		q.queue.AddRateLimited(key)
	case requeueAfter > 0:
		q.queue.Forget(key)
		q.queue.AddAfter(key, requeueAfter)
	default:
		q.queue.Forget(key)
	}
	return true
}

// recordOutcome remembers a failing key's error (or forgets it on success) and, when the change is
// still not applied, when it was observed. It tells whether the key failed the same way last time.
func (q *Queue) recordOutcome(key Key, err error, observed time.Time, hasObserved bool) (repeated bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err == nil {
		delete(q.failures, key)
		return false
	}
	msg := err.Error()
	if len(msg) > maxFailureLen {
		msg = msg[:maxFailureLen] + "..."
	}
	prev, had := q.failures[key]
	q.failures[key] = msg
	if _, newer := q.observed[key]; hasObserved && !newer {
		q.observed[key] = observed // the change is still not applied
	}
	return had && prev == msg
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

// Pending tells whether a key waits to be processed (added, not processed since), is being
// processed, or failed its last attempt: work on it is under way.
func (q *Queue) Pending(key Key) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, observed := q.observed[key]
	_, processing := q.processing[key]
	_, failing := q.failures[key]
	return observed || processing || failing
}

// Failures returns how many keys failed on their last attempt, and up to limit of them as problems
// (with their errors), sorted.
func (q *Queue) Failures(limit int) (int, []problem.Problem) {
	q.mu.Lock()
	keys := make([]Key, 0, len(q.failures))
	msgs := make(map[Key]string, len(q.failures))
	for k, msg := range q.failures {
		keys = append(keys, k)
		msgs[k] = msg
	}
	q.mu.Unlock()
	return len(keys), keyProblems(keys, limit, func(k Key) (problem.Kind, string) { return problem.SyncFailed, msgs[k] })
}

// RetryFailing processes every failing key again now, forgetting its backoff: called when a side
// that was unreachable answers again, so that what failed meanwhile does not wait minutes.
func (q *Queue) RetryFailing() int {
	q.mu.Lock()
	keys := make([]Key, 0, len(q.failures))
	for k := range q.failures {
		keys = append(keys, k)
	}
	q.mu.Unlock()
	for _, k := range keys {
		q.queue.Forget(k)
		q.queue.Add(k)
	}
	return len(keys)
}

// Prune forgets the failures of keys for which keep is false (their resource or object left the
// selection).
func (q *Queue) Prune(keep func(Key) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	PruneKeys(q.failures, keep)
}
