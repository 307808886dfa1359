package syncer

import (
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
)

// cachedDiscovery is one side's discovery, read once and kept until a resolve trigger (a CRD or an
// APIBinding changing, the refresh period) marks it stale: kcp serves no aggregated discovery, so
// every walk costs a request per group version.
type cachedDiscovery struct {
	cache    discovery.CachedDiscoveryInterface
	delegate discovery.DiscoveryInterface
	stale    atomic.Bool
}

func newCachedDiscovery(d discovery.DiscoveryInterface) *cachedDiscovery {
	return &cachedDiscovery{cache: memory.NewMemCacheClient(d), delegate: d}
}

// invalidator is a discovery client that caches too (one shared by several engines): an
// invalidation is passed on to it.
type invalidator interface{ Invalidate() }

// Invalidate makes the next read go to the apiserver again.
func (c *cachedDiscovery) Invalidate() {
	c.stale.Store(true)
	if i, ok := c.delegate.(invalidator); ok {
		i.Invalidate()
	}
}

// ServerGroupsAndResources serves from the cache unless it was invalidated since the last read.
func (c *cachedDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	if c.stale.Swap(false) {
		c.cache.Invalidate()
	}
	return c.cache.ServerGroupsAndResources()
}

// ServerResourcesForGroupVersion serves one group version from the same cache.
func (c *cachedDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return c.cache.ServerResourcesForGroupVersion(gv)
}
