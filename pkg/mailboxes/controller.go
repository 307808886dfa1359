package mailboxes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
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
	"github.com/kubestellar/syncer/pkg/wellknown"
)

var apiBindingsGR = wellknown.APIBindings

// Config is what NewController needs.
type Config struct {
	// Provider is the workspace that holds the APIExportEndpointSlice (the --upstream-kubeconfig one);
	// the virtual workspace is reached with the same credentials.
	Provider *rest.Config
	// EndpointSlice names the APIExportEndpointSlice.
	EndpointSlice string
	// Downstream and DownstreamDiscovery talk to the edge; the discovery client caches (see
	// syncer.Config) and every workspace's engine shares it.
	Downstream          dynamic.Interface
	DownstreamDiscovery *syncer.Discovery
	// DownstreamWrites, if set, writes at the edge on the workspaces' behalf (syncer.Config's).
	DownstreamWrites dynamic.Interface
	// Engine is the template of every workspace's engine: workers, periods, sync target, metrics;
	// the clients, sources and cluster are filled in per workspace.
	Engine syncer.Config
	// NewRecorder, if set, returns the Event recorder of a workspace (reached at cfg) and what
	// stops it.
	NewRecorder func(ctx context.Context, cluster logicalcluster.Name, cfg *rest.Config) (record.EventRecorder, func())
	// DrainQuietPeriod is how long a workspace's binding must stay gone before what the syncer wrote
	// for it at the edge is deleted (a binding deleted by mistake and made again deletes nothing).
	DrainQuietPeriod time.Duration
}

// Controller serves every workspace bound to an APIExport: one engine per workspace (pkg/syncer),
// all of them sharing one list and watch per resource on each side.
type Controller struct {
	cfg        Config
	m          *metrics.Metrics
	ownerLabel string
	namespaces *Namespaces
	queue      workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	vw      *rest.Config // the virtual workspace, once known
	client  *kcpdynamic.ClusterClientset
	upHub   *informermanager.Hub
	downHub *informermanager.Hub
	// upDisc and downDisc are every engine's discovery: one walk per invalidation, whichever engine
	// invalidated, however many resolve at once.
	upDisc   *syncer.Discovery
	downDisc *syncer.Discovery
	bindings framework.Cache
	engines  map[logicalcluster.Name]*engine
	// marked are the workspaces with objects at the edge found at start, and the resources holding them.
	marked map[logicalcluster.Name]map[schema.GroupResource]schema.GroupVersionResource
	// unbound are the workspaces whose binding is gone, since when: drained once gone for
	// Config.DrainQuietPeriod.
	unbound  map[logicalcluster.Name]time.Time
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
		queue:   framework.NewLoopQueue[string]("workspaces", cfg.Engine.Metrics.WorkqueueProvider()),
		engines: map[logicalcluster.Name]*engine{}, marked: map[logicalcluster.Name]map[schema.GroupResource]schema.GroupVersionResource{},
	}
	c.downDisc = cfg.DownstreamDiscovery
	c.downHub = informermanager.NewHub(informermanager.HubOptions{Side: syncer.Downstream,
		Lister:   func(gvr schema.GroupVersionResource) informermanager.Lister { return cfg.Downstream.Resource(gvr) },
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, WorkspaceIndex: workspaceIndexFunc},
		// Streamed lists are keyed by namespace and name, as this store is.
		WatchList: true, OnChange: c.updateGauges})
	c.m.SetObjectCounter(c.countObjects)
	return c, nil
}

// Run serves the workspaces until ctx is done; it returns once every engine and informer stopped.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown() // its goroutines run from NewController on, whether the loop ran or not
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

	release, err := c.watchWorkspaces(ctx)
	defer release()
	if err != nil {
		return err
	}
	if err := c.scanMarked(ctx); err != nil {
		return err
	}

	defer c.engineWG.Wait()
	defer c.stopAll()
	var refresh sync.WaitGroup
	defer refresh.Wait()
	if p := c.cfg.Engine.DiscoveryRefreshPeriod; p > 0 {
		refresh.Go(func() { c.refreshDiscovery(ctx, p) })
	}
	framework.RunLoop(ctx, c.queue, func(ctx context.Context, key string) (time.Duration, error) {
		err := c.reconcile(ctx, logicalcluster.Name(key))
		if err != nil && ctx.Err() == nil {
			logger.Error(err, "Could not bring a workspace's engine in line; retrying", "workspace", key)
		}
		return 0, err
	})
	return stopCause(outer, ctx, nil)
}

// watchWorkspaces watches the edge's Namespaces (which tell the workspace namespace each mapped one
// comes from) and every workspace's APIBindings, and returns once both are listed; release stops the
// watches, and is to be called even on an error.
func (c *Controller) watchWorkspaces(ctx context.Context) (release func(), err error) {
	nsShare := c.downHub.Share(namespacesGVR, informermanager.Spec{}, wholeScope{})
	release = nsShare.Release
	edgeNamespaces := nsShare.Cache()
	if _, err := edgeNamespaces.AddHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.observeNamespace(obj) },
		UpdateFunc: func(_, obj interface{}) { c.observeNamespace(obj) },
	}); err != nil {
		return release, err
	}
	bindingsGVR, err := c.bindingsResource()
	if err != nil {
		return release, err
	}
	bShare := c.upHub.Share(bindingsGVR, informermanager.Spec{}, allClusters{})
	release = func() { bShare.Release(); nsShare.Release() }
	c.mu.Lock()
	c.bindings = bShare.Cache()
	c.mu.Unlock()
	if _, err := c.bindings.AddHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.enqueueBinding(obj) },
		UpdateFunc: func(_, obj interface{}) { c.enqueueBinding(obj) },
		DeleteFunc: func(obj interface{}) { c.enqueueBinding(obj) },
	}); err != nil {
		return release, err
	}
	if !cache.WaitForNamedCacheSync("workspaces", ctx.Done(), func() bool { return edgeNamespaces.Synced("") && c.bindings.Synced("") }) {
		return release, ctx.Err()
	}
	// Every edge Namespace is known before the views need them (the handler may not have seen all yet).
	for _, obj := range edgeNamespaces.List("") {
		c.observeNamespace(obj)
	}
	return release, nil
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
	c.vw, c.client, c.upDisc = vw, client, syncer.NewDiscovery(disc)
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
	if groups == nil {
		return schema.GroupVersionResource{}, fmt.Errorf("the virtual workspace serves no API group")
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
	return framework.ScanLabelled(ctx, c.cfg.Downstream, gvr, mapping.OwnerLabel+"="+c.ownerLabel, 500, func(u *unstructured.Unstructured) bool {
		if cluster := logicalcluster.Name(mapping.ClusterOf(u)); !cluster.Empty() {
			if found[cluster] == nil {
				found[cluster] = map[schema.GroupResource]schema.GroupVersionResource{}
			}
			found[cluster][gvr.GroupResource()] = gvr
		}
		return true
	})
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
