package informermanager

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
)

// Spec says how to watch one resource. It is comparable: a changed Spec is a changed informer.
type Spec struct {
	// LabelSelector restricts the informer to matching objects; empty means all.
	LabelSelector string
	// FieldSelector restricts the informer to objects whose fields match; empty means all.
	FieldSelector string
	// Namespaces, when set, restricts the informer to the objects of these namespaces, as
	// NamespaceScope writes them (sorted names joined by commas): the Manager lists and watches each
	// namespace through its namespaced path, and shows them as one cache; past Options.MaxNamespaces
	// namespaces, one whole-cluster list and watch whose objects of other namespaces are dropped
	// (where Options.ClusterWide allows). Empty means cluster-wide. A Source is never given it.
	Namespaces string
	// AppliedBy, when set, makes the cache slim (mapping.Slim): it keeps each object's metadata,
	// status and the digest of the fields this field manager owns (its apply entry, and the update
	// entry of its plain create), not its content. For the edge objects only the syncer writes and
	// nothing reads in full (downsynced, not upsynced).
	AppliedBy string
	// Manager, when set, is the field manager of the syncer's writes to these objects: an object it
	// made by a plain create keeps that manager's update entry, without its fields, in the cache
	// (mapping.CreatedEntries; a slim cache keeps it for AppliedBy), for downsync to hand the entry's
	// fields to its apply entry before its first apply.
	Manager string
	// Signals makes the cache keep what a Watch of kind Signals needs (slimSignal).
	Signals bool
	// MaxObjectBytes, when positive, makes the cache keep an object whose JSON is larger as a
	// mapping.TooLargeStub only: a mailbox cannot make the syncer hold more of one object.
	MaxObjectBytes int
	// MaxObjects, when positive, is how many objects the cache should hold at most: past it the
	// resource is overfull (Manager.Overfull), and a namespace (or the cluster) counted over it before
	// its first list is not listed.
	MaxObjects int
}

// Handlers builds the event handler for a resource's informer, and is told when its objects are listed.
type Handlers interface {
	// HandlerFor builds the handler of gvr's informer; ctx carries the logger (side, resource) its
	// events are logged with.
	HandlerFor(ctx context.Context, gvr schema.GroupVersionResource) cache.ResourceEventHandler
	// Synced is told that a resource's objects are listed: those of one namespace (of a resource
	// watched namespace by namespace) or all of them (""). It is told first when the informer has
	// listed, then again after every re-list (a dropped watch listed anew): what was decided while the
	// cache was behind may be wrong, and everything it holds may be looked at again.
	Synced(gvr schema.GroupVersionResource, namespace string)
}

// Source shares informers among the Managers of several engines (one syncer serving several
// workspaces): a Manager with a Source runs no informer of its own, it takes a share of the
// source's, which shows it only its engine's objects. The Manager passes it no namespace scope
// (Spec.Namespaces): the source's informers are shared by every workspace, each engine's view
// already shows it only its own objects, and a scope per engine would split one shared informer
// into one per namespace set.
type Source interface {
	// Objects returns a share of the informer of gvr as spec asks, seeing this engine's objects.
	Objects(gvr schema.GroupVersionResource, spec Spec) Shared
	// APIs returns a share of an informer of objects that bring APIs (CRDs, APIBindings), seeing
	// every object that concerns this engine's APIs.
	APIs(gvr schema.GroupVersionResource) Shared
}

// Shared is an engine's share of an informer a Source runs.
type Shared interface {
	// Cache is the engine's view: its events and its store hold the engine's objects only, as the
	// engine names them.
	Cache() framework.Cache
	// Denied is the last list or watch the apiserver refused, until one succeeds again.
	Denied() error
	// Broken tells whether the list or watch dropped with an error and is not established again.
	Broken() bool
	// Release gives the share back; the source stops the informer once no share is left.
	Release()
}

// Options are a Manager's limits.
type Options struct {
	// MaxNamespaces is how many namespaces a resource may be scoped to and still be watched namespace
	// by namespace; past it, where ClusterWide allows, it is watched cluster-wide and filtered.
	// Zero: DefaultMaxNamespaces.
	MaxNamespaces int
	// ClusterWide tells whether the syncer may list and watch a resource cluster-wide (nil: never).
	ClusterWide func(gvr schema.GroupVersionResource) bool
	// ListingNamespaces is how many namespaces of resources watched namespace by namespace may be
	// listing their objects at once; the others wait their turn. Zero: DefaultListingNamespaces.
	ListingNamespaces int
	// Overfull, if set, is told when a resource has become overfull (Spec.MaxObjects).
	Overfull func(gvr schema.GroupVersionResource)
}

// DefaultMaxNamespaces and DefaultListingNamespaces are Options' defaults.
const (
	DefaultMaxNamespaces     = 50
	DefaultListingNamespaces = 25
)

// Manager runs the informers of one side.
type Manager struct {
	side     string
	client   dynamic.Interface
	source   Source // when set, informers are shares of the source's
	handlers Handlers
	opts     Options
	// listing holds a token for each namespace's informer listing its first list (Options.ListingNamespaces).
	listing chan struct{}

	mu        sync.Mutex
	ctx       context.Context
	stopped   bool // Stop was called: nothing starts again
	informers map[schema.GroupVersionResource]*entry
	// watched are the informers Watch runs for the engine's own needs.
	watched []*watchedEntry
	// tellers are the goroutines that tell the Handlers a resource synced (partSynced of a part
	// handed over listed, awaitShared); Stop waits for them.
	tellers sync.WaitGroup
}

// entry is one resource's cache and what makes it.
type entry struct {
	gvr  schema.GroupVersionResource
	spec Spec
	// whole: a cluster-wide informer filtered to Spec.Namespaces.
	whole  bool
	shared Shared // set when the cache is a share of a Source's
	cache  framework.Cache
	// parts are the lists and watches behind cache, by namespace ("" for cluster-wide); owned are
	// those the entry stops, all of them unless handed over to the entry that replaced it.
	parts, owned map[string]*part
	registration framework.Registration
	running      bool
	// earlyDone, when set, tells the handlers that what they kept of the initial lists may go.
	earlyDone func()
	earlyOnce sync.Once
	// held: Set will stop or replace the entry (Hold); until then Cache does not show it.
	held bool
	// overfull is the count of objects found over Spec.MaxObjects, once found (m.mu held).
	overfull int64
}

// New returns a Manager for one side; nothing runs until Start.
func New(side string, client dynamic.Interface, handlers Handlers, opts Options) *Manager {
	if opts.MaxNamespaces <= 0 {
		opts.MaxNamespaces = DefaultMaxNamespaces
	}
	if opts.ListingNamespaces <= 0 {
		opts.ListingNamespaces = DefaultListingNamespaces
	}
	return &Manager{side: side, client: client, handlers: handlers, opts: opts, listing: make(chan struct{}, opts.ListingNamespaces),
		informers: map[schema.GroupVersionResource]*entry{}}
}

// NewShared returns a Manager whose informers are shares of source's; nothing runs until Start.
func NewShared(side string, source Source, handlers Handlers) *Manager {
	return &Manager{side: side, source: source, handlers: handlers, informers: map[schema.GroupVersionResource]*entry{}}
}

// Start gives the manager the context its informers live in. Informers asked for before Start run
// from then on; cancelling ctx stops them all (Stop waits for them).
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.ctx = ctx
	for _, e := range m.informers {
		m.run(e)
	}
	for _, w := range m.watched {
		if w.part != nil {
			m.start(w.part)
		}
	}
}

// Set makes the running informers exactly those of desired: it starts the missing ones, stops those no
// longer wanted, and replaces those whose Spec changed. It returns the resources it started (the
// replaced ones among them). After Stop it does nothing.
//
// A replaced informer is a new one to its consumers: not synced until its lists are done (and the
// Handlers are told Synced again). A changed label selector lists everything again; a changed
// namespace scope with the same label selector keeps the lists and watches (and caches) of the
// namespaces that stay, and starts and stops only those of the namespaces added and removed.
func (m *Manager) Set(desired map[schema.GroupVersionResource]Spec) []schema.GroupVersionResource {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return nil
	}
	var stopped []*entry
	replaced := map[schema.GroupVersionResource]*entry{}
	for gvr, e := range m.informers {
		if m.replaces(desired, gvr, e) {
			stopped = append(stopped, e)
			replaced[gvr] = e
			delete(m.informers, gvr)
		}
	}
	var started []schema.GroupVersionResource
	var overfull []*entry
	for gvr, spec := range desired {
		if _, ok := m.informers[gvr]; ok {
			continue
		}
		e := m.newEntry(gvr, m.effective(spec), replaced[gvr])
		m.informers[gvr] = e
		if e.overfullAtStart() {
			overfull = append(overfull, e)
		}
		if m.ctx != nil {
			m.run(e)
		}
		started = append(started, gvr)
	}
	m.mu.Unlock()
	for _, e := range stopped {
		e.stop()
	}
	for _, e := range overfull {
		m.toldOverfull(e)
	}
	return started
}

// replaces tells whether Set(desired) stops or replaces the running entry e of gvr.
func (m *Manager) replaces(desired map[schema.GroupVersionResource]Spec, gvr schema.GroupVersionResource, e *entry) bool {
	spec, ok := desired[gvr]
	// An overfull entry is never kept: it lists no more, and its cache is unseen.
	return !ok || m.effective(spec) != e.spec || m.watchesWhole(gvr, spec) != e.whole || e.overfull > 0
}

// effective is the Spec the manager runs: without a namespace scope when the informers are a
// Source's.
func (m *Manager) effective(spec Spec) Spec {
	if m.source != nil {
		spec.Namespaces = ""
	}
	return spec
}

// watchesWhole tells whether a resource scoped to namespaces is watched cluster-wide and filtered:
// past MaxNamespaces, where the syncer may.
func (m *Manager) watchesWhole(gvr schema.GroupVersionResource, spec Spec) bool {
	if m.source != nil || spec.Namespaces == "" || len(spec.NamespaceList()) <= m.opts.MaxNamespaces {
		return false
	}
	return m.opts.ClusterWide != nil && m.opts.ClusterWide(gvr)
}

// newEntry makes the entry of a resource; prev, if set, is the entry it replaces, whose parts of
// the namespaces that stay (with the same label selector) it takes over. m.mu is held.
func (m *Manager) newEntry(gvr schema.GroupVersionResource, spec Spec, prev *entry) *entry {
	e := &entry{gvr: gvr, spec: spec}
	if m.source != nil {
		e.shared = m.source.Objects(gvr, spec)
		e.cache = e.shared.Cache()
		return e
	}
	var early func(*unstructured.Unstructured)
	if eh, ok := m.handlers.(EarlyHandlers); ok {
		if early = eh.Early(m.logContext(gvr), gvr); early != nil {
			e.earlyDone = func() { eh.EarlyDone(gvr) }
		}
	}
	namespaces := spec.NamespaceList()
	if e.whole = m.watchesWhole(gvr, spec); e.whole || namespaces == nil {
		var accept func(interface{}) bool
		if e.whole {
			accept = inNamespaces(sets.New(namespaces...))
		}
		p := m.newPart(gvr, spec, "", early, accept, transformFor(spec, true))
		e.parts, e.owned = map[string]*part{"": p}, map[string]*part{"": p}
		e.cache = p.informer
		return e
	}
	e.parts, e.owned = map[string]*part{}, map[string]*part{}
	informers := map[string]*informer{}
	for _, ns := range namespaces {
		p := prev.handOver(ns, spec.LabelSelector)
		if p == nil {
			p = m.newPart(gvr, spec, ns, early, nil, transformFor(spec, true))
			p.paced = true
		}
		e.parts[ns], e.owned[ns] = p, p
		informers[ns] = p.informer
	}
	e.cache = newNamespaced(informers)
	return e
}

// handOver gives up the entry's part of a namespace to the entry replacing it, when it lists with
// the same label selector; nil otherwise (and for a nil entry).
func (e *entry) handOver(namespace, labelSelector string) *part {
	if e == nil || e.spec.LabelSelector != labelSelector || e.spec.Namespaces == "" || e.whole {
		return nil
	}
	p := e.owned[namespace]
	if p != nil && p.unlisted.Load() {
		return nil // it never listed: the new entry's part counts again
	}
	delete(e.owned, namespace)
	return p
}

// deniedNow is the refusal that holds: no list or watch has succeeded since (the first namespace's,
// by name, that has one).
func (e *entry) deniedNow() error {
	if e.shared != nil {
		return e.shared.Denied()
	}
	namespaces := make([]string, 0, len(e.parts))
	for ns := range e.parts {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		if err := e.parts[ns].health.Denied(); err != nil {
			if ns != "" {
				return fmt.Errorf("in namespace %s: %w", ns, err)
			}
			return err
		}
	}
	return nil
}

// run starts an entry's informers; m.mu is held.
func (m *Manager) run(e *entry) {
	logger := klog.FromContext(m.ctx).WithValues("side", m.side, "gvr", e.gvr.String())
	if e.spec.Namespaces != "" {
		logger = logger.WithValues("namespaces", len(e.spec.NamespaceList()), "clusterWide", e.whole)
	}
	if m.handlers != nil {
		reg, err := e.cache.AddHandler(m.handlers.HandlerFor(klog.NewContext(m.ctx, logger), e.gvr))
		if err != nil {
			logger.Error(err, "Could not add an event handler")
		}
		e.registration = reg
	}
	for _, p := range e.parts {
		if p.cancel != nil && p.informer.Synced("") {
			// Handed over, listed already: the handlers hear of its namespace now (it runs already).
			m.tellers.Go(func() { m.partSynced(e.gvr, p, false) })
		}
		m.start(p)
	}
	e.running = true
	if e.shared != nil {
		m.tellers.Go(func() { m.awaitShared(e) })
	}
	logger.V(logging.Change).Info("Started informer")
}

// awaitShared tells the Handlers when a Source's share has synced (the source runs it).
func (m *Manager) awaitShared(e *entry) {
	for !e.cache.Synced("") {
		select {
		case <-m.ctx.Done():
			return
		case <-sharedPoll():
		}
		m.mu.Lock()
		current := m.informers[e.gvr] == e
		m.mu.Unlock()
		if !current {
			return
		}
	}
	if m.handlers != nil {
		m.handlers.Synced(e.gvr, "")
	}
}

// stop removes the entry's handler, stops the parts it owns and waits until their goroutines have
// exited.
func (e *entry) stop() {
	if e.shared != nil {
		defer e.shared.Release()
	}
	if e.earlyDone != nil {
		defer e.earlyOnce.Do(e.earlyDone)
	}
	if !e.running {
		return
	}
	if e.registration != nil {
		_ = e.cache.RemoveHandler(e.registration)
	}
	for _, p := range e.owned {
		p.stop()
	}
}

// Stop stops every informer and waits for them; the manager starts nothing afterwards.
func (m *Manager) Stop() {
	m.mu.Lock()
	m.stopped = true
	entries, watched := m.informers, m.watched
	m.informers, m.watched = map[schema.GroupVersionResource]*entry{}, nil
	m.mu.Unlock()
	for _, e := range entries {
		e.stop()
	}
	for _, w := range watched {
		w.stop()
	}
	m.tellers.Wait() // each returns once it finds its entry stopped
}

// Cache returns the cache of a resource while its informer runs and is not about to be replaced
// (Hold); whether a namespace of it is listed is the cache's to say (Synced).
func (m *Manager) Cache(gvr schema.GroupVersionResource) (framework.Cache, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.informers[gvr]
	if !ok || e.held {
		return nil, false
	}
	return e.cache, true
}

// Hold makes the informers that Set(desired) will stop or replace unseen (Cache) until then. The
// engine calls it before it publishes a new selection and then calls Set, so that nothing reads
// the new selection against an informer of the old scope: objects in a namespace just added to an
// upstream informer's scope would look absent upstream, and their edge copies unwanted.
func (m *Manager) Hold(desired map[schema.GroupVersionResource]Spec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for gvr, e := range m.informers {
		if m.replaces(desired, gvr, e) {
			e.held = true
		}
	}
}

// syncPollPeriod is how often a share of a Source's informer is checked for having synced.
const syncPollPeriod = 5 * time.Millisecond

func sharedPoll() <-chan time.Time { return time.After(syncPollPeriod) }
