package informermanager

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// part is one list and watch of a resource: cluster-wide, or in one namespace. It runs in a context
// of its own, so that an entry replaced by one with a changed namespace scope hands over the parts
// of the namespaces that stay.
type part struct {
	namespace string
	informer  *informer
	health    Health
	paced     bool // waits for a listing token before its first list
	cancel    context.CancelFunc
	done      chan struct{}
	released  sync.Once
	token     bool // holds a listing token
	// precount, when set, counts the objects before the first list, and tells whether to list them
	// (Spec.MaxObjects).
	precount func(ctx context.Context) bool
	// unlisted: precount kept the part from listing; it is not handed over (handOver). counted is
	// what precount counted it to bring.
	unlisted atomic.Bool
	counted  atomic.Int64
}

// inNamespaces accepts the objects of the given namespaces.
func inNamespaces(namespaces sets.Set[string]) func(interface{}) bool {
	return func(obj interface{}) bool {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		ns, _, err := cache.SplitMetaNamespaceKey(mustKey(obj))
		return err == nil && namespaces.Has(ns)
	}
}

// mustKey is an object's namespace/name key; "" when it has none.
func mustKey(obj interface{}) string {
	k, _ := cache.MetaNamespaceKeyFunc(obj)
	return k
}

// newPart makes the informer of a resource in one namespace, or cluster-wide for "" (all of it, or
// the objects accept keeps), its objects stored as transform makes them; early, if set, is given the
// objects of its initial lists as they stream in (withEarly).
func (m *Manager) newPart(gvr schema.GroupVersionResource, spec Spec, namespace string, early func(*unstructured.Unstructured),
	accept func(interface{}) bool, transform cache.TransformFunc) *part {
	p := &part{namespace: namespace}
	if early != nil && spec.MaxObjectBytes > 0 {
		all := early
		early = func(u *unstructured.Unstructured) { all(heldOf(spec, u)) } // as the cache will hold it
	}
	var l Lister = m.client.Resource(gvr)
	description := gvr.String()
	if namespace != "" {
		l = m.client.Resource(gvr).Namespace(namespace)
		description += " in namespace " + namespace
	}
	cfg := informerConfig{
		description: description,
		lw:          listWatch(l, spec, &p.health, supportsWatchList(m.client), early),
		health:      &p.health,
		indexers:    cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		transform:   transform,
		accept:      accept,
		onSynced:    func(first bool) { m.partSynced(gvr, p, first) },
	}
	if spec.MaxObjects > 0 {
		cfg.onGrown = func() { m.checkSize(gvr, p) }
		if spec.LabelSelector == "" && spec.FieldSelector == "" && accept == nil {
			p.precount = func(ctx context.Context) bool { return m.precount(ctx, gvr, p, l, spec.MaxObjects) }
		}
	}
	p.informer = newInformer(cfg)
	return p
}

// supportsWatchList tells whether a client may stream lists as watches (a fake cannot).
func supportsWatchList(client any) bool {
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{}, client)
	u, ok := lw.(interface{ IsWatchListSemanticsUnSupported() bool })
	return !ok || !u.IsWatchListSemanticsUnSupported()
}

// partSynced is told by a part's informer that its list is in: the Handlers are told (of its
// namespace, or all of the resource), and once the whole entry has synced the first time, its early
// objects may go.
func (m *Manager) partSynced(gvr schema.GroupVersionResource, p *part, first bool) {
	if first {
		p.releaseToken(m)
	}
	m.mu.Lock()
	e, ok := m.informers[gvr]
	stopped := m.stopped
	m.mu.Unlock()
	if stopped || !ok || m.handlers == nil || e.parts[p.namespace] != p {
		return
	}
	m.handlers.Synced(gvr, p.namespace)
	if e.earlyDone != nil && e.cache.Synced("") {
		e.earlyOnce.Do(e.earlyDone)
	}
}

// start runs a part's informer in a context of its own, unless it runs already; a paced part first
// waits for a listing token. m.mu is held.
func (m *Manager) start(p *part) {
	if p.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	p.cancel, p.done = cancel, make(chan struct{})
	go func() {
		defer close(p.done)
		defer p.releaseToken(m)
		if p.paced {
			select {
			case m.listing <- struct{}{}:
				p.token = true
			case <-ctx.Done():
				return
			}
		}
		if p.precount != nil && !p.precount(ctx) {
			return
		}
		p.informer.Run(ctx)
	}()
}

// releaseToken gives back the part's listing token, if it holds one.
func (p *part) releaseToken(m *Manager) {
	p.released.Do(func() {
		if p.paced {
			// The token is taken before the informer runs, and the informer syncs only once it runs.
			if p.token {
				<-m.listing
			}
		}
	})
}

// stop cancels a part's informer and waits for it to exit.
func (p *part) stop() {
	if p.cancel == nil {
		return
	}
	p.cancel()
	<-p.done
}

// logContext is the context of gvr's handlers, before Start too: its logger names the side and
// resource.
func (m *Manager) logContext(gvr schema.GroupVersionResource) context.Context {
	ctx := m.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return klog.NewContext(ctx, klog.FromContext(ctx).WithValues("side", m.side, "gvr", gvr.String()))
}
