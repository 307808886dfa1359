package syncer

import (
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
)

// Discovery is one side's discovery, cached (client-go's memory cache: kcp serves no aggregated
// discovery, so a walk costs a request per group version) and read again only after an
// invalidation. Invalidate only marks it stale, so an event handler never waits on a walk under
// way, and any number of invalidations before the next read cost one walk: engines sharing one
// (many workspaces) all invalidate on the same CRD event and walk once.
type Discovery struct {
	discovery.CachedDiscoveryInterface
	stale atomic.Bool
}

// NewDiscovery caches d.
func NewDiscovery(d discovery.DiscoveryInterface) *Discovery {
	return &Discovery{CachedDiscoveryInterface: memory.NewMemCacheClient(d)}
}

// Invalidate makes the next read go to the apiserver again.
func (d *Discovery) Invalidate() { d.stale.Store(true) }

// fresh drops the cache if it was invalidated since the last read.
func (d *Discovery) fresh() discovery.CachedDiscoveryInterface {
	if d.stale.Swap(false) {
		d.CachedDiscoveryInterface.Invalidate()
	}
	return d.CachedDiscoveryInterface
}

// ServerGroupsAndResources serves both sides' walks from the cache.
func (d *Discovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return d.fresh().ServerGroupsAndResources()
}

// ServerGroups serves the group list from the cache.
func (d *Discovery) ServerGroups() (*metav1.APIGroupList, error) {
	return d.fresh().ServerGroups()
}

// ServerResourcesForGroupVersion serves one group version from the cache.
func (d *Discovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return d.fresh().ServerResourcesForGroupVersion(gv)
}
