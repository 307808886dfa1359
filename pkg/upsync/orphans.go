package upsync

import (
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// Orphans are the keys of upstream copies this syncer provably made (mapping.UpsyncedByUs) whose
// edge object is gone, as both sides' caches show while complete, and whose key no processing is
// under way for: upsync should have deleted them. Copies being deleted are left out. The engine's
// audit processes them again.
func (c *Controller) Orphans() []framework.Key {
	var out []framework.Key
	for _, r := range c.cfg.Selection.Resources() {
		if !r.Selected {
			continue
		}
		up, upOK := c.cfg.UpstreamInformers.Cache(r.Upstream)
		down, downOK := c.cfg.DownstreamInformers.Cache(r.Downstream)
		if !upOK || !downOK || !up.Complete("") {
			continue
		}
		for _, obj := range up.List("") {
			u := framework.MetaOf(obj)
			if u == nil || mapping.ClaimOf(u, c.cfg.OwnerLabelValue) != mapping.UpsyncedByUs || u.GetDeletionTimestamp() != nil {
				continue
			}
			key := framework.Key{GVR: r.Upstream, Namespace: u.GetNamespace(), Name: u.GetName()}
			if !down.Complete(key.Namespace) || c.queue.Pending(key) {
				continue
			}
			if edge, err := down.Get(key.Namespace, r.Rename.DownName(key.Name)); err == nil && edge == nil {
				out = append(out, key)
			}
		}
	}
	return out
}
