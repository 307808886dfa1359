package syncer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/conditions"
	"github.com/kubestellar/syncer/pkg/downsync"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/status"
	"github.com/kubestellar/syncer/pkg/upsync"
)

// Sides of the syncer.
const (
	Upstream   = conditions.Upstream
	Downstream = conditions.Downstream
)

var (
	crdGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

const (
	resolveKey = "resolve"
	// resolveDelay gathers a burst of config or CRD events into one resolve.
	resolveDelay = 200 * time.Millisecond
)

// Syncer is the engine: the resolver, the informers of both sides, the three controllers and the
// heartbeat.
type Syncer struct {
	cfg        Config
	ownerLabel string

	up, down *informermanager.Manager

	upDisc, downDisc *cachedDiscovery

	// The informers whose events ask for a resolve (the triggers), run by the managers: the
	// SyncerConfigs; the EdgeSyncConfigs once discovery shows them served (the CRD is optional: nil
	// until then, set by the resolver goroutine); CRDs on both sides (none upstream through a Source:
	// a virtual workspace serves no CRDs).
	configInformer *informermanager.Watched
	edgeConfigs    atomic.Pointer[informermanager.Watched]
	// edgeConfigsUnlistable: the EdgeSyncConfigs cannot be listed (forbidden, or gone since
	// discovery), so resolves go on without them rather than wait.
	edgeConfigsUnlistable atomic.Bool
	edgeConfigsAbsent     bool // the absence of EdgeSyncConfigs was logged (resolver goroutine)
	upCRDs, downCRDs      *informermanager.Watched
	// bindings watches kcp's APIBindings upstream once discovery shows them (resolver goroutine).
	bindings atomic.Pointer[schema.GroupVersionResource]
	// clusterWide are the upstream resources the syncer may list and watch cluster-wide, as the
	// resolver last reviewed them (for informers scoped to many namespaces).
	clusterWide sync.Map // schema.GroupVersionResource -> bool
	// draining: the workspace is no longer served; the engine reads no configs, so everything it
	// wrote at the edge leaves the selection and goes (package mailboxes). drainResolved: a resolve
	// ran since.
	draining      atomic.Bool
	drainResolved atomic.Bool

	resolveQueue workqueue.TypedRateLimitingInterface[string]
	resolver     *resolver
	state        atomic.Pointer[snapshot]

	downsync  *downsync.Controller
	status    *status.Controller
	upsync    *upsync.Controller
	heartbeat *conditions.Heartbeat

	started  atomic.Bool // the workers run
	resolved atomic.Bool // the selection was resolved at least once

	runCtx  atomic.Pointer[context.Context] // Run's context, for the probers
	probing map[string]*atomic.Bool         // a side is being probed
	probers sync.WaitGroup
}

// probePeriod is how often a side that stopped answering is asked whether it is back.
const probePeriod = 2 * time.Second

// New wires the engine; it does no API I/O.
func New(cfg Config) (*Syncer, error) {
	if cfg.UpstreamDynamic == nil || cfg.DownstreamDynamic == nil || cfg.UpstreamDiscovery == nil || cfg.DownstreamDiscovery == nil {
		return nil, errors.New("syncer: upstream and downstream clients are required")
	}
	if cfg.Metrics == nil {
		return nil, errors.New("syncer: metrics are required")
	}
	if cfg.Workers <= 0 || cfg.StatusWorkers <= 0 || cfg.UpsyncWorkers <= 0 {
		return nil, errors.New("syncer: the numbers of workers must be positive")
	}
	if cfg.FieldManager == "" {
		cfg.FieldManager = DefaultFieldManager
	}
	if cfg.ConflictRecheckPeriod <= 0 {
		cfg.ConflictRecheckPeriod = time.Minute
	}
	s := &Syncer{
		cfg:        cfg,
		ownerLabel: mapping.OwnerLabelValue(cfg.SyncTargetName),
		upDisc:     newCachedDiscovery(cfg.UpstreamDiscovery),
		downDisc:   newCachedDiscovery(cfg.DownstreamDiscovery),
		probing:    map[string]*atomic.Bool{Upstream: {}, Downstream: {}},
		resolveQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resolve", MetricsProvider: cfg.Metrics.WorkqueueProvider()}),
	}
	s.state.Store(emptySnapshot())
	if cfg.UpstreamSource != nil {
		s.up = informermanager.NewShared(Upstream, cfg.UpstreamSource, sideHandlers{s, false})
	} else {
		s.up = informermanager.New(Upstream, cfg.UpstreamDynamic, sideHandlers{s, false},
			informermanager.Options{MaxNamespaces: cfg.MaxNamespaceInformers, ClusterWide: s.mayListClusterWide})
	}
	if cfg.DownstreamSource != nil {
		s.down = informermanager.NewShared(Downstream, cfg.DownstreamSource, sideHandlers{s, true})
	} else {
		s.down = informermanager.New(Downstream, cfg.DownstreamDynamic, sideHandlers{s, true}, informermanager.Options{})
	}
	if err := s.newControllers(); err != nil {
		return nil, err
	}
	if err := s.newTriggers(); err != nil {
		s.up.Stop()
		s.down.Stop()
		return nil, err
	}
	s.resolver = &resolver{
		configs: s.configs, watchEdgeConfigs: s.watchEdgeSyncConfigs, upDisc: s.upDisc, downDisc: s.downDisc,
		upClient: cfg.UpstreamDynamic, downClnt: cfg.DownstreamDynamic, ownedDown: cfg.DownstreamOwned, up: s.up, down: s.down,
		ownerLabel: s.ownerLabel, fieldManager: cfg.FieldManager, publish: func(next *snapshot) { s.state.Store(next) },
		maxNamespaces: s.maxNamespaces(), reviewClusterWide: s.reviewClusterWide,
	}
	if !cfg.Embedded {
		cfg.Metrics.SetObjectCounter(s.countObjects)
		cfg.Metrics.SetReachabilityHook(s.reachabilityChanged)
	}
	return s, nil
}

// reachabilityChanged probes a side that stopped answering until it answers again (everything else
// may be backing off by then), and retries at once what failed meanwhile, instead of letting each key
// wait out its backoff (up to minutes).
func (s *Syncer) reachabilityChanged(side string, reachable bool) {
	s.Reachability(side, reachable)
}

// Reachability is told when a side becomes unreachable or reachable again (an embedded engine's
// owner passes it on; a standalone engine hooks it to its metrics).
func (s *Syncer) Reachability(side string, reachable bool) {
	ctx := s.runCtx.Load()
	if ctx == nil || (*ctx).Err() != nil {
		return
	}
	logger := klog.FromContext(*ctx)
	if !reachable {
		disc := s.cfg.UpstreamDiscovery
		if side == Downstream {
			disc = s.cfg.DownstreamDiscovery
		}
		if s.probing[side].CompareAndSwap(false, true) {
			s.probers.Go(func() { s.probe(*ctx, side, disc) })
		}
		return
	}
	n := s.downsync.Queue().RetryFailing() + s.status.Queue().RetryFailing() + s.upsync.Queue().RetryFailing()
	logger.Info("Side reachable again; retrying what failed meanwhile", "side", side, "keys", n)
}

// probe asks a side for its version every probePeriod until it answers (each request goes through
// the instrumented transport, so an answer makes the side reachable again).
func (s *Syncer) probe(ctx context.Context, side string, disc discovery.DiscoveryInterface) {
	defer s.probing[side].Store(false)
	_ = wait.PollUntilContextCancel(ctx, probePeriod, false, func(context.Context) (bool, error) {
		_, err := disc.ServerVersion()
		ok, _, _ := s.cfg.Metrics.Reachability(side)
		return err == nil && ok, nil
	})
}

// newControllers wires the downsync, status and upsync controllers and the heartbeat.
func (s *Syncer) newControllers() error {
	cfg := s.cfg
	var err error
	if s.downsync, err = downsync.NewController(downsync.Config{
		Downstream: cfg.DownstreamDynamic, UpstreamInformers: s.up, DownstreamInformers: s.down,
		Selection: downsyncView{s.snapshot}, Metrics: cfg.Metrics, Recorder: cfg.Recorder, SyncTargetName: cfg.SyncTargetName,
		Mapping: mapping.Options{OwnerLabelValue: s.ownerLabel, Cluster: cfg.Cluster}, FieldManager: cfg.FieldManager, AdoptExisting: cfg.AdoptExisting,
		ConflictRecheckPeriod: cfg.ConflictRecheckPeriod, OnOwnedDeleted: s.leftoverMayBeEmpty,
	}); err != nil {
		return err
	}
	if s.status, err = status.NewController(status.Config{
		Upstream: cfg.UpstreamDynamic, UpstreamInformers: s.up, DownstreamInformers: s.down,
		Selection: statusView{s.snapshot}, Metrics: cfg.Metrics, Recorder: cfg.Recorder,
	}); err != nil {
		return err
	}
	if s.upsync, err = upsync.NewController(upsync.Config{
		Upstream: cfg.UpstreamDynamic, UpstreamInformers: s.up, DownstreamInformers: s.down,
		Selection: upsyncView{s.snapshot}, Metrics: cfg.Metrics, OwnerLabelValue: s.ownerLabel,
		ConflictRecheckPeriod: cfg.ConflictRecheckPeriod, OnLeftoverDeleted: s.upLeftoverMayBeEmpty, Recorder: cfg.Recorder,
		FieldManager: cfg.FieldManager,
	}); err != nil {
		return err
	}
	s.heartbeat, err = conditions.New(conditions.Config{Upstream: cfg.UpstreamDynamic, Configs: s.configs, Sources: sources{s},
		Metrics: cfg.Metrics, FieldManager: cfg.FieldManager})
	return err
}

// newTriggers makes the informers whose events ask for a resolve: SyncerConfigs upstream (spec
// changes only: the heartbeat writes their status) and CRDs on both sides (which also make discovery
// stale). The objects listed at start ask for nothing: Run resolves once when they are all listed.
// EdgeSyncConfigs are watched later, once discovery shows them (watchEdgeSyncConfigs).
func (s *Syncer) newTriggers() error {
	var err error
	configs := informermanager.Spec{LabelSelector: s.cfg.ConfigSelector}
	if s.configInformer, err = s.up.Watch(edgev1.SyncerConfigResource, informermanager.Configs, configs, s.trigger(false, specChanged)); err != nil {
		return err
	}
	if s.cfg.UpstreamSource == nil {
		if s.upCRDs, err = s.up.Watch(crdGVR, informermanager.APIs, informermanager.Spec{}, s.trigger(true, nil)); err != nil {
			return err
		}
	}
	s.downCRDs, err = s.down.Watch(crdGVR, informermanager.APIs, informermanager.Spec{}, s.trigger(true, nil))
	return err
}

// specChanged tells whether a config's spec may have changed: the heartbeat's status writes do not
// change its generation.
func specChanged(oldObj, newObj interface{}) bool {
	o, n := framework.ObjectOf(oldObj), framework.ObjectOf(newObj)
	return o == nil || n == nil || o.GetGeneration() != n.GetGeneration() || o.GetGeneration() == 0
}

// watchEdgeSyncConfigs starts watching the EdgeSyncConfigs upstream once discovery shows them served,
// and tells whether they are listed, so that no resolve takes a list not made yet for configs
// deleted. EdgeSyncConfigs that cannot be listed (the syncer may not, or they went since discovery)
// are reported once and left out. When they are not served (the CRD is optional and most often
// absent) the syncer reads SyncerConfigs only; a CRD or APIBinding that brings them later makes
// discovery stale, and the next resolve starts the watch. A watch once started is kept.
func (s *Syncer) watchEdgeSyncConfigs(ctx context.Context, served bool) (listed bool) {
	logger := klog.FromContext(ctx)
	if w := s.edgeConfigs.Load(); w != nil {
		if err := w.Denied(); err != nil && !s.edgeConfigsUnlistable.Swap(true) {
			logger.Error(err, "Cannot list EdgeSyncConfigs; going on without them (may the syncer list and watch edgesyncconfigs?)")
		}
		return w.Synced("") || s.edgeConfigsUnlistable.Load() || s.draining.Load()
	}
	if !served {
		if !s.edgeConfigsAbsent {
			s.edgeConfigsAbsent = true
			logger.Info("EdgeSyncConfigs are not served upstream; reading SyncerConfigs only until they are", "resource", edgev1.EdgeSyncConfigGVR.String())
		}
		return true
	}
	w, err := s.up.Watch(edgev1.EdgeSyncConfigGVR, informermanager.Configs, informermanager.Spec{LabelSelector: s.cfg.ConfigSelector},
		s.trigger(false, specChanged))
	if err != nil {
		logger.Error(err, "Cannot watch EdgeSyncConfigs")
		return true
	}
	s.edgeConfigs.Store(w)
	logger.Info("Watching EdgeSyncConfigs", "resource", edgev1.EdgeSyncConfigGVR.String())
	return false
}

// trigger is an event handler that asks for a resolve, after making discovery stale when the event
// may mean an API appeared, changed or went. Updates count only when changed says so (nil: all).
func (s *Syncer) trigger(rediscover bool, changed func(oldObj, newObj interface{}) bool) cache.ResourceEventHandler {
	enqueue := func() {
		if rediscover {
			s.upDisc.Invalidate()
			s.downDisc.Invalidate()
		}
		s.resolveQueue.AddAfter(resolveKey, resolveDelay)
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ interface{}, isInInitialList bool) {
			if !isInInitialList {
				enqueue()
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			if changed == nil || changed(oldObj, newObj) {
				enqueue()
			}
		},
		DeleteFunc: func(interface{}) { enqueue() },
	}
}

// watchBindings starts watching kcp's APIBindings upstream, once discovery shows them: a binding
// brings APIs without any CRD event, so without it a newly bound API would wait for the discovery
// refresh period.
func (s *Syncer) watchBindings(ctx context.Context, gvr schema.GroupVersionResource) {
	if gvr.Empty() || s.bindings.Load() != nil {
		return
	}
	s.bindings.Store(&gvr)
	if _, err := s.up.Watch(gvr, informermanager.APIs, informermanager.Spec{}, s.trigger(true, nil)); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot watch APIBindings")
		return
	}
	klog.FromContext(ctx).Info("Upstream is a kcp workspace: watching its APIBindings for APIs that come and go",
		"resource", gvr.String(), "logicalCluster", s.logicalCluster())
}

// logicalCluster is the kcp logical cluster of the upstream workspace, as its objects carry it
// (annotation kcp.io/cluster); "" while no SyncerConfig has been seen.
func (s *Syncer) logicalCluster() string {
	for _, u := range s.configs() {
		if c := logicalcluster.From(u); !c.Empty() {
			return c.String()
		}
	}
	return ""
}

func (s *Syncer) snapshot() *snapshot { return s.state.Load() }

// configs lists the cached SyncerConfigs and EdgeSyncConfigs (the cache's objects: not to be
// mutated).
func (s *Syncer) configs() []*unstructured.Unstructured {
	if s.draining.Load() {
		return nil
	}
	objs := s.configInformer.List("")
	if w := s.edgeConfigs.Load(); w != nil {
		objs = append(objs, w.List("")...)
	}
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out
}

// Run starts everything and blocks until ctx is done and every goroutine has exited. Shutdown goes
// in order: the workers, the resolver and the heartbeat stop first; only then are the informers they
// read stopped.
func (s *Syncer) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	defer utilruntime.HandleCrashWithContext(ctx)
	s.runCtx.Store(&ctx)
	defer s.probers.Wait()

	s.up.Start(ctx)
	s.down.Start(ctx)
	defer s.down.Stop() // after the users of the informers below have exited
	defer s.up.Stop()

	logger.Info("Waiting for SyncerConfigs and CRDs to be listed")
	if !s.waitForTriggers(ctx) {
		s.resolveQueue.ShutDown()
		for _, q := range []*framework.Queue{s.downsync.Queue(), s.status.Queue(), s.upsync.Queue()} {
			q.ShutDown() // their workers never ran: nothing else stops their delaying goroutines
		}
		return ctx.Err()
	}
	var work sync.WaitGroup // everything that reads the informers
	defer work.Wait()
	s.resolveQueue.Add(resolveKey)
	work.Go(func() { s.runResolver(ctx) })
	if p := s.cfg.DiscoveryRefreshPeriod; p > 0 {
		work.Go(func() { s.refreshDiscovery(ctx, p) })
	}
	if p := s.cfg.HeartbeatPeriod; p > 0 {
		work.Go(func() { s.heartbeat.Run(ctx, p) })
	}
	if p := s.cfg.AuditPeriod; p > 0 {
		work.Go(func() { s.runAudit(ctx, p) })
	}
	s.started.Store(true)
	defer s.started.Store(false)
	logger.Info("Syncer started", "workers", s.cfg.Workers, "statusWorkers", s.cfg.StatusWorkers, "upsyncWorkers", s.cfg.UpsyncWorkers,
		"ownerLabel", mapping.OwnerLabel+"="+s.ownerLabel)
	work.Go(func() { s.status.Run(ctx, s.cfg.StatusWorkers) })
	work.Go(func() { s.upsync.Run(ctx, s.cfg.UpsyncWorkers) })
	work.Go(func() { s.downsync.Run(ctx, s.cfg.Workers) })
	<-ctx.Done()
	s.resolveQueue.ShutDown()
	return nil
}

// refreshDiscovery re-reads discovery every period (the first time a period after start), a safety
// net for APIs that appear without any event the triggers see (aggregated APIs, say).
func (s *Syncer) refreshDiscovery(ctx context.Context, period time.Duration) {
	framework.Every(ctx, period, s.Rediscover)
}

// waitForTriggers waits for the config and CRD informers, saying clearly what is missing while they
// cannot list (most often: the SyncerConfig CRD is not installed upstream).
func (s *Syncer) waitForTriggers(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	synced := func(context.Context) (bool, error) {
		return s.configInformer.Synced("") && s.upCRDsSynced() && s.downCRDs.Synced(""), nil
	}
	for {
		waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := wait.PollUntilContextCancel(waitCtx, 50*time.Millisecond, true, synced)
		cancel()
		switch {
		case err == nil:
			return true
		case ctx.Err() != nil:
			return false
		}
		if !s.configInformer.Synced("") {
			logger.Error(nil, "Cannot list SyncerConfigs upstream yet; is the SyncerConfig CRD installed (manifests/crds) and may the syncer list it?",
				"resource", edgev1.SyncerConfigResource.String())
		}
		if !s.upCRDsSynced() || !s.downCRDs.Synced("") {
			logger.Error(nil, "Cannot list CustomResourceDefinitions yet", "upstream", s.upCRDsSynced(), "downstream", s.downCRDs.Synced(""))
		}
	}
}

// upCRDsSynced tells whether the upstream CRDs are listed (there are none to list through a Source).
func (s *Syncer) upCRDsSynced() bool { return s.upCRDs == nil || s.upCRDs.Synced("") }

// runResolver resolves whenever asked, until the queue shuts down.
func (s *Syncer) runResolver(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		key, shutdown := s.resolveQueue.Get()
		if shutdown {
			return
		}
		old := s.snapshot()
		next, err := s.resolver.resolve(ctx, old)
		switch {
		case err != nil && ctx.Err() != nil:
			s.resolveQueue.Forget(key) // shutting down
		case errors.Is(err, errConfigsNotListed):
			logger.V(logging.Skip).Info("Waiting for the EdgeSyncConfigs to be listed before resolving")
			s.resolveQueue.Forget(key)
			s.resolveQueue.AddAfter(key, configsListedPoll)
		case err != nil:
			logger.Error(err, "Could not resolve the selection; retrying")
			s.resolveQueue.AddRateLimited(key)
		default:
			s.resolveQueue.Forget(key)
			s.resolved.Store(true)
			if s.draining.Load() {
				s.drainResolved.Store(true)
			}
			s.afterResolve(ctx, old, next)
			s.watchBindings(ctx, next.bindings)
			if s.cfg.OnResolved != nil {
				s.cfg.OnResolved()
			}
		}
		s.resolveQueue.Done(key)
	}
}

// afterResolve brings the controllers in line with a new snapshot: what a changed selection may
// concern is enqueued, and conflicts and failures of what left it are forgotten.
func (s *Syncer) afterResolve(ctx context.Context, old, next *snapshot) {
	s.updateInformerGauges()
	s.downsync.Prune()
	s.status.Prune()
	s.upsync.Prune()
	if !next.selection.Equal(old.selection) {
		klog.FromContext(ctx).Info("Selection changed", "configs", len(s.configs()), "resources", grNames(next.resources),
			"leftovers", len(next.leftovers), "upsync", grNames(next.upsync), "upsyncLeftovers", len(next.upLeftovers))
		for gr := range next.resources {
			s.downsync.EnqueueResource(gr, "")
			s.status.EnqueueResource(gr, "")
		}
		for gr := range next.leftovers {
			s.downsync.EnqueueResource(gr, "")
		}
		for gr := range next.upsync {
			s.upsync.EnqueueResource(gr, "")
		}
	} else {
		for gr := range next.leftovers {
			if _, was := old.leftovers[gr]; !was {
				s.downsync.EnqueueResource(gr, "")
			}
		}
	}
	for gr := range next.upLeftovers {
		if _, was := old.upLeftovers[gr]; !was {
			s.upsync.EnqueueResource(gr, "")
		}
	}
}

// leftoverMayBeEmpty is told when an object of a resource is deleted downstream: once nothing of ours
// is left in a leftover resource, the resolver stops watching it.
func (s *Syncer) leftoverMayBeEmpty(gr schema.GroupResource) {
	if _, ok := s.snapshot().leftovers[gr]; ok {
		s.resolveQueue.AddAfter(resolveKey, time.Second)
	}
}

// upLeftoverMayBeEmpty is the same for upsynced copies of an upsync leftover resource.
func (s *Syncer) upLeftoverMayBeEmpty(gr schema.GroupResource) {
	if _, ok := s.snapshot().upLeftovers[gr]; ok {
		s.resolveQueue.AddAfter(resolveKey, time.Second)
	}
}
