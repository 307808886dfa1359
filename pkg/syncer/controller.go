package syncer

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
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// Key identifies one object to downsync. GVR is the upstream version of the resource when it is
// selected (the downstream one for leftovers), so events from both sides meet in one key.
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

// Controller is the downsync controller: one named, rate-limited queue and its workers.
type Controller struct {
	queue      workqueue.TypedRateLimitingInterface[Key]
	upClient   dynamic.Interface
	downClient dynamic.Interface
	up, down   *informermanager.Manager
	state      func() *snapshot
	opts       mapping.Options
	cfg        Config
	metrics    *metrics.Metrics

	// onLeftoverDeleted is called when an owned object is deleted downstream (set by the engine).
	onLeftoverDeleted func(schema.GroupResource)

	conflictsMu sync.Mutex
	conflicts   map[Key]string // reported conflicts, so each is logged once at level 0
}

// NewController wires the downsync controller; it does no API I/O.
func NewController(cfg Config, ownerLabel string, up, down *informermanager.Manager, state func() *snapshot) *Controller {
	rl := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[Key](20*time.Millisecond, 5*time.Minute),
		&workqueue.TypedBucketRateLimiter[Key]{Limiter: rate.NewLimiter(rate.Limit(50), 500)},
	)
	return &Controller{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl,
			workqueue.TypedRateLimitingQueueConfig[Key]{Name: metrics.Downsync, MetricsProvider: cfg.Metrics.WorkqueueProvider()}),
		upClient:   cfg.UpstreamDynamic,
		downClient: cfg.DownstreamDynamic,
		up:         up,
		down:       down,
		state:      state,
		opts:       mapping.Options{OwnerLabelValue: ownerLabel},
		cfg:        cfg,
		metrics:    cfg.Metrics,
		conflicts:  map[Key]string{},
	}
}

// Run starts the workers and blocks until ctx is done and they have exited.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx).WithValues("controller", metrics.Downsync)
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, c.runWorker, time.Second)
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	logger.Info("Downsync workers stopped")
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	logger := klog.FromContext(ctx).WithValues("key", key.String())
	requeueAfter, err := c.process(klog.NewContext(ctx, logger), key)
	switch {
	case err != nil:
		logger.Error(err, "Downsync failed; will retry", "retries", c.queue.NumRequeues(key))
		c.queue.AddRateLimited(key)
	case requeueAfter > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, requeueAfter)
	default:
		c.queue.Forget(key)
	}
	return true
}

// handlerFor returns the event handler of one side's informer for a resource.
func (c *Controller) handlerFor(side string, gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	gr := gvr.GroupResource()
	enqueue := func(obj interface{}, why string) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		key := Key{GVR: c.state().canonicalGVR(gr, gvr), Namespace: u.GetNamespace(), Name: u.GetName()}
		klog.V(logging.Trace).Info("Enqueue", "key", key.String(), "side", side, "reason", why)
		c.queue.Add(key)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			enqueue(obj, "added")
			if side == Downstream && gvr == namespaceGVR {
				// Objects waiting for this namespace can go now.
				if u, ok := obj.(*unstructured.Unstructured); ok {
					c.enqueueNamespace(u.GetName())
				}
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, ok1 := oldObj.(*unstructured.Unstructured)
			n, ok2 := newObj.(*unstructured.Unstructured)
			if ok1 && ok2 && mapping.EqualApartFromStatus(o, n) {
				return // a status write (or a resync): not downsync's business
			}
			enqueue(newObj, "updated")
		},
		DeleteFunc: func(obj interface{}) {
			enqueue(obj, "deleted")
			if side == Downstream {
				c.leftoverDeleted(gr)
			}
		},
	}
}

// leftoverDeleted is set by the engine; see Syncer.leftoverDeleted.
func (c *Controller) leftoverDeleted(gr schema.GroupResource) {
	if c.onLeftoverDeleted != nil {
		c.onLeftoverDeleted(gr)
	}
}

// enqueueResource enqueues every object of a resource that either side's cache holds.
func (c *Controller) enqueueResource(gr schema.GroupResource) {
	st := c.state()
	for _, m := range []*informermanager.Manager{c.up, c.down} {
		for _, gvr := range m.Running() {
			if gvr.GroupResource() != gr {
				continue
			}
			if inf, ok := m.Informer(gvr); ok {
				canonical := st.canonicalGVR(gr, gvr)
				for _, k := range inf.GetStore().ListKeys() {
					ns, name, _ := cache.SplitMetaNamespaceKey(k)
					c.queue.Add(Key{GVR: canonical, Namespace: ns, Name: name})
				}
			}
		}
	}
}

// enqueueAll enqueues every object of every running informer.
func (c *Controller) enqueueAll() {
	seen := map[schema.GroupResource]bool{}
	for _, m := range []*informermanager.Manager{c.up, c.down} {
		for _, gvr := range m.Running() {
			if gr := gvr.GroupResource(); !seen[gr] {
				seen[gr] = true
				c.enqueueResource(gr)
			}
		}
	}
}

// enqueueNamespace enqueues the upstream objects in a namespace, for every selected resource.
func (c *Controller) enqueueNamespace(namespace string) {
	st := c.state()
	for gr, r := range st.resources {
		if !r.Upstream.Namespaced {
			continue
		}
		inf, ok := c.up.Informer(r.Upstream.GVR)
		if !ok {
			continue
		}
		keys, err := inf.GetIndexer().IndexKeys(cache.NamespaceIndex, namespace)
		if err != nil {
			continue
		}
		for _, k := range keys {
			_, name, _ := cache.SplitMetaNamespaceKey(k)
			c.queue.Add(Key{GVR: st.canonicalGVR(gr, r.Upstream.GVR), Namespace: namespace, Name: name})
		}
	}
}

// reportConflict logs a conflict with an unowned downstream object once at level 0 (then at Skip).
func (c *Controller) reportConflict(ctx context.Context, key Key, reason string) {
	c.conflictsMu.Lock()
	first := c.conflicts[key] != reason
	c.conflicts[key] = reason
	c.conflictsMu.Unlock()
	logger := klog.FromContext(ctx)
	msg := fmt.Sprintf("Not writing downstream: %s", reason)
	if first {
		logger.Error(nil, msg)
	} else {
		logger.V(logging.Skip).Info(msg)
	}
}

func (c *Controller) clearConflict(key Key) {
	c.conflictsMu.Lock()
	delete(c.conflicts, key)
	c.conflictsMu.Unlock()
}
