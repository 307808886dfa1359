package syncer

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// Key identifies one object to downsync. GVR is the upstream version of the resource when it is
// selected (the downstream one for leftovers), so events from both sides meet in one key.
type Key = framework.Key

// Controller is the downsync controller: one named, rate-limited queue and its workers.
type Controller struct {
	queue      *framework.Queue
	upClient   dynamic.Interface
	downClient dynamic.Interface
	up, down   *informermanager.Manager
	state      func() *snapshot
	opts       mapping.Options
	cfg        Config
	metrics    *metrics.Metrics

	// onLeftoverDeleted is called when an owned object is deleted downstream (set by the engine).
	onLeftoverDeleted func(schema.GroupResource)

	conflicts framework.ConflictLog
}

// NewController wires the downsync controller; it does no API I/O.
func NewController(cfg Config, ownerLabel string, up, down *informermanager.Manager, state func() *snapshot) *Controller {
	c := &Controller{
		upClient:   cfg.UpstreamDynamic,
		downClient: cfg.DownstreamDynamic,
		up:         up,
		down:       down,
		state:      state,
		opts:       mapping.Options{OwnerLabelValue: ownerLabel},
		cfg:        cfg,
		metrics:    cfg.Metrics,
		conflicts:  framework.ConflictLog{Verbosity: logging.Skip},
	}
	c.queue = framework.NewQueue(metrics.Downsync, cfg.Metrics.WorkqueueProvider(), c.process)
	return c
}

// Run starts the workers and blocks until ctx is done and they have exited.
func (c *Controller) Run(ctx context.Context, workers int) { c.queue.Run(ctx, workers) }

// handlerFor returns the event handler of one side's informer for a resource.
func (c *Controller) handlerFor(side string, gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	gr := gvr.GroupResource()
	downstream := side == Downstream
	enqueue := func(u *unstructured.Unstructured, why string) {
		st := c.state()
		if !st.downsyncs(gr) {
			return // an upsync-only resource
		}
		key := Key{GVR: st.canonicalGVR(gr, gvr), Namespace: u.GetNamespace(), Name: u.GetName()}
		klog.V(logging.Trace).Info("Enqueue", "key", key.String(), "side", side, "reason", why)
		c.queue.Add(key)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			u := framework.ObjectOf(obj)
			if u == nil {
				return
			}
			if downstream && gvr == namespaceGVR {
				// Objects waiting for this namespace can go now.
				c.enqueueNamespace(u.GetName())
			}
			if !downstream || mapping.OwnedDownstream(u) {
				enqueue(u, "added")
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, n := framework.ObjectOf(oldObj), framework.ObjectOf(newObj)
			if o == nil || n == nil || mapping.EqualApartFromStatus(o, n) {
				return // a status write (or a resync): not downsync's business
			}
			if downstream && !mapping.OwnedDownstream(o) && !mapping.OwnedDownstream(n) {
				return // an edge object (seen when the resource is also upsynced)
			}
			enqueue(n, "updated")
		},
		DeleteFunc: func(obj interface{}) {
			u := framework.ObjectOf(obj)
			if u == nil {
				return
			}
			enqueue(u, "deleted")
			if downstream {
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
	if !st.downsyncs(gr) {
		return
	}
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
