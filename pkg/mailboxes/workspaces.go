package mailboxes

import (
	"context"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/syncer"
)

// reconcile brings one workspace's engine in line with its binding: a bound workspace has a running
// engine; an unbound one with an engine (or objects at the edge) is drained, and its engine stopped
// once drained.
func (c *Controller) reconcile(ctx context.Context, cluster logicalcluster.Name) error {
	logger := klog.FromContext(ctx).WithValues("workspace", cluster.String())
	present, bound := c.binding(cluster)
	c.mu.Lock()
	e := c.engines[cluster]
	_, marked := c.marked[cluster]
	c.mu.Unlock()
	act := decide(present, bound, e != nil, e != nil && e.draining.Load(), marked)
	if (act == drain || act == startDraining) && c.quiet(ctx, cluster) {
		return nil // looked at again once the binding has been gone for the quiet period
	}
	if present {
		c.mu.Lock()
		delete(c.unbound, cluster)
		c.mu.Unlock()
	}
	switch act {
	case restart: // bound again while draining: a fresh engine takes its objects back
		logger.Info("Workspace bound again; restarting its engine")
		c.stop(cluster, e)
		// What the drain had not deleted yet may be in resources the start-up scan knows nothing of:
		// the fresh engine scans the edge itself.
		return c.startEngine(ctx, cluster, false, true)
	case start:
		logger.Info("Workspace bound; starting its engine")
		return c.start(ctx, cluster, false)
	case drain:
		logger.Info("Workspace no longer bound; deleting its objects at the edge")
		e.draining.Store(true)
		e.s.Drain()
		c.updateGauges()
	case checkDrained:
		if e.s.Drained() {
			logger.Info("Workspace's objects deleted at the edge; stopping its engine")
			c.stop(cluster, e)
			c.mu.Lock()
			delete(c.marked, cluster)
			c.mu.Unlock()
		}
	case startDraining:
		logger.Info("Workspace not bound, but objects of it are at the edge; deleting them")
		return c.start(ctx, cluster, true)
	}
	return nil
}

// quiet tells whether a workspace whose binding is gone is still within the drain's quiet period,
// and if so asks for it again when the period ends.
func (c *Controller) quiet(ctx context.Context, cluster logicalcluster.Name) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unbound == nil {
		c.unbound = map[logicalcluster.Name]time.Time{}
	}
	since, seen := c.unbound[cluster]
	if !seen {
		since = time.Now()
		c.unbound[cluster] = since
	}
	left := c.cfg.DrainQuietPeriod - time.Since(since)
	if left <= 0 {
		return false
	}
	if !seen {
		klog.FromContext(ctx).Info("Workspace's binding gone; deleting its objects at the edge if it stays gone", "workspace", cluster.String(), "in", left.Round(time.Second).String())
	}
	c.queue.AddAfter(cluster.String(), left)
	return true
}

// action is what reconcile does for a workspace.
type action int

const (
	nothing       action = iota
	start                // run its engine
	restart              // stop its draining engine, run a fresh one
	drain                // make its engine delete what it wrote at the edge
	checkDrained         // stop its draining engine once it is done
	startDraining        // run an engine that deletes what is left of the workspace at the edge
)

// decide is reconcile's decision. present: the workspace has an APIBinding that is not being
// deleted; bound: one in phase Bound; running, draining: its engine; marked: objects of it were found
// at the edge at start. Only a binding that is gone drains: one that leaves phase Bound for a while
// (kcp rebinding after the export changed) deletes nothing.
func decide(present, bound, running, draining, marked bool) action {
	switch {
	case bound && running && draining:
		return restart
	case bound && !running:
		return start
	case present:
		return nothing // served, not bound yet, or not Bound for now
	case running && !draining:
		return drain
	case running:
		return checkDrained
	case marked:
		return startDraining
	}
	return nothing
}

// start runs the engine of a workspace (draining from the start when drain).
func (c *Controller) start(ctx context.Context, cluster logicalcluster.Name, drain bool) error {
	return c.startEngine(ctx, cluster, drain, false)
}

// startEngine runs the engine of a workspace; with rescan it looks for its objects at the edge
// itself instead of taking the start-up scan's findings.
func (c *Controller) startEngine(ctx context.Context, cluster logicalcluster.Name, drain, rescan bool) error {
	cfg := c.cfg.Engine
	cfg.UpstreamDynamic = c.client.Cluster(cluster.Path())
	cfg.UpstreamDiscovery = c.upDisc
	cfg.DownstreamDynamic = EdgeClient(c.cfg.Downstream, cluster.String(), c.namespaces)
	if c.cfg.DownstreamWrites != nil {
		cfg.DownstreamWrites = EdgeClient(c.cfg.DownstreamWrites, cluster.String(), c.namespaces)
	}
	cfg.DownstreamDiscovery = c.downDisc
	cfg.DiscoveryRefreshPeriod = 0 // the controller refreshes every engine at once (refreshDiscovery)
	cfg.UpstreamSource = upSource{hub: c.upHub, cluster: cluster}
	cfg.DownstreamSource = downSource{hub: c.downHub, cluster: cluster.String(), namespaces: c.namespaces}
	cfg.Cluster = cluster.String()
	cfg.Embedded = true
	if !rescan {
		c.mu.Lock()
		owned := c.marked[cluster] // found by the scan at start: the engine does not scan again
		c.mu.Unlock()
		cfg.DownstreamOwned = func() map[schema.GroupResource]schema.GroupVersionResource { return owned }
	}
	cfg.OnResolved = func() {
		c.queue.Add(cluster.String())
		c.updateGauges()
	}
	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("workspace", cluster.String())))
	var stopRecorder func()
	if c.cfg.NewRecorder != nil {
		wsCfg := rest.CopyConfig(c.vw)
		wsCfg.Host = c.vw.Host + cluster.Path().RequestPath()
		cfg.Recorder, stopRecorder = c.cfg.NewRecorder(runCtx, cluster, wsCfg)
	}
	s, err := syncer.New(cfg)
	if err != nil {
		cancel()
		if stopRecorder != nil {
			stopRecorder()
		}
		return err
	}
	if drain {
		s.Drain()
	}
	e := &engine{s: s, cancel: cancel, done: make(chan struct{})}
	e.draining.Store(drain)
	c.mu.Lock()
	c.engines[cluster] = e
	c.mu.Unlock()
	c.engineWG.Add(1)
	go func() {
		defer c.engineWG.Done()
		defer close(e.done)
		if stopRecorder != nil {
			defer stopRecorder()
		}
		if err := s.Run(runCtx); err != nil && runCtx.Err() == nil {
			klog.FromContext(runCtx).Error(err, "Workspace engine stopped")
		}
	}()
	c.updateGauges()
	return nil
}

// stop stops a workspace's engine and waits for it.
func (c *Controller) stop(cluster logicalcluster.Name, e *engine) {
	e.cancel()
	<-e.done
	c.mu.Lock()
	if c.engines[cluster] == e {
		delete(c.engines, cluster)
	}
	c.mu.Unlock()
	c.updateGauges()
}

func (c *Controller) stopAll() {
	c.mu.Lock()
	engines := c.engines
	c.engines = map[logicalcluster.Name]*engine{}
	c.mu.Unlock()
	for _, e := range engines {
		e.cancel()
	}
	for _, e := range engines {
		<-e.done
	}
}

// refreshDiscovery re-reads both sides' discovery for every engine every period (the engines'
// DiscoveryRefreshPeriod, which they then do not run themselves): one walk for all of them.
func (c *Controller) refreshDiscovery(ctx context.Context, period time.Duration) {
	framework.Every(ctx, period, func() {
		c.upDisc.Invalidate()
		c.downDisc.Invalidate()
		for _, e := range c.engineList() {
			e.s.Resolve()
		}
	})
}

// engineList is the engines running now.
func (c *Controller) engineList() []*engine {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*engine, 0, len(c.engines))
	for _, e := range c.engines {
		out = append(out, e)
	}
	return out
}
