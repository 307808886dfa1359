package syncer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/autoscale"
	"github.com/kubestellar/syncer/pkg/breaker"
	"github.com/kubestellar/syncer/pkg/conditions"
	"github.com/kubestellar/syncer/pkg/downsync"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/report"
	"github.com/kubestellar/syncer/pkg/status"
	"github.com/kubestellar/syncer/pkg/upsync"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// Sides of the syncer.
const (
	Upstream   = conditions.Upstream
	Downstream = conditions.Downstream
)

var (
	crdGVR       = wellknown.CRDs
	namespaceGVR = wellknown.Namespaces
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

	// deletions is the deletion breaker downsync asks before each deletion (nil: none).
	deletions *breaker.Breaker
	// fence proves the edge owner's fence (nil: no executor, no fence to prove).
	fence *fenceProof
	// releaseObject is the cache of the edge's release object (config DeletionRelease; nil: none).
	releaseObject framework.Cache
	// report is what report-only mode would write.
	report *report.Store
	// autoscalers are the edge's HorizontalPodAutoscalers' targets, whose replicas downsync leaves to them.
	autoscalers *autoscale.Index

	downsync  *downsync.Controller
	status    *status.Controller
	upsync    *upsync.Controller
	heartbeat *conditions.Heartbeat

	started  atomic.Bool // the workers run
	resolved atomic.Bool // the selection was resolved at least once

	probing map[string]*atomic.Bool // a side is being probed
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
		cfg:          cfg,
		ownerLabel:   mapping.OwnerLabelValue(cfg.SyncTargetName),
		probing:      map[string]*atomic.Bool{Upstream: {}, Downstream: {}},
		resolveQueue: framework.NewLoopQueue[string]("resolve", cfg.Metrics.WorkqueueProvider()),
	}
	s.state.Store(emptySnapshot())
	if s.report = cfg.Report; s.report == nil {
		s.report = report.NewStore()
	}
	if cfg.FenceWrites != nil && cfg.FenceNamespace != "" {
		s.fence = &fenceProof{client: cfg.FenceWrites, namespace: cfg.FenceNamespace, metrics: cfg.Metrics}
	}
	if cfg.DeletionBreaker.Count > 0 {
		s.deletions = breaker.New(cfg.DeletionBreaker, s.ownedAtEdge, s.releases, nil)
	}
	if cfg.UpstreamSource != nil {
		s.up = informermanager.NewShared(Upstream, cfg.UpstreamSource, sideHandlers{s, false})
	} else {
		s.up = informermanager.New(Upstream, cfg.UpstreamDynamic, sideHandlers{s, false},
			informermanager.Options{MaxNamespaces: cfg.MaxNamespaceInformers, ClusterWide: s.mayListClusterWide,
				Overfull: func(schema.GroupVersionResource) { s.Resolve() }})
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
		configs: s.configs, watchEdgeConfigs: s.watchEdgeSyncConfigs, upDisc: cfg.UpstreamDiscovery, downDisc: cfg.DownstreamDiscovery,
		upClient: cfg.UpstreamDynamic, downClnt: cfg.DownstreamDynamic, ownedDown: cfg.DownstreamOwned, up: s.up, down: s.down,
		ownerLabel: s.ownerLabel, fieldManager: cfg.FieldManager, publish: func(next *snapshot) { s.state.Store(next) },
		maxNamespaces: s.maxNamespaces(), reviewClusterWide: s.reviewClusterWide, fenced: cfg.DownstreamWrites != nil,
		fenceAllow:     cfg.FenceAllow,
		maxObjectBytes: cfg.MaxObjectBytes, overfull: map[schema.GroupResource]informermanager.Overflow{},
	}
	if cfg.UpstreamSource == nil {
		s.resolver.maxObjects = cfg.MaxObjectsPerResource // a Source's shared informers are not counted per workspace
		s.resolver.apis.up = s.upCRDs
	}
	s.resolver.apis.down = s.downCRDs
	if !cfg.Embedded {
		cfg.Metrics.SetObjectCounter(s.countObjects)
	}
	return s, nil
}

// reachabilityChanged probes a side that stopped answering until it answers again (everything else
// may be backing off by then), and, once it is back, retries at once what failed meanwhile, instead
// of letting each key wait out its backoff (up to minutes). Run subscribes it with its context.
func (s *Syncer) reachabilityChanged(ctx context.Context, side string, reachable bool) {
	if ctx.Err() != nil {
		return
	}
	if !reachable {
		disc := s.cfg.UpstreamDiscovery
		if side == Downstream {
			disc = s.cfg.DownstreamDiscovery
		}
		if s.probing[side].CompareAndSwap(false, true) {
			s.probers.Go(func() { s.probe(ctx, side, disc) })
		}
		return
	}
	n := s.downsync.Queue().RetryFailing() + s.status.Queue().RetryFailing() + s.upsync.Queue().RetryFailing()
	klog.FromContext(ctx).Info("Side reachable again; retrying what failed meanwhile", "side", side, "keys", n)
}

// reachable tells whether a side answers (always, without a Reachability tracker).
func (s *Syncer) reachable(side string) (ok bool, lastErr string, since time.Time) {
	if s.cfg.Reachability == nil {
		return true, "", time.Time{}
	}
	return s.cfg.Reachability.Reachability(side)
}

// probe asks a side for its version every probePeriod until it answers (each request goes through
// the side's reachability transport, so an answer makes the side reachable again).
func (s *Syncer) probe(ctx context.Context, side string, disc discovery.DiscoveryInterface) {
	defer s.probing[side].Store(false)
	_ = wait.PollUntilContextCancel(ctx, probePeriod, false, func(context.Context) (bool, error) {
		_, err := disc.ServerVersion()
		ok, _, _ := s.reachable(side)
		return err == nil && ok, nil
	})
}

// newControllers wires the downsync, status and upsync controllers and the heartbeat.
func (s *Syncer) newControllers() error {
	cfg := s.cfg
	var err error
	writes := cfg.DownstreamDynamic
	if cfg.DownstreamWrites != nil {
		writes = cfg.DownstreamWrites
	}
	dcfg := downsync.Config{
		Downstream: writes, UpstreamInformers: s.up, DownstreamInformers: s.down,
		Selection: downsyncView{s.snapshot}, Metrics: cfg.Metrics, Recorder: cfg.Recorder, SyncTargetName: cfg.SyncTargetName,
		Mapping: mapping.Options{OwnerLabelValue: s.ownerLabel, Cluster: cfg.Cluster}, FieldManager: cfg.FieldManager, AdoptExisting: cfg.AdoptExisting,
		ConflictRecheckPeriod: cfg.ConflictRecheckPeriod, OnOwnedDeleted: s.leftoverMayBeEmpty,
		OnRefused: func(key framework.Key) { s.status.Recheck(key) }, OnDeletionsHeld: s.deletionsHeld,
		OnPauseChanged: func(key framework.Key) { s.status.PauseChanged(key) },
		ReportOnly:     cfg.ReportOnly, Report: s.report, EdgeRecorder: cfg.EdgeRecorder, Signatures: cfg.Signatures,
		MaxObjectBytes: cfg.MaxObjectBytes, MaxEdgeBytes: cfg.MaxEdgeBytes, Now: cfg.Clock, Contents: contents{s}, AllowEmptyingHonoured: cfg.MailboxReleasesDeletions,
	}
	s.autoscalers = autoscale.NewIndex(func(t autoscale.Target) { s.downsync.EnqueueEdgeObject(t.GroupKind, t.Namespace, t.Name) })
	dcfg.Autoscalers = s.autoscalers
	if s.fence != nil {
		dcfg.Fence = s.fence
	}
	if s.deletions != nil {
		dcfg.Deletions = s.deletions
	}
	if s.downsync, err = downsync.NewController(dcfg); err != nil {
		return err
	}
	if s.status, err = status.NewController(status.Config{
		Upstream: cfg.UpstreamDynamic, UpstreamInformers: s.up, DownstreamInformers: s.down,
		Selection: statusView{s.snapshot}, Metrics: cfg.Metrics, Recorder: cfg.Recorder,
		Refusals: s.downsync, Pauses: s.downsync, SyncTargetName: cfg.SyncTargetName, Now: cfg.Clock,
	}); err != nil {
		return err
	}
	if s.upsync, err = upsync.NewController(upsync.Config{
		Upstream: cfg.UpstreamDynamic, UpstreamInformers: s.up, DownstreamInformers: s.down,
		Selection: upsyncView{s.snapshot}, Metrics: cfg.Metrics, OwnerLabelValue: s.ownerLabel,
		ConflictRecheckPeriod: cfg.ConflictRecheckPeriod, OnLeftoverDeleted: s.upLeftoverMayBeEmpty, Recorder: cfg.Recorder,
		FieldManager: cfg.FieldManager, Now: cfg.Clock, ProtectedNamespaces: sets.New(cfg.ProtectedNamespaces...), Secrets: cfg.UpsyncSecrets,
	}); err != nil {
		return err
	}
	s.heartbeat, err = conditions.New(conditions.Config{Upstream: cfg.UpstreamDynamic, Configs: s.configs, Sources: sources{s},
		Metrics: cfg.Metrics, FieldManager: cfg.FieldManager, SyncTarget: cfg.SyncTargetName, Refresh: cfg.HeartbeatRefresh})
	return err
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
	defer s.probers.Wait()
	if r := s.cfg.Reachability; r != nil {
		defer r.Subscribe(func(side string, reachable bool) { s.reachabilityChanged(ctx, side, reachable) })()
	}

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
	s.watchWarnings(ctx, &work)
	s.watchAutoscalers(ctx, &work)
	if err := s.watchReleases(ctx); err != nil {
		logger.Error(err, "Cannot watch the SyncerConfigs for releases of held deletions")
	}
	if s.fence != nil {
		s.fence.prove(ctx) // before the first write
		work.Go(func() { s.fence.run(ctx, s.fenceProofPeriod()) })
	}
	s.resolveQueue.Add(resolveKey)
	work.Go(func() { framework.RunLoop(ctx, s.resolveQueue, s.resolveOnce) })
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
	framework.Every(ctx, period, func() {
		s.cfg.UpstreamDiscovery.Invalidate()
		s.cfg.DownstreamDiscovery.Invalidate()
		s.Resolve()
	})
}

// resolveOnce resolves (the resolve queue's one key): a new snapshot, the informers to match, and
// the controllers brought in line.
func (s *Syncer) resolveOnce(ctx context.Context, _ string) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	old := s.snapshot()
	next, err := s.resolver.resolve(ctx, old)
	switch {
	case errors.Is(err, errConfigsNotListed):
		logger.V(logging.Skip).Info("Waiting for the EdgeSyncConfigs to be listed before resolving")
		return configsListedPoll, nil
	case err != nil && ctx.Err() == nil:
		logger.Error(err, "Could not resolve the selection; retrying")
		return 0, err
	case err != nil:
		return 0, err // shutting down
	}
	s.resolved.Store(true)
	if s.draining.Load() {
		s.drainResolved.Store(true)
	}
	s.afterResolve(ctx, old, next)
	s.watchBindings(ctx, next.bindings)
	if s.cfg.OnResolved != nil {
		s.cfg.OnResolved()
	}
	if wait := s.resolver.retryIn; wait > 0 {
		// A CRD is Established that discovery does not show yet: no event will say when it does.
		s.cfg.UpstreamDiscovery.Invalidate()
		s.cfg.DownstreamDiscovery.Invalidate()
		return wait, nil
	}
	return 0, nil
}

// afterResolve brings the controllers in line with a new snapshot: what a changed selection may
// concern is enqueued, and conflicts and failures of what left it are forgotten.
func (s *Syncer) afterResolve(ctx context.Context, old, next *snapshot) {
	s.updateInformerGauges()
	if !s.cfg.Embedded {
		s.cfg.Metrics.ResourcesOverLimit.Set(float64(len(s.resolver.overfull)))
	}
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
