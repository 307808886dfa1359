package mailboxes

import (
	"fmt"
	"sort"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/syncer"
)

// Ready tells whether every bound workspace is served: the virtual workspace known, the bindings
// listed, and every workspace's engine ready.
func (c *Controller) Ready() error {
	c.mu.Lock()
	bindings := c.bindings
	engines := make(map[logicalcluster.Name]*engine, len(c.engines))
	for k, v := range c.engines {
		engines[k] = v
	}
	c.mu.Unlock()
	if bindings == nil || !bindings.Synced("") {
		return fmt.Errorf("waiting for the APIExportEndpointSlice %q and the workspaces' bindings", c.cfg.EndpointSlice)
	}
	names := make([]string, 0, len(engines))
	for k := range engines {
		names = append(names, k.String())
	}
	sort.Strings(names)
	for _, name := range names {
		e := engines[logicalcluster.Name(name)]
		if e.draining.Load() {
			continue
		}
		if err := e.s.Ready(); err != nil {
			return fmt.Errorf("workspace %s: %w", name, err)
		}
	}
	return nil
}

// countObjects sums objects_managed over the engines.
func (c *Controller) countObjects(add func(direction, resource string, n int)) {
	engines := c.engineList()
	type dr struct{ direction, resource string }
	sums := map[dr]int{}
	for _, e := range engines {
		e.s.ObjectCounts(func(direction, resource string, n int) { sums[dr{direction, resource}] += n })
	}
	for k, n := range sums {
		add(k.direction, k.resource, n)
	}
}

// updateGauges sets the workspace gauge and the shared informers' gauges.
func (c *Controller) updateGauges() {
	c.mu.Lock()
	syncing, draining := 0, 0
	for _, e := range c.engines {
		if e.draining.Load() {
			draining++
		} else {
			syncing++
		}
	}
	hubs := map[string]*informermanager.Hub{syncer.Upstream: c.upHub, syncer.Downstream: c.downHub}
	c.mu.Unlock()
	c.m.Workspaces.WithLabelValues(metrics.WorkspaceSyncing).Set(float64(syncing))
	c.m.Workspaces.WithLabelValues(metrics.WorkspaceDraining).Set(float64(draining))
	for side, h := range hubs {
		if h == nil {
			continue
		}
		running, synced := h.Counts()
		c.m.InformersRunning.WithLabelValues(side).Set(float64(running))
		c.m.InformersSynced.WithLabelValues(side).Set(float64(synced))
	}
}
