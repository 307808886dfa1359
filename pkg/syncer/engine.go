package syncer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/selection"
	"github.com/kubestellar/syncer/pkg/status"
	"github.com/kubestellar/syncer/pkg/upsync"
)

// Sides of the syncer.
const (
	Upstream   = "upstream"
	Downstream = "downstream"
)

var (
	crdGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// snapshot is what the engine currently knows: the merged selection and the resources it resolved
// to. It is immutable; the engine swaps in a new one after each resolution.
type snapshot struct {
	selection *selection.Selection
	// resources are the selected resources served upstream.
	resources map[schema.GroupResource]*selection.Resource
	// leftovers are downstream resources watched only for owned objects that are no longer selected
	// (to delete them) or whose API is missing upstream (to hold them).
	leftovers map[schema.GroupResource]schema.GroupVersionResource
	// upsync are the resources selected for upsync, served on both sides at one version.
	upsync map[schema.GroupResource]*selection.Resource
	// upLeftovers are upstream resources watched only for this syncer's upsynced copies whose
	// resource left the upsync selection (to delete them).
	upLeftovers map[schema.GroupResource]schema.GroupVersionResource
	problems    []string
}

// downstreamGVR is where objects of a resource live downstream.
func (s *snapshot) downstreamGVR(gr schema.GroupResource) (schema.GroupVersionResource, bool) {
	if r, ok := s.resources[gr]; ok && r.ServedDownstream() {
		return r.Downstream.GVR, true
	}
	gvr, ok := s.leftovers[gr]
	return gvr, ok
}

// downsyncs tells whether downsync looks after the resource: selected, or a leftover.
func (s *snapshot) downsyncs(gr schema.GroupResource) bool {
	_, selected := s.resources[gr]
	_, leftover := s.leftovers[gr]
	return selected || leftover
}

// canonicalGVR is the GVR queue keys use for a resource: the upstream version when selected, so that
// events of both sides for one object make one key.
func (s *snapshot) canonicalGVR(gr schema.GroupResource, fallback schema.GroupVersionResource) schema.GroupVersionResource {
	if r, ok := s.resources[gr]; ok {
		return r.Upstream.GVR
	}
	return fallback
}

// Syncer is the engine: config, informers and the downsync controller.
type Syncer struct {
	cfg        Config
	ownerLabel string

	up, down *informermanager.Manager
	upDisc   discovery.DiscoveryInterface
	downDisc discovery.DiscoveryInterface

	configInformer cache.SharedIndexInformer
	upCRDs         cache.SharedIndexInformer
	downCRDs       cache.SharedIndexInformer

	resolveQueue workqueue.TypedRateLimitingInterface[string]
	state        atomic.Pointer[snapshot]
	scanned      bool // leftovers scan done (resolver goroutine only)
	upScanned    bool // upsync leftovers scan done (resolver goroutine only)
	lastProblems string

	downsync *Controller
	status   *status.Controller
	upsync   *upsync.Controller

	started          atomic.Bool // the workers run
	resolved         atomic.Bool // the selection was resolved at least once
	heartbeatFailing bool        // heartbeat goroutine only
}

const resolveKey = "resolve"

// New wires the engine; it does no API I/O.
func New(cfg Config) (*Syncer, error) {
	if cfg.UpstreamDynamic == nil || cfg.DownstreamDynamic == nil || cfg.UpstreamDiscovery == nil || cfg.DownstreamDiscovery == nil {
		return nil, errors.New("syncer: upstream and downstream clients are required")
	}
	if cfg.Metrics == nil {
		return nil, errors.New("syncer: metrics are required")
	}
	for _, w := range []*int{&cfg.Workers, &cfg.StatusWorkers, &cfg.UpsyncWorkers} {
		if *w <= 0 {
			*w = 1
		}
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
		upDisc:     cfg.UpstreamDiscovery,
		downDisc:   cfg.DownstreamDiscovery,
		resolveQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resolve", MetricsProvider: cfg.Metrics.WorkqueueProvider()}),
	}
	s.state.Store(&snapshot{
		resources: map[schema.GroupResource]*selection.Resource{}, leftovers: map[schema.GroupResource]schema.GroupVersionResource{},
		upsync: map[schema.GroupResource]*selection.Resource{}, upLeftovers: map[schema.GroupResource]schema.GroupVersionResource{},
	})
	s.up = informermanager.New(Upstream, cfg.UpstreamDynamic, sideHandlers{s, Upstream}, 0)
	s.down = informermanager.New(Downstream, cfg.DownstreamDynamic, sideHandlers{s, Downstream}, 0)
	s.downsync = NewController(cfg, s.ownerLabel, s.up, s.down, s.snapshot)
	s.downsync.onLeftoverDeleted = s.leftoverDeleted
	var err error
	if s.status, err = status.NewController(status.Config{
		Upstream: cfg.UpstreamDynamic, UpstreamInformers: s.up, DownstreamInformers: s.down,
		Selection: statusView{s}, Metrics: cfg.Metrics,
	}); err != nil {
		return nil, err
	}
	if s.upsync, err = upsync.NewController(upsync.Config{
		Upstream: cfg.UpstreamDynamic, UpstreamInformers: s.up, DownstreamInformers: s.down,
		Selection: upsyncView{s}, Metrics: cfg.Metrics, OwnerLabelValue: s.ownerLabel,
		ConflictRecheckPeriod: cfg.ConflictRecheckPeriod, OnLeftoverDeleted: s.upLeftoverDeleted, Recorder: cfg.Recorder,
	}); err != nil {
		return nil, err
	}

	s.configInformer = dynamicinformer.NewFilteredDynamicInformer(cfg.UpstreamDynamic, edgev1.SyncerConfigResource, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	s.upCRDs = crdTrigger(cfg.UpstreamDynamic)
	s.downCRDs = crdTrigger(cfg.DownstreamDynamic)
	trigger := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { s.resolveQueue.AddAfter(resolveKey, 200*time.Millisecond) },
		UpdateFunc: func(_, _ interface{}) { s.resolveQueue.AddAfter(resolveKey, 200*time.Millisecond) },
		DeleteFunc: func(interface{}) { s.resolveQueue.AddAfter(resolveKey, 200*time.Millisecond) },
	}
	// Configs: only spec changes matter (the heartbeat writes their status every period).
	configTrigger := trigger
	configTrigger.UpdateFunc = func(oldObj, newObj interface{}) {
		o, n := framework.ObjectOf(oldObj), framework.ObjectOf(newObj)
		if o != nil && n != nil && o.GetGeneration() == n.GetGeneration() && o.GetGeneration() != 0 {
			return
		}
		s.resolveQueue.AddAfter(resolveKey, 200*time.Millisecond)
	}
	if _, err := s.configInformer.AddEventHandler(configTrigger); err != nil {
		return nil, err
	}
	for _, inf := range []cache.SharedIndexInformer{s.upCRDs, s.downCRDs} {
		if _, err := inf.AddEventHandler(trigger); err != nil {
			return nil, err
		}
	}
	cfg.Metrics.SetObjectCounter(s.countObjects)
	return s, nil
}

// crdTrigger watches CRDs only to notice APIs appearing, changing and going; it keeps names,
// generations and conditions, not schemas.
func crdTrigger(client dynamic.Interface) cache.SharedIndexInformer {
	inf := dynamicinformer.NewFilteredDynamicInformer(client, crdGVR, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	_ = inf.SetTransform(func(obj interface{}) (interface{}, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		slim := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}}
		slim.SetName(u.GetName())
		slim.SetResourceVersion(u.GetResourceVersion())
		slim.SetGeneration(u.GetGeneration())
		if conds, ok, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); ok {
			_ = unstructured.SetNestedSlice(slim.Object, conds, "status", "conditions")
		}
		return slim, nil
	})
	return inf
}

func (s *Syncer) snapshot() *snapshot { return s.state.Load() }

// Run starts everything and blocks until ctx is done and every goroutine has exited.
func (s *Syncer) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	defer utilruntime.HandleCrash()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer s.resolveQueue.ShutDown()

	s.up.Start(ctx)
	s.down.Start(ctx)
	defer s.down.Stop()
	defer s.up.Stop()
	for _, inf := range []cache.SharedIndexInformer{s.configInformer, s.upCRDs, s.downCRDs} {
		inf := inf
		wg.Add(1)
		go func() { defer wg.Done(); inf.Run(ctx.Done()) }()
	}
	logger.Info("Waiting for SyncerConfigs and CRDs to be listed")
	if !s.waitForConfigInformers(ctx) {
		return ctx.Err()
	}
	s.resolveQueue.Add(resolveKey)
	wg.Add(1)
	go func() { defer wg.Done(); s.runResolver(ctx) }()
	if p := s.cfg.DiscoveryRefreshPeriod; p > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.Until(func() { s.resolveQueue.Add(resolveKey) }, p, ctx.Done())
		}()
	}
	if s.cfg.HeartbeatPeriod > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); wait.UntilWithContext(ctx, s.heartbeat, s.cfg.HeartbeatPeriod) }()
	}
	s.started.Store(true)
	defer s.started.Store(false)
	logger.Info("Syncer started", "workers", s.cfg.Workers, "statusWorkers", s.cfg.StatusWorkers, "upsyncWorkers", s.cfg.UpsyncWorkers,
		"ownerLabel", mapping.OwnerLabel+"="+s.ownerLabel)
	wg.Add(2)
	go func() { defer wg.Done(); s.status.Run(ctx, s.cfg.StatusWorkers) }()
	go func() { defer wg.Done(); s.upsync.Run(ctx, s.cfg.UpsyncWorkers) }()
	s.downsync.Run(ctx, s.cfg.Workers)
	return nil
}

// waitForConfigInformers waits for the config and CRD informers, saying clearly what is missing
// while they cannot list (most often: the SyncerConfig CRD is not installed upstream).
func (s *Syncer) waitForConfigInformers(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	ticker := time.NewTicker(10 * time.Second)
	defer ticker.Stop()
	for {
		if s.configInformer.HasSynced() && s.upCRDs.HasSynced() && s.downCRDs.HasSynced() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ticker.C:
			if !s.configInformer.HasSynced() {
				logger.Error(nil, "Cannot list SyncerConfigs upstream yet; is the SyncerConfig CRD installed (manifests/crds) and may the syncer list it?",
					"resource", edgev1.SyncerConfigResource.String())
			}
			if !s.upCRDs.HasSynced() || !s.downCRDs.HasSynced() {
				logger.Error(nil, "Cannot list CustomResourceDefinitions yet", "upstream", s.upCRDs.HasSynced(), "downstream", s.downCRDs.HasSynced())
			}
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Syncer) runResolver(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		key, shutdown := s.resolveQueue.Get()
		if shutdown {
			return
		}
		if err := s.resolve(ctx); err != nil {
			logger.Error(err, "Could not resolve the selection; retrying")
			s.resolveQueue.AddRateLimited(key)
		} else {
			s.resolveQueue.Forget(key)
		}
		s.resolveQueue.Done(key)
	}
}

// configs reads and parses every SyncerConfig; malformed ones are reported and skipped.
func (s *Syncer) configs() ([]*edgev1.SyncerConfig, []string) {
	var out []*edgev1.SyncerConfig
	var problems []string
	for _, obj := range s.configInformer.GetStore().List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		cfg, err := edgev1.FromUnstructured(u.Object)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		out = append(out, cfg)
	}
	return out, problems
}

// discover reads one side's discovery. Groups that fail are returned so that their resources can be
// kept from the previous snapshot instead of being taken for gone.
func discover(d discovery.DiscoveryInterface) (*selection.Index, sets.Set[string], error) {
	groups, lists, err := d.ServerGroupsAndResources()
	failed := sets.New[string]()
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			return nil, nil, err
		}
		for gv := range gdf.Groups {
			failed.Insert(gv.Group)
		}
	}
	return selection.NewIndex(groups, lists), failed, nil
}

// resolve recomputes the snapshot and makes the informers match it.
func (s *Syncer) resolve(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	old := s.snapshot()
	configs, problems := s.configs()
	sel, mergeProblems := selection.Merge(configs)
	problems = append(problems, mergeProblems...)

	upIdx, upFailed, err := discover(s.upDisc)
	if err != nil {
		return fmt.Errorf("upstream discovery: %w", err)
	}
	downIdx, downFailed, err := discover(s.downDisc)
	if err != nil {
		return fmt.Errorf("downstream discovery: %w", err)
	}
	resources, resolveProblems := selection.Resolve(sel, upIdx, downIdx)
	problems = append(problems, resolveProblems...)
	for gr, r := range old.resources {
		if _, ok := resources[gr]; ok || !sel.Mentions(gr) {
			continue
		}
		if upFailed.Has(gr.Group) {
			resources[gr] = r // discovery of its group failed this time; keep what worked
		}
	}
	for gr, r := range resources {
		if !r.ServedDownstream() && old.resources[gr] != nil && old.resources[gr].ServedDownstream() && downFailed.Has(gr.Group) {
			r.Downstream = old.resources[gr].Downstream
		}
		if !r.ServedDownstream() {
			problems = append(problems, fmt.Sprintf("resource %q version %s is not served downstream yet; its objects wait", gr, r.Upstream.GVR.Version))
		}
	}

	// Leftovers: owned objects downstream in resources that are not selected (to delete) or not
	// served upstream (to hold). Found by a scan of the labels at start, then carried over.
	leftovers := map[schema.GroupResource]schema.GroupVersionResource{}
	candidates := map[schema.GroupResource]schema.GroupVersionResource{}
	for gr, gvr := range old.leftovers {
		candidates[gr] = gvr
	}
	for gr, r := range old.resources {
		if r.ServedDownstream() {
			candidates[gr] = r.Downstream.GVR
		}
	}
	if !s.scanned {
		found, err := s.scanLeftovers(ctx, downIdx, resources)
		if err != nil {
			return err
		}
		for gr, gvr := range found {
			candidates[gr] = gvr
		}
		s.scanned = true
	}
	for gr, gvr := range candidates {
		if r, ok := resources[gr]; ok && r.ServedDownstream() {
			continue
		}
		if inf, ok := s.down.Synced(gvr); ok && !holdsLabelled(inf, mapping.OwnerLabel, s.ownerLabel) {
			continue // nothing of ours is left there
		}
		if _, served := downIdx.Lookup(gr, gvr.Version); !served && !downFailed.Has(gr.Group) {
			continue // the API is gone downstream, and its objects with it
		}
		leftovers[gr] = gvr
	}

	upsyncRes, upsyncProblems := selection.ResolveUpsync(sel, upIdx, downIdx)
	problems = append(problems, upsyncProblems...)
	for gr, r := range old.upsync {
		if _, ok := upsyncRes[gr]; !ok && (upFailed.Has(gr.Group) || downFailed.Has(gr.Group)) && sel.UpsyncMentions(gr) {
			upsyncRes[gr] = r // discovery of its group failed this time; keep what worked
		}
	}
	upLeftovers, err := s.upsyncLeftovers(ctx, old, upIdx, upFailed, upsyncRes)
	if err != nil {
		return err
	}

	next := &snapshot{selection: sel, resources: resources, leftovers: leftovers, upsync: upsyncRes, upLeftovers: upLeftovers, problems: problems}
	s.state.Store(next)
	s.resolved.Store(true)

	upSpecs := map[schema.GroupVersionResource]informermanager.Spec{}
	downSpecs := map[schema.GroupVersionResource]informermanager.Spec{
		namespaceGVR: {}, // all namespaces: objects wait for theirs
	}
	owned := informermanager.Spec{LabelSelector: mapping.OwnerLabel + "=" + s.ownerLabel}
	for _, r := range resources {
		upSpecs[r.Upstream.GVR] = informermanager.Spec{}
		if r.ServedDownstream() && r.Downstream.GVR != namespaceGVR {
			downSpecs[r.Downstream.GVR] = owned
		}
	}
	for _, gvr := range leftovers {
		if gvr != namespaceGVR {
			downSpecs[gvr] = owned
		}
	}
	// Upsync sees every edge object of its resources, and every upstream one (to find conflicts).
	for _, r := range upsyncRes {
		upSpecs[r.Upstream.GVR] = informermanager.Spec{}
		downSpecs[r.Downstream.GVR] = informermanager.Spec{}
	}
	for _, gvr := range upLeftovers {
		if _, ok := upSpecs[gvr]; !ok {
			upSpecs[gvr] = informermanager.Spec{LabelSelector: mapping.UpsyncOwnerLabel + "=" + s.ownerLabel}
		}
	}
	s.up.Set(upSpecs)
	s.down.Set(downSpecs)
	s.updateInformerGauges()

	if summary := strings.Join(problems, "\n"); summary != s.lastProblems {
		s.lastProblems = summary
		for _, p := range problems {
			logger.Error(nil, "Selection problem", "problem", p)
		}
	}
	if !sel.Equal(old.selection) {
		logger.Info("Selection changed", "syncerConfigs", len(configs), "resources", grNames(resources), "leftovers", len(leftovers),
			"upsync", grNames(upsyncRes), "upsyncLeftovers", len(upLeftovers))
		s.downsync.enqueueAll()
		for gr := range resources {
			s.status.EnqueueResource(gr)
		}
		for gr := range upsyncRes {
			s.upsync.EnqueueResource(gr)
		}
	} else {
		for gr := range leftovers {
			if _, was := old.leftovers[gr]; !was {
				s.downsync.enqueueResource(gr)
			}
		}
	}
	for gr := range upLeftovers {
		if _, was := old.upLeftovers[gr]; !was {
			s.upsync.EnqueueResource(gr)
		}
	}
	return nil
}

// scanLeftovers finds downstream resources, other than the selected ones, that hold objects carrying
// this syncer's owner label: one LIST with limit 1 per resource, once at start.
func (s *Syncer) scanLeftovers(ctx context.Context, downIdx *selection.Index, selected map[schema.GroupResource]*selection.Resource) (map[schema.GroupResource]schema.GroupVersionResource, error) {
	found := map[schema.GroupResource]schema.GroupVersionResource{}
	selector := mapping.OwnerLabel + "=" + s.ownerLabel
	for _, r := range downIdx.All() {
		gr := r.GVR.GroupResource()
		if sel, ok := selected[gr]; (ok && sel.ServedDownstream()) || !r.Syncable() {
			continue
		}
		list, err := s.cfg.DownstreamDynamic.Resource(r.GVR).List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
			continue // not ours to look at, or gone
		case err != nil:
			return nil, fmt.Errorf("looking for owned %s downstream: %w", gr, err)
		case len(list.Items) > 0:
			found[gr] = r.GVR
		}
	}
	return found, nil
}

// upsyncLeftovers finds upstream resources, other than the upsync-selected ones, that hold copies
// this syncer upsynced: carried over from the previous snapshot, and found once at start by a LIST
// with limit 1 and the upsync owner label per upstream resource. A resource is dropped once its
// cache holds no copy of ours.
func (s *Syncer) upsyncLeftovers(ctx context.Context, old *snapshot, upIdx *selection.Index, upFailed sets.Set[string],
	selected map[schema.GroupResource]*selection.Resource) (map[schema.GroupResource]schema.GroupVersionResource, error) {
	candidates := map[schema.GroupResource]schema.GroupVersionResource{}
	for gr, gvr := range old.upLeftovers {
		candidates[gr] = gvr
	}
	for gr, r := range old.upsync {
		candidates[gr] = r.Upstream.GVR
	}
	if !s.upScanned {
		selector := mapping.UpsyncOwnerLabel + "=" + s.ownerLabel
		for _, r := range upIdx.All() {
			gr := r.GVR.GroupResource()
			if _, ok := selected[gr]; ok || !r.Syncable() {
				continue
			}
			list, err := s.cfg.UpstreamDynamic.Resource(r.GVR).List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
			switch {
			case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
				continue
			case err != nil:
				return nil, fmt.Errorf("looking for upsynced copies of %s upstream: %w", gr, err)
			case len(list.Items) > 0:
				candidates[gr] = r.GVR
			}
		}
		s.upScanned = true
	}
	out := map[schema.GroupResource]schema.GroupVersionResource{}
	for gr, gvr := range candidates {
		if _, ok := selected[gr]; ok {
			continue
		}
		if inf, ok := s.up.Synced(gvr); ok && !holdsLabelled(inf, mapping.UpsyncOwnerLabel, s.ownerLabel) {
			continue
		}
		if _, served := upIdx.Lookup(gr, gvr.Version); !served && !upFailed.Has(gr.Group) {
			continue
		}
		out[gr] = gvr
	}
	return out, nil
}

// holdsLabelled tells whether an informer's cache holds an object with the label key=value.
func holdsLabelled(inf cache.SharedIndexInformer, key, value string) bool {
	for _, obj := range inf.GetStore().List() {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetLabels()[key] == value {
			return true
		}
	}
	return false
}

func grNames(m map[schema.GroupResource]*selection.Resource) []string {
	out := make([]string, 0, len(m))
	for gr := range m {
		out = append(out, gr.String())
	}
	sort.Strings(out)
	return out
}

// sideHandlers connects one side's informers to the downsync, status and upsync queues.
type sideHandlers struct {
	s    *Syncer
	side string
}

func (h sideHandlers) HandlerFor(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	down := h.side == Downstream
	return fanOut{h.s.downsync.handlerFor(h.side, gvr), h.s.status.Handler(down, gvr), h.s.upsync.Handler(down, gvr)}
}

func (h sideHandlers) Synced(gvr schema.GroupVersionResource) {
	h.s.updateInformerGauges()
	gr := gvr.GroupResource()
	h.s.downsync.enqueueResource(gr)
	h.s.status.EnqueueResource(gr)
	h.s.upsync.EnqueueResource(gr)
	if h.side == Downstream {
		// A leftover resource that emptied can be dropped; let the resolver look.
		if _, ok := h.s.snapshot().leftovers[gr]; ok {
			h.s.resolveQueue.AddAfter(resolveKey, time.Second)
		}
	} else if _, ok := h.s.snapshot().upLeftovers[gr]; ok {
		h.s.resolveQueue.AddAfter(resolveKey, time.Second)
	}
}

// fanOut passes each event to several handlers.
type fanOut []cache.ResourceEventHandler

func (f fanOut) OnAdd(obj interface{}, isInInitialList bool) {
	for _, h := range f {
		h.OnAdd(obj, isInInitialList)
	}
}

func (f fanOut) OnUpdate(oldObj, newObj interface{}) {
	for _, h := range f {
		h.OnUpdate(oldObj, newObj)
	}
}

func (f fanOut) OnDelete(obj interface{}) {
	for _, h := range f {
		h.OnDelete(obj)
	}
}

// statusView shows the status controller the current snapshot.
type statusView struct{ s *Syncer }

func (v statusView) Resource(gr schema.GroupResource) (status.Resource, bool) {
	r, ok := v.s.snapshot().resources[gr]
	if !ok || !r.ServedDownstream() {
		return status.Resource{}, false
	}
	return status.Resource{Upstream: r.Upstream.GVR, Downstream: r.Downstream.GVR, UpstreamHasStatus: r.Upstream.HasStatus}, true
}

func (v statusView) ReturnsStatus(gr schema.GroupResource, namespace, name string) bool {
	return v.s.snapshot().selection.ReturnsStatus(gr, namespace, name)
}

// upsyncView shows the upsync controller the current snapshot.
type upsyncView struct{ s *Syncer }

func (v upsyncView) Resource(gr schema.GroupResource) (upsync.Resource, bool) {
	st := v.s.snapshot()
	if r, ok := st.upsync[gr]; ok {
		return upsync.Resource{Upstream: r.Upstream.GVR, Downstream: r.Downstream.GVR, Namespaced: r.Downstream.Namespaced,
			UpstreamHasStatus: r.Upstream.HasStatus, Selected: true}, true
	}
	if gvr, ok := st.upLeftovers[gr]; ok {
		return upsync.Resource{Upstream: gvr, Downstream: gvr}, true
	}
	return upsync.Resource{}, false
}

func (v upsyncView) UpsyncMatches(gr schema.GroupResource, namespace, name string) bool {
	return v.s.snapshot().selection.UpsyncMatches(gr, namespace, name)
}

// upLeftoverDeleted is told when an upsynced copy of a leftover resource was deleted, so that the
// resolver can stop watching the resource once no copy is left.
func (s *Syncer) upLeftoverDeleted(gr schema.GroupResource) {
	if _, ok := s.snapshot().upLeftovers[gr]; ok {
		s.resolveQueue.AddAfter(resolveKey, time.Second)
	}
}

// leftoverDeleted is told when an object of a leftover resource is deleted downstream, so that the
// resolver can stop watching the resource once nothing of ours is left in it.
func (s *Syncer) leftoverDeleted(gr schema.GroupResource) {
	if _, ok := s.snapshot().leftovers[gr]; ok {
		s.resolveQueue.AddAfter(resolveKey, time.Second)
	}
}
