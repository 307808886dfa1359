package mailboxes

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/syncer"
)

var (
	// EndpointSliceGVR is kcp's APIExportEndpointSlice: where an APIExport's virtual workspace is.
	EndpointSliceGVR = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiexportendpointslices"}
	apiBindingsGR    = schema.GroupResource{Group: "apis.kcp.io", Resource: "apibindings"}
)

// Config is what NewController needs.
type Config struct {
	// Provider is the workspace that holds the APIExportEndpointSlice (the --from-kubeconfig one);
	// the virtual workspace is reached with the same credentials.
	Provider *rest.Config
	// EndpointSlice names the APIExportEndpointSlice.
	EndpointSlice string
	// Downstream and DownstreamDiscovery talk to the edge.
	Downstream          dynamic.Interface
	DownstreamDiscovery discovery.DiscoveryInterface
	// Engine is the template of every workspace's engine: workers, periods, sync target, metrics;
	// the clients, sources and cluster are filled in per workspace.
	Engine syncer.Config
	// NewRecorder, if set, returns the Event recorder of a workspace (reached at cfg) and what
	// stops it.
	NewRecorder func(ctx context.Context, cluster logicalcluster.Name, cfg *rest.Config) (record.EventRecorder, func())
}

// Controller serves every workspace bound to an APIExport: one engine per workspace (pkg/syncer),
// all of them sharing one list and watch per resource on each side.
type Controller struct {
	cfg        Config
	m          *metrics.Metrics
	ownerLabel string
	namespaces *Namespaces
	queue      workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	vw       *rest.Config // the virtual workspace, once known
	client   *kcpdynamic.ClusterClientset
	upHub    *informermanager.Hub
	downHub  *informermanager.Hub
	upDisc   *sharedDiscovery
	downDisc *sharedDiscovery
	bindings framework.Cache
	engines  map[logicalcluster.Name]*engine
	// marked are the workspaces with objects at the edge found at start, and the resources holding them.
	marked   map[logicalcluster.Name]map[schema.GroupResource]schema.GroupVersionResource
	engineWG sync.WaitGroup
}

// engine is one workspace's engine and how to stop it.
type engine struct {
	s        *syncer.Syncer
	cancel   context.CancelFunc
	done     chan struct{}
	draining atomic.Bool
}

// NewController checks the configuration; it does no API I/O.
func NewController(cfg Config) (*Controller, error) {
	switch {
	case cfg.Provider == nil || cfg.Downstream == nil || cfg.DownstreamDiscovery == nil:
		return nil, errors.New("mailboxes: the provider config and the edge clients are required")
	case cfg.EndpointSlice == "":
		return nil, errors.New("mailboxes: the APIExportEndpointSlice name is required")
	case cfg.Engine.Metrics == nil:
		return nil, errors.New("mailboxes: metrics are required")
	}
	c := &Controller{
		cfg: cfg, m: cfg.Engine.Metrics, ownerLabel: mapping.OwnerLabelValue(cfg.Engine.SyncTargetName), namespaces: NewNamespaces(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "workspaces", MetricsProvider: cfg.Engine.Metrics.WorkqueueProvider()}),
		engines: map[logicalcluster.Name]*engine{}, marked: map[logicalcluster.Name]map[schema.GroupResource]schema.GroupVersionResource{},
	}
	c.downDisc = newSharedDiscovery(cfg.DownstreamDiscovery)
	c.downHub = informermanager.NewHub(informermanager.HubOptions{Side: syncer.Downstream,
		Lister:   func(gvr schema.GroupVersionResource) informermanager.Lister { return cfg.Downstream.Resource(gvr) },
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, WorkspaceIndex: workspaceIndexFunc},
		// Streamed lists are keyed by namespace and name, as this store is.
		WatchList: true, OnChange: c.updateGauges})
	c.m.SetObjectCounter(c.countObjects)
	c.m.SetReachabilityHook(c.reachability)
	return c, nil
}

// Run serves the workspaces until ctx is done; it returns once every engine and informer stopped.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	outer := ctx
	ctx, moved := context.WithCancelCause(ctx)
	defer moved(nil)
	providerClient, err := dynamic.NewForConfig(c.cfg.Provider)
	if err != nil {
		return fmt.Errorf("provider workspace client: %w", err)
	}
	provider := informermanager.New("provider", providerClient, nil, informermanager.Options{})
	provider.Start(ctx)
	defer provider.Stop()
	url, err := c.watchURL(ctx, provider, moved)
	if err != nil {
		return stopCause(outer, ctx, err)
	}
	logger.Info("Serving the workspaces bound to the APIExport through its virtual workspace", "endpointSlice", c.cfg.EndpointSlice, "url", url)
	if err := c.connect(url); err != nil {
		return err
	}
	c.upHub.Start(ctx)
	c.downHub.Start(ctx)
	defer c.downHub.Stop()
	defer c.upHub.Stop()

	// The edge's Namespaces tell which workspace namespace each mapped one comes from.
	nsShare := c.downHub.Share(namespacesGVR, informermanager.Spec{}, wholeScope{})
	defer nsShare.Release()
	edgeNamespaces := nsShare.Cache()
	if _, err := edgeNamespaces.AddHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.observeNamespace(obj) },
		UpdateFunc: func(_, obj interface{}) { c.observeNamespace(obj) },
	}); err != nil {
		return err
	}
	bindingsGVR, err := c.bindingsResource()
	if err != nil {
		return err
	}
	bShare := c.upHub.Share(bindingsGVR, informermanager.Spec{}, allClusters{})
	defer bShare.Release()
	c.mu.Lock()
	c.bindings = bShare.Cache()
	c.mu.Unlock()
	if _, err := c.bindings.AddHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.enqueueBinding(obj) },
		UpdateFunc: func(_, obj interface{}) { c.enqueueBinding(obj) },
		DeleteFunc: func(obj interface{}) { c.enqueueBinding(obj) },
	}); err != nil {
		return err
	}
	if !cache.WaitForNamedCacheSync("workspaces", ctx.Done(), func() bool { return edgeNamespaces.Synced("") && c.bindings.Synced("") }) {
		return ctx.Err()
	}
	// Every edge Namespace is known before the views need them (the handler may not have seen all yet).
	for _, obj := range edgeNamespaces.List("") {
		c.observeNamespace(obj)
	}
	if err := c.scanMarked(ctx); err != nil {
		return err
	}

	defer c.engineWG.Wait()
	defer c.stopAll()
	if p := c.cfg.Engine.DiscoveryRefreshPeriod; p > 0 {
		go c.refreshDiscovery(ctx, p)
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return stopCause(outer, ctx, nil)
		}
		if err := c.reconcile(ctx, logicalcluster.Name(key)); err != nil {
			logger.Error(err, "Could not bring a workspace's engine in line; retrying", "workspace", key)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// watchURL watches the APIExportEndpointSlice (with provider, whose Stop ends the watch), and returns
// its virtual workspace URL once it shows one. The watch goes on: a later, different URL (the export
// moved) cancels moved, for Run to return an error and the process to start again against the new one.
func (c *Controller) watchURL(ctx context.Context, provider *informermanager.Manager, moved context.CancelCauseFunc) (string, error) {
	logger := klog.FromContext(ctx)
	found := make(chan string, 1)
	var mu sync.Mutex
	url, last := "", ""
	see := func(obj interface{}) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch now := endpointURL(u); {
		case now == "" && url == "":
			if last != "no URL" {
				logger.Info("Waiting for the APIExportEndpointSlice to show a URL (kcp publishes it with the first binding)", "endpointSlice", c.cfg.EndpointSlice)
			}
			last = "no URL"
		case url == "" && now != "":
			url = now
			found <- now
		case now != "" && now != url:
			moved(fmt.Errorf("the APIExport's virtual workspace moved from %s to %s; starting again", url, now))
		}
	}
	slices, err := provider.Watch(EndpointSliceGVR, informermanager.Configs, informermanager.Spec{FieldSelector: "metadata.name=" + c.cfg.EndpointSlice},
		cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, obj interface{}) { see(obj) }})
	if err != nil {
		return "", err
	}
	refused := ""
	for !slices.Synced("") {
		if err := slices.Denied(); err != nil && err.Error() != refused {
			logger.Error(err, "Cannot watch the APIExportEndpointSlice in the workspace of --from-kubeconfig (is it a kcp workspace, and may the syncer read apiexportendpointslices?)",
				"endpointSlice", c.cfg.EndpointSlice)
			refused = err.Error()
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if len(slices.List("")) == 0 {
		logger.Error(nil, "The APIExportEndpointSlice does not exist (yet) in the workspace of --from-kubeconfig; waiting for it", "endpointSlice", c.cfg.EndpointSlice)
	}
	select {
	case u := <-found:
		return u, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// stopCause is what Run returns when ctx ended: nil when the caller's context did, the cause when the
// virtual workspace moved.
func stopCause(outer, ctx context.Context, err error) error {
	select {
	case <-outer.Done(): // shutting down
		return nil
	default:
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	default:
		return err
	}
}

// endpointURL is the first URL in an APIExportEndpointSlice's status.
func endpointURL(slice *unstructured.Unstructured) string {
	eps, _, _ := unstructured.NestedSlice(slice.Object, "status", "endpoints")
	for _, ep := range eps {
		if m, ok := ep.(map[string]interface{}); ok {
			if u, ok := m["url"].(string); ok && u != "" {
				return u
			}
		}
	}
	return ""
}

// connect makes the clients of the virtual workspace and the upstream hub.
func (c *Controller) connect(url string) error {
	vw := rest.CopyConfig(c.cfg.Provider)
	vw.Host = url
	client, err := kcpdynamic.NewForConfig(vw)
	if err != nil {
		return fmt.Errorf("virtual workspace client: %w", err)
	}
	all := rest.CopyConfig(vw)
	all.Host = url + logicalcluster.Wildcard.RequestPath()
	disc, err := discovery.NewDiscoveryClientForConfig(all)
	if err != nil {
		return fmt.Errorf("virtual workspace discovery: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vw, c.client, c.upDisc = vw, client, newSharedDiscovery(disc)
	c.upHub = informermanager.NewHub(informermanager.HubOptions{Side: syncer.Upstream,
		Lister: func(gvr schema.GroupVersionResource) informermanager.Lister { return client.Resource(gvr) },
		// Keyed by logical cluster, namespace and name: two workspaces have objects of one name. Lists
		// are not streamed, as client-go's reflector would key them by namespace and name.
		KeyFunc: kcpcache.DeletionHandlingMetaClusterNamespaceKeyFunc,
		Indexers: cache.Indexers{
			kcpcache.ClusterIndexName:             kcpcache.ClusterIndexFunc,
			kcpcache.ClusterAndNamespaceIndexName: kcpcache.ClusterAndNamespaceIndexFunc,
		},
		OnChange: c.updateGauges})
	return nil
}

// bindingsResource is the APIBinding resource the virtual workspace serves (one binding per bound
// workspace, read-only).
func (c *Controller) bindingsResource() (schema.GroupVersionResource, error) {
	groups, err := c.upDisc.ServerGroups()
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("virtual workspace discovery: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name == apiBindingsGR.Group {
			return apiBindingsGR.WithVersion(g.PreferredVersion.Version), nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("the virtual workspace does not serve %s", apiBindingsGR)
}

func (c *Controller) observeNamespace(obj interface{}) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		c.namespaces.Observe(u)
	}
}

func (c *Controller) enqueueBinding(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if cluster := logicalcluster.From(u); !cluster.Empty() {
			c.queue.Add(cluster.String())
		}
	}
}

// binding tells whether a workspace has an APIBinding to the export that is not being deleted
// (present), and whether it is Bound. A workspace starts being served once bound, and is drained
// only once its binding is gone: a binding that leaves phase Bound for a while (kcp rebinding after
// an export changed) deletes nothing.
func (c *Controller) binding(cluster logicalcluster.Name) (present, bound bool) {
	for _, obj := range c.bindings.List("") {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || logicalcluster.From(u) != cluster || u.GetDeletionTimestamp() != nil {
			continue
		}
		present = true
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == "Bound" {
			bound = true
		}
	}
	return present, bound
}

// scanMarked finds the workspaces that have objects at the edge (from the marks), so that those no
// longer bound are cleaned up after a restart too. One paged LIST per edge resource, once.
func (c *Controller) scanMarked(ctx context.Context) error {
	_, lists, err := c.downDisc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return fmt.Errorf("edge discovery: %w", err)
	}
	found := map[logicalcluster.Name]map[schema.GroupResource]schema.GroupVersionResource{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if sets.New(r.Verbs...).HasAll("list", "delete") && !strings.Contains(r.Name, "/") {
				if err := c.scanResource(ctx, gv.WithResource(r.Name), found); err != nil {
					return err
				}
			}
		}
	}
	c.mu.Lock()
	c.marked = found
	c.mu.Unlock()
	for cluster := range found {
		c.queue.Add(cluster.String())
	}
	klog.FromContext(ctx).Info("Found the workspaces with objects at the edge", "workspaces", len(found))
	return nil
}

func (c *Controller) scanResource(ctx context.Context, gvr schema.GroupVersionResource, found map[logicalcluster.Name]map[schema.GroupResource]schema.GroupVersionResource) error {
	opts := metav1.ListOptions{LabelSelector: mapping.OwnerLabel + "=" + c.ownerLabel, Limit: 500}
	for {
		list, err := c.cfg.Downstream.Resource(gvr).List(ctx, opts)
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
			return nil
		case err != nil:
			return fmt.Errorf("looking for marked %s at the edge: %w", gvr.GroupResource(), err)
		}
		for i := range list.Items {
			if cluster := logicalcluster.Name(mapping.ClusterOf(&list.Items[i])); !cluster.Empty() {
				if found[cluster] == nil {
					found[cluster] = map[schema.GroupResource]schema.GroupVersionResource{}
				}
				found[cluster][gvr.GroupResource()] = gvr
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// reconcile brings one workspace's engine in line with its binding: a bound workspace has a running
// engine; an unbound one with an engine (or objects at the edge) is drained, and its engine stopped
// once drained.
func (c *Controller) reconcile(ctx context.Context, cluster logicalcluster.Name) error {
	logger := klog.FromContext(ctx).WithValues("workspace", cluster.String())
	present, bound := c.binding(cluster)
	c.mu.Lock()
	e := c.engines[cluster]
	_, marked := c.marked[cluster]
	c.mu.Unlock()
	switch decide(present, bound, e != nil, e != nil && e.draining.Load(), marked) {
	case restart: // bound again while draining: a fresh engine takes its objects back
		logger.Info("Workspace bound again; restarting its engine")
		c.stop(cluster, e)
		// What the drain had not deleted yet may be in resources the start-up scan knows nothing of:
		// the fresh engine scans the edge itself.
		return c.startEngine(ctx, cluster, false, true)
	case start:
		logger.Info("Workspace bound; starting its engine")
		return c.start(ctx, cluster, false)
	case drain:
		logger.Info("Workspace no longer bound; deleting its objects at the edge")
		e.draining.Store(true)
		e.s.Drain()
		c.updateGauges()
	case checkDrained:
		if e.s.Drained() {
			logger.Info("Workspace's objects deleted at the edge; stopping its engine")
			c.stop(cluster, e)
			c.mu.Lock()
			delete(c.marked, cluster)
			c.mu.Unlock()
		}
	case startDraining:
		logger.Info("Workspace not bound, but objects of it are at the edge; deleting them")
		return c.start(ctx, cluster, true)
	}
	return nil
}

// action is what reconcile does for a workspace.
type action int

const (
	nothing       action = iota
	start                // run its engine
	restart              // stop its draining engine, run a fresh one
	drain                // make its engine delete what it wrote at the edge
	checkDrained         // stop its draining engine once it is done
	startDraining        // run an engine that deletes what is left of the workspace at the edge
)

// decide is reconcile's decision. present: the workspace has an APIBinding that is not being
// deleted; bound: one in phase Bound; running, draining: its engine; marked: objects of it were found
// at the edge at start. Only a binding that is gone drains: one that leaves phase Bound for a while
// (kcp rebinding after the export changed) deletes nothing.
func decide(present, bound, running, draining, marked bool) action {
	switch {
	case bound && running && draining:
		return restart
	case bound && !running:
		return start
	case present:
		return nothing // served, not bound yet, or not Bound for now
	case running && !draining:
		return drain
	case running:
		return checkDrained
	case marked:
		return startDraining
	}
	return nothing
}

// start runs the engine of a workspace (draining from the start when drain).
func (c *Controller) start(ctx context.Context, cluster logicalcluster.Name, drain bool) error {
	return c.startEngine(ctx, cluster, drain, false)
}

// startEngine runs the engine of a workspace; with rescan it looks for its objects at the edge
// itself instead of taking the start-up scan's findings.
func (c *Controller) startEngine(ctx context.Context, cluster logicalcluster.Name, drain, rescan bool) error {
	cfg := c.cfg.Engine
	cfg.UpstreamDynamic = c.client.Cluster(cluster.Path())
	cfg.UpstreamDiscovery = c.upDisc
	cfg.DownstreamDynamic = EdgeClient(c.cfg.Downstream, cluster.String(), c.namespaces)
	cfg.DownstreamDiscovery = c.downDisc
	cfg.DiscoveryRefreshPeriod = 0 // the controller refreshes every engine at once (refreshDiscovery)
	cfg.UpstreamSource = upSource{hub: c.upHub, cluster: cluster}
	cfg.DownstreamSource = downSource{hub: c.downHub, cluster: cluster.String(), namespaces: c.namespaces}
	cfg.Cluster = cluster.String()
	cfg.Embedded = true
	if !rescan {
		c.mu.Lock()
		owned := c.marked[cluster] // found by the scan at start: the engine does not scan again
		c.mu.Unlock()
		cfg.DownstreamOwned = func() map[schema.GroupResource]schema.GroupVersionResource { return owned }
	}
	cfg.OnResolved = func() {
		c.queue.Add(cluster.String())
		c.updateGauges()
	}
	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("workspace", cluster.String())))
	var stopRecorder func()
	if c.cfg.NewRecorder != nil {
		wsCfg := rest.CopyConfig(c.vw)
		wsCfg.Host = c.vw.Host + cluster.Path().RequestPath()
		cfg.Recorder, stopRecorder = c.cfg.NewRecorder(runCtx, cluster, wsCfg)
	}
	s, err := syncer.New(cfg)
	if err != nil {
		cancel()
		if stopRecorder != nil {
			stopRecorder()
		}
		return err
	}
	if drain {
		s.Drain()
	}
	e := &engine{s: s, cancel: cancel, done: make(chan struct{})}
	e.draining.Store(drain)
	c.mu.Lock()
	c.engines[cluster] = e
	c.mu.Unlock()
	c.engineWG.Add(1)
	go func() {
		defer c.engineWG.Done()
		defer close(e.done)
		if stopRecorder != nil {
			defer stopRecorder()
		}
		if err := s.Run(runCtx); err != nil && runCtx.Err() == nil {
			klog.FromContext(runCtx).Error(err, "Workspace engine stopped")
		}
	}()
	c.updateGauges()
	return nil
}

// stop stops a workspace's engine and waits for it.
func (c *Controller) stop(cluster logicalcluster.Name, e *engine) {
	e.cancel()
	<-e.done
	c.mu.Lock()
	if c.engines[cluster] == e {
		delete(c.engines, cluster)
	}
	c.mu.Unlock()
	c.updateGauges()
}

func (c *Controller) stopAll() {
	c.mu.Lock()
	engines := c.engines
	c.engines = map[logicalcluster.Name]*engine{}
	c.mu.Unlock()
	for _, e := range engines {
		e.cancel()
	}
	for _, e := range engines {
		<-e.done
	}
}

// refreshDiscovery re-reads both sides' discovery for every engine every period (the engines'
// DiscoveryRefreshPeriod, which they then do not run themselves): one walk for all of them.
func (c *Controller) refreshDiscovery(ctx context.Context, period time.Duration) {
	framework.Every(ctx, period, func() {
		for _, e := range c.engineList() {
			e.s.Rediscover() // the shared caches too: an engine's invalidation is passed on
		}
	})
}

// engineList is the engines running now.
func (c *Controller) engineList() []*engine {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*engine, 0, len(c.engines))
	for _, e := range c.engines {
		out = append(out, e)
	}
	return out
}

// Ready tells whether every bound workspace is served: the virtual workspace known, the bindings
// listed, and every workspace's engine ready.
func (c *Controller) Ready() error {
	c.mu.Lock()
	bindings := c.bindings
	engines := make(map[logicalcluster.Name]*engine, len(c.engines))
	for k, v := range c.engines {
		engines[k] = v
	}
	c.mu.Unlock()
	if bindings == nil || !bindings.Synced("") {
		return fmt.Errorf("waiting for the APIExportEndpointSlice %q and the workspaces' bindings", c.cfg.EndpointSlice)
	}
	names := make([]string, 0, len(engines))
	for k := range engines {
		names = append(names, k.String())
	}
	sort.Strings(names)
	for _, name := range names {
		e := engines[logicalcluster.Name(name)]
		if e.draining.Load() {
			continue
		}
		if err := e.s.Ready(); err != nil {
			return fmt.Errorf("workspace %s: %w", name, err)
		}
	}
	return nil
}

// countObjects sums objects_managed over the engines.
func (c *Controller) countObjects(add func(direction, resource string, n int)) {
	engines := c.engineList()
	type dr struct{ direction, resource string }
	sums := map[dr]int{}
	for _, e := range engines {
		e.s.ObjectCounts(func(direction, resource string, n int) { sums[dr{direction, resource}] += n })
	}
	for k, n := range sums {
		add(k.direction, k.resource, n)
	}
}

// reachability passes a side's reachability on to every engine.
func (c *Controller) reachability(side string, reachable bool) {
	engines := c.engineList()
	for _, e := range engines {
		e.s.Reachability(side, reachable)
	}
}

// updateGauges sets the workspace gauge and the shared informers' gauges.
func (c *Controller) updateGauges() {
	c.mu.Lock()
	syncing, draining := 0, 0
	for _, e := range c.engines {
		if e.draining.Load() {
			draining++
		} else {
			syncing++
		}
	}
	hubs := map[string]*informermanager.Hub{syncer.Upstream: c.upHub, syncer.Downstream: c.downHub}
	c.mu.Unlock()
	c.m.Workspaces.WithLabelValues(metrics.WorkspaceSyncing).Set(float64(syncing))
	c.m.Workspaces.WithLabelValues(metrics.WorkspaceDraining).Set(float64(draining))
	for side, h := range hubs {
		if h == nil {
			continue
		}
		running, synced := h.Counts()
		c.m.InformersRunning.WithLabelValues(side).Set(float64(running))
		c.m.InformersSynced.WithLabelValues(side).Set(float64(synced))
	}
}

// upSource gives a workspace's engine its shares of the upstream hub.
type upSource struct {
	hub     *informermanager.Hub
	cluster logicalcluster.Name
}

func (s upSource) Objects(gvr schema.GroupVersionResource, spec informermanager.Spec) informermanager.Shared {
	return s.hub.Share(gvr, spec, upScope{s.cluster})
}

func (s upSource) APIs(gvr schema.GroupVersionResource) informermanager.Shared {
	return s.hub.Share(gvr, informermanager.Spec{}, upScope{s.cluster})
}

// downSource gives a workspace's engine its shares of the edge hub.
type downSource struct {
	hub        *informermanager.Hub
	cluster    string
	namespaces *Namespaces
}

func (s downSource) Objects(gvr schema.GroupVersionResource, spec informermanager.Spec) informermanager.Shared {
	return s.hub.Share(gvr, spec, downScope{cluster: s.cluster, namespaces: s.namespaces, isNS: gvr == namespacesGVR})
}

func (s downSource) APIs(gvr schema.GroupVersionResource) informermanager.Shared {
	return s.hub.Share(gvr, informermanager.Spec{}, wholeScope{})
}

// allClusters sees every object of a cluster-aware hub informer (the controller's view of the
// bindings of every workspace).
type allClusters struct{}

func (allClusters) Matches(*unstructured.Unstructured) bool { return true }

func (allClusters) ToEngine(obj *unstructured.Unstructured) *unstructured.Unstructured { return obj }

func (allClusters) StoreKey(namespace, name string) string {
	return wholeScope{}.StoreKey(namespace, name)
}

func (allClusters) Candidates(idx cache.Indexer, _ bool, _ string) ([]interface{}, error) {
	return idx.List(), nil
}
