package mailboxes

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// sharedDiscovery is one side's discovery for every workspace's engine: read once, kept until some
// engine (a CRD or an APIBinding changed) or the controller's refresh marks it stale, so that a
// hundred engines resolving at once walk discovery once, not a hundred times. Engines keep their own
// cache on top (pkg/syncer), which passes its invalidations on (Invalidate).
type sharedDiscovery struct {
	discovery.DiscoveryInterface // for what the engines do not read through the cache

	mu     sync.Mutex
	stale  bool
	groups *metav1.APIGroupList
	byGV   map[string]*metav1.APIResourceList
}

func newSharedDiscovery(d discovery.DiscoveryInterface) *sharedDiscovery {
	return &sharedDiscovery{DiscoveryInterface: d, byGV: map[string]*metav1.APIResourceList{}}
}

// Invalidate makes the next reads go to the apiserver again.
func (d *sharedDiscovery) Invalidate() {
	d.mu.Lock()
	d.stale = true
	d.mu.Unlock()
}

// dropIfStale forgets what was read before an invalidation; d.mu is held.
func (d *sharedDiscovery) dropIfStale() {
	if d.stale {
		d.stale, d.groups, d.byGV = false, nil, map[string]*metav1.APIResourceList{}
	}
}

// ServerGroups is the group list, read once per invalidation (concurrent readers wait for one read).
func (d *sharedDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropIfStale()
	if d.groups != nil {
		return d.groups, nil
	}
	groups, err := d.DiscoveryInterface.ServerGroups()
	if err != nil {
		return nil, err
	}
	d.groups = groups
	return groups, nil
}

// ServerResourcesForGroupVersion is one group version's resources, read once per invalidation
// (reads are serialized: engines resolving at once wait for one read instead of each making it).
func (d *sharedDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropIfStale()
	if list, ok := d.byGV[gv]; ok {
		return list, nil
	}
	list, err := d.DiscoveryInterface.ServerResourcesForGroupVersion(gv)
	if err != nil {
		return nil, err
	}
	d.byGV[gv] = list
	return list, nil
}

// ServerGroupsAndResources walks the group versions through the cached reads above.
func (d *sharedDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return discovery.ServerGroupsAndResources(d)
}
