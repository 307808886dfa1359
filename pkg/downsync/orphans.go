package downsync

import (
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// Orphans are the keys of edge objects this syncer owns whose upstream object is gone, as both
// sides' caches show while complete (no re-list under way), and whose key no processing is under
// way for: downsync should have deleted them. Objects kept on purpose (create-only, kept on delete)
// and objects being deleted are left out. The engine's audit processes them again.
func (c *Controller) Orphans() []framework.Key {
	if c.cfg.ReportOnly {
		return nil // their deletion is reported, not made, on purpose
	}
	var out []framework.Key
	for _, r := range c.cfg.Selection.Resources() {
		if r.Downstream.Empty() {
			continue
		}
		up, upOK := c.cfg.UpstreamInformers.Cache(r.Upstream)
		down, downOK := c.cfg.DownstreamInformers.Cache(r.Downstream)
		if !upOK || !downOK || !down.Complete("") {
			continue
		}
		for _, obj := range down.List("") {
			u := framework.MetaOf(obj)
			if u == nil || !mapping.OwnedDownstream(u) || !c.ours(u) || u.GetDeletionTimestamp() != nil || mapping.CreateOnly(u) || mapping.KeepOnDelete(u) {
				continue
			}
			key := framework.Key{GVR: r.KeyGVR(), Namespace: u.GetNamespace(), Name: r.Rename.UpName(u.GetName())}
			if !up.Complete(key.Namespace) || c.queue.Pending(key) {
				continue
			}
			if upObj, err := up.Get(key.Namespace, key.Name); err == nil && upObj == nil {
				out = append(out, key)
			}
		}
	}
	return out
}
