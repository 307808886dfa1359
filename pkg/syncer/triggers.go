package syncer

import (
	"context"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
)

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
			s.cfg.UpstreamDiscovery.Invalidate() // marks only: never waits on a walk
			s.cfg.DownstreamDiscovery.Invalidate()
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
