package informermanager

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
)

// precount counts a part's objects before its first list, and tells whether to list them: not when
// the apiserver says there are more than max (the resource is then overfull). A count the apiserver
// does not give, or that fails, lets the list go ahead: the cache's own count (checkSize) still holds.
func (m *Manager) precount(ctx context.Context, gvr schema.GroupVersionResource, p *part, l framework.ObjectLister, max int) bool {
	n, known, err := framework.CountObjects(ctx, l)
	if err != nil || !known || n <= int64(max) {
		if err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).V(logging.Detail).Info("Could not count the objects before listing them; listing", "gvr", gvr.String(), "namespace", p.namespace, "err", err)
		}
		return true
	}
	m.overfull(gvr, p, n)
	return false
}

// checkSize marks the entry of a part overfull once its parts hold more than its Spec.MaxObjects.
func (m *Manager) checkSize(gvr schema.GroupVersionResource, p *part) {
	m.mu.Lock()
	e, ok := m.informers[gvr]
	if !ok || e.parts[p.namespace] != p || e.overfull > 0 {
		m.mu.Unlock()
		return
	}
	total := 0
	for _, q := range e.parts {
		total += q.informer.Len()
	}
	m.mu.Unlock()
	if total > e.spec.MaxObjects {
		m.overfull(gvr, p, int64(total))
	}
}

// overfull marks the entry of a part overfull with n objects, and says so once (Options.Overfull).
func (m *Manager) overfull(gvr schema.GroupVersionResource, p *part, n int64) {
	m.mu.Lock()
	e, ok := m.informers[gvr]
	first := ok && e.parts[p.namespace] == p && e.overfull == 0
	if first {
		e.overfull = n
	}
	m.mu.Unlock()
	if first && m.opts.Overfull != nil {
		m.opts.Overfull(gvr)
	}
}

// Overfull are the resources found holding more objects than their Spec.MaxObjects, with the count
// found: the whole cache's, or one namespace's (or the cluster's) counted before its list.
func (m *Manager) Overfull() map[schema.GroupVersionResource]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[schema.GroupVersionResource]int64{}
	for gvr, e := range m.informers {
		if e.overfull > 0 {
			out[gvr] = e.overfull
		}
	}
	return out
}
