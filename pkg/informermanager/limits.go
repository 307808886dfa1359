package informermanager

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
)

// Overflow is a resource found holding more objects than its Spec.MaxObjects.
type Overflow struct {
	// Count is the count found: the cache's, or, before a namespace's (or the cluster's) first list,
	// the apiserver's count of it added to what the resource's other namespaces hold.
	Count int64
	// Namespaces is the Spec's namespace scope the count is of ("": cluster-wide).
	Namespaces string
}

// precount counts a part's objects before its first list, and tells whether to list them: not when
// the resource is overfull already, nor when they and what the resource's other parts hold or were
// counted to bring are more than max (the resource is then overfull). A count the apiserver does not
// give, or that fails, lets the list go ahead: the cache's own count (checkSize) still holds. A part
// not listed is never handed over to another entry.
func (m *Manager) precount(ctx context.Context, gvr schema.GroupVersionResource, p *part, l framework.ObjectLister, max int) bool {
	n, known, err := framework.CountObjects(ctx, l)
	if err != nil || !known {
		if err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).V(logging.Detail).Info("Could not count the objects before listing them; listing", "gvr", gvr.String(), "namespace", p.namespace, "err", err)
		}
		return true
	}
	m.mu.Lock()
	var others int64
	e, ok := m.informers[gvr]
	if ok {
		others = e.heldBy(p)
	}
	full := ok && e.overfull > 0
	if !full && n+others <= int64(max) {
		p.counted.Store(n) // what it brings, for the other parts' counts until it has listed
		m.mu.Unlock()
		return true
	}
	m.mu.Unlock()
	klog.FromContext(ctx).V(logging.Change).Info("Not listing: more objects than the syncer holds of one resource", "gvr", gvr.String(),
		"namespace", p.namespace, "objects", n, "elsewhere", others, "limit", max)
	p.unlisted.Store(true)
	m.overfull(gvr, p, n+others)
	return false
}

// heldBy is what the entry's parts other than p hold, or, before they have listed, were counted to
// bring; m.mu is held.
func (e *entry) heldBy(p *part) int64 {
	var n int64
	for _, q := range e.parts {
		if q == p {
			continue
		}
		if q.informer.Synced("") {
			n += q.informer.Len()
		} else {
			n += q.counted.Load()
		}
	}
	return n
}

// checkSize marks the entry of a part overfull once its parts hold more than its Spec.MaxObjects.
func (m *Manager) checkSize(gvr schema.GroupVersionResource, p *part) {
	m.mu.Lock()
	e, ok := m.informers[gvr]
	if !ok || e.parts[p.namespace] != p || e.overfull > 0 {
		m.mu.Unlock()
		return
	}
	total := e.heldBy(nil)
	m.mu.Unlock()
	if total > int64(e.spec.MaxObjects) {
		m.overfull(gvr, p, total)
	}
}

// overfullAtStart marks a new entry overfull when the parts it took over from the entry it replaces
// hold more than its Spec.MaxObjects already, and tells whether it did; m.mu is held.
func (e *entry) overfullAtStart() bool {
	if e.spec.MaxObjects <= 0 || e.shared != nil {
		return false
	}
	if n := e.heldBy(nil); n > int64(e.spec.MaxObjects) {
		e.overfull, e.held = n, true
		return true
	}
	return false
}

// overfull marks the entry of a part overfull with n objects, and says so once (Options.Overfull).
// The entry's cache is unseen from then on (as Hold makes it), so that nothing is synced from it
// while the resolve it asks for takes the resource out.
func (m *Manager) overfull(gvr schema.GroupVersionResource, p *part, n int64) {
	m.mu.Lock()
	e, ok := m.informers[gvr]
	first := ok && e.parts[p.namespace] == p && e.overfull == 0
	if first {
		e.overfull, e.held = n, true
	}
	m.mu.Unlock()
	if first {
		m.toldOverfull(e)
	}
}

// toldOverfull drops what the handlers kept of an overfull entry's initial lists (nothing more is
// synced from it) and says it is overfull (Options.Overfull).
func (m *Manager) toldOverfull(e *entry) {
	if e.earlyDone != nil {
		e.earlyOnce.Do(e.earlyDone)
	}
	if m.opts.Overfull != nil {
		m.opts.Overfull(e.gvr)
	}
}

// Overfull are the resources found holding more objects than their Spec.MaxObjects.
func (m *Manager) Overfull() map[schema.GroupVersionResource]Overflow {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[schema.GroupVersionResource]Overflow{}
	for gvr, e := range m.informers {
		if e.overfull > 0 {
			out[gvr] = Overflow{Count: e.overfull, Namespaces: e.spec.Namespaces}
		}
	}
	return out
}
