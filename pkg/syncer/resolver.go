package syncer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/conditions"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/selection"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// apiBindingsResource is kcp's APIBinding: a workspace that serves it is a kcp workspace.
var apiBindingsResource = wellknown.APIBindings

// discoverer is the part of a discovery client the resolver uses.
type discoverer interface {
	ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error)
}

// informerSet is one side's informer manager as the resolver sees it.
type informerSet interface {
	Hold(desired map[schema.GroupVersionResource]informermanager.Spec)
	Set(desired map[schema.GroupVersionResource]informermanager.Spec) []schema.GroupVersionResource
	Cache(gvr schema.GroupVersionResource) (framework.Cache, bool)
	Overfull() map[schema.GroupVersionResource]informermanager.Overflow
}

// resolver turns the SyncerConfigs and both sides' discovery into a snapshot, and makes the informers
// match it. It runs on the engine's resolve goroutine only.
type resolver struct {
	configs func() []*unstructured.Unstructured
	// watchEdgeConfigs is told whether upstream serves EdgeSyncConfigs, and tells whether configs
	// lists them (or they cannot be listed).
	watchEdgeConfigs   func(ctx context.Context, served bool) (listed bool)
	upDisc, downDisc   discoverer
	upClient, downClnt dynamic.Interface // for the leftover scans at start
	// ownedDown, if set, replaces the downstream scan at start (Config.DownstreamOwned).
	ownedDown  func() map[schema.GroupResource]schema.GroupVersionResource
	up, down   informerSet
	ownerLabel string
	// fieldManager is the downsync writes' apply manager: the edge caches of what only downsync
	// writes keep the digest of its fields instead of the objects' content (Spec.AppliedBy).
	fieldManager string
	// publish makes a snapshot current; called before informers start, so that their first events
	// see it.
	publish func(*snapshot)
	// maxNamespaces is how many namespaces an upstream resource may be watched in one by one; past
	// it, reviewClusterWide asks whether it may be watched cluster-wide instead.
	maxNamespaces     int
	reviewClusterWide func(ctx context.Context, gvr schema.GroupVersionResource)
	// fenced: the edge writes go through an executor (Config.DownstreamWrites), so fenceOut applies,
	// with fenceAllow (Config.FenceAllow).
	fenced     bool
	fenceAllow []string
	// maxObjectBytes is the upstream informers' Spec.MaxObjectBytes (Config.MaxObjectBytes).
	maxObjectBytes int
	// maxObjects is the upstream informers' Spec.MaxObjects (Config.MaxObjectsPerResource); overfull
	// are the resources held for having more (holdOverfull).
	maxObjects int
	overfull   map[schema.GroupResource]informermanager.Overflow
	// apis are both sides' CRDs; retryIn is how soon the last resolve asked to be run again, for a CRD
	// Established that discovery did not show yet (0: not).
	apis    announced
	retryIn time.Duration

	scanned      bool   // leftovers scan done downstream
	upScanned    bool   // upsync leftovers scan done upstream
	lastProblems string // problems last logged
}

// side is one side's discovery: what it serves, and the groups whose discovery failed this time.
type side struct {
	index  *selection.Index
	failed sets.Set[string]
}

// errConfigsNotListed: upstream serves EdgeSyncConfigs, but they are not listed yet. Resolving
// without them would take their objects for deselected.
var errConfigsNotListed = errors.New("the EdgeSyncConfigs are not listed yet")

// configsListedPoll is how soon a resolve that waits for the EdgeSyncConfigs to be listed is tried again.
const configsListedPoll = 100 * time.Millisecond

// resolve recomputes the snapshot from old, publishes it and makes the informers match it.
func (r *resolver) resolve(ctx context.Context, old *snapshot) (*snapshot, error) {
	up, err := discover(r.upDisc)
	if err != nil {
		return nil, fmt.Errorf("upstream discovery: %w", err)
	}
	esc, served := up.index.Lookup(edgev1.EdgeSyncConfigGVR.GroupResource(), edgev1.EdgeSyncConfigGVR.Version)
	if !r.watchEdgeConfigs(ctx, served && esc.GVR == edgev1.EdgeSyncConfigGVR) {
		return nil, errConfigsNotListed
	}
	configs, edgeConfigs, problems := r.readConfigs()
	sel, mergeProblems := selection.Merge(configs, edgeConfigs...)
	problems = append(problems, mergeProblems...)

	down, err := discover(r.downDisc)
	if err != nil {
		return nil, fmt.Errorf("downstream discovery: %w", err)
	}
	r.retryIn = r.apis.retryIn(ctx, up, down)
	next := resolveSelection(sel, old, up, down, r.fenced, r.fenceAllow)
	if b, ok := up.index.Lookup(apiBindingsResource, ""); ok {
		next.bindings = b.GVR
	}
	r.holdOverfull(ctx, next)
	next.problems = append(problems, next.problems...)
	if next.leftovers, err = r.findLeftovers(ctx, old, down, next.resources); err != nil {
		return nil, err
	}
	if next.upLeftovers, err = r.findUpsyncLeftovers(ctx, old, up, next.owningUpstream()); err != nil {
		return nil, err
	}
	// The informers the new snapshot changes stop counting as synced before it is published (a
	// widened scope read through the old informer would show the added namespaces empty); the
	// snapshot is published before new informers start, so that their first events see it.
	upSpecs, downSpecs := informerSpecs(next, r.ownerLabel, r.fieldManager)
	for gvr, spec := range upSpecs {
		spec.MaxObjectBytes = r.maxObjectBytes // what a mailbox can make the syncer hold of one object
		if spec.LabelSelector == "" && gvr != namespaceGVR {
			// And how many of a selected resource: not of upsync leftovers, nor of the Namespaces,
			// watched whole for the namespaces of every selected object.
			spec.MaxObjects = r.maxObjects
		}
		upSpecs[gvr] = spec
		if r.reviewClusterWide != nil && len(spec.NamespaceList()) > r.maxNamespaces {
			r.reviewClusterWide(ctx, gvr)
		}
	}
	r.up.Hold(upSpecs)
	r.down.Hold(downSpecs)
	r.publish(next)
	r.up.Set(upSpecs)
	r.down.Set(downSpecs)
	r.logProblems(ctx, next.problems)
	return next, nil
}

// readConfigs parses every cached SyncerConfig and EdgeSyncConfig; malformed ones are problems and
// skipped.
func (r *resolver) readConfigs() (configs []*edgev1.SyncerConfig, edgeConfigs []*edgev1.EdgeSyncConfig, problems []problem.Problem) {
	for _, u := range r.configs() {
		kind, _ := conditions.KindOf(u)
		var err error
		if kind == problem.EdgeSyncConfig {
			var esc *edgev1.EdgeSyncConfig
			if esc, err = edgev1.EdgeSyncConfigFromUnstructured(u.Object); err == nil {
				edgeConfigs = append(edgeConfigs, esc)
			}
		} else {
			var cfg *edgev1.SyncerConfig
			if cfg, err = edgev1.FromUnstructured(u.Object); err == nil {
				configs = append(configs, cfg)
			}
		}
		if err != nil {
			problems = append(problems, problem.Problem{Kind: problem.InvalidConfig, ConfigKind: kind, Config: u.GetName(), Reason: err.Error()})
		}
	}
	return configs, edgeConfigs, problems
}

// discover reads one side's discovery. Groups that fail are returned so that their resources can be
// kept from the previous snapshot instead of being taken for gone.
func discover(d discoverer) (side, error) {
	groups, lists, err := d.ServerGroupsAndResources()
	failed := sets.New[string]()
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			return side{}, err
		}
		for gv := range gdf.Groups {
			failed.Insert(gv.Group)
		}
	}
	return side{index: selection.NewIndex(groups, lists), failed: failed}, nil
}

// resolveSelection resolves the selection against both sides, keeping from old what a failed group
// discovery would otherwise drop; fenced, without what no fence can hold (fenceOut).
func resolveSelection(sel *selection.Selection, old *snapshot, up, down side, fenced bool, fenceAllow []string) *snapshot {
	resources, problems := selection.Resolve(sel, up.index, down.index)
	for gr, res := range old.resources {
		if _, ok := resources[gr]; !ok && sel.Mentions(gr, res.Upstream.Kind) && up.failed.Has(gr.Group) {
			resources[gr] = res // discovery of its group failed this time; keep what worked
			// A kind entry's problem names the kind as its resource.
			byKind := schema.GroupResource{Group: gr.Group, Resource: res.Upstream.Kind}
			problems = slices.DeleteFunc(problems, func(p problem.Problem) bool { return p.Resource == gr || p.Resource == byKind })
		}
	}
	for gr, res := range resources {
		if prev := old.resources[gr]; !res.ServedDownstream() && prev != nil && prev.ServedDownstream() && down.failed.Has(gr.Group) {
			res.Downstream = prev.Downstream
		}
		if !res.ServedDownstream() {
			reason := fmt.Sprintf("resource %q version %s is not served downstream yet; its objects wait", gr, res.Upstream.GVR.Version)
			if res.Rename != nil && res.Rename.Down != res.Rename.Up {
				reason = fmt.Sprintf("resource %q is renatured as %s, which is not served downstream yet; its objects wait", gr, res.Rename.Down)
			}
			problems = append(problems, problem.Problem{Kind: problem.NotServedDownstream, Resource: gr, Reason: reason})
		}
	}
	if fenced {
		problems = append(problems, fenceOut(sel, resources, fenceAllow)...)
	}
	upsyncRes, upsyncProblems := selection.ResolveUpsync(sel, up.index, down.index)
	for gr, res := range old.upsync {
		if _, ok := upsyncRes[gr]; !ok && (up.failed.Has(gr.Group) || down.failed.Has(gr.Group)) && sel.UpsyncMentions(gr, res.Downstream.Kind) {
			upsyncRes[gr] = res // discovery of its group failed this time; keep what worked
		}
	}
	next := &snapshot{selection: sel, resources: resources, upsync: upsyncRes, problems: append(problems, upsyncProblems...)}
	next.indexRenamed()
	return next
}

// informerSpecs are the informers a snapshot needs on each side. Downstream: every Namespace (objects
// wait for theirs), and the owned objects of selected and leftover resources. Upstream: every object
// of selected resources, in the namespaces the selection names for them when it names some
// (upstreamScope). Upsync sees every edge object of its resources and every upstream one (to find
// conflicts); upsync leftovers only this syncer's copies, which may be in any namespace. The edge
// caches of owned objects are slim (metadata, status and the digest of what fieldManager applied):
// only the caches upsync reads keep objects whole.
func informerSpecs(s *snapshot, ownerLabel, fieldManager string) (up, down map[schema.GroupVersionResource]informermanager.Spec) {
	up = map[schema.GroupVersionResource]informermanager.Spec{}
	down = map[schema.GroupVersionResource]informermanager.Spec{namespaceGVR: {Manager: fieldManager}}
	owned := informermanager.Spec{LabelSelector: mapping.OwnerLabel + "=" + ownerLabel, AppliedBy: fieldManager, Manager: fieldManager}
	for _, r := range s.resources {
		up[r.Upstream.GVR] = informermanager.Spec{Namespaces: upstreamScope(s.selection, r)}
		if r.ServedDownstream() && r.Downstream.GVR != namespaceGVR {
			down[r.Downstream.GVR] = owned
		}
	}
	for _, gvr := range s.leftovers {
		if gvr != namespaceGVR {
			down[gvr] = owned
		}
	}
	for _, r := range s.upsync {
		up[r.Upstream.GVR] = informermanager.Spec{}
		down[r.Downstream.GVR] = informermanager.Spec{Manager: fieldManager}
	}
	for _, gvr := range s.upLeftovers {
		if spec, ok := up[gvr]; !ok {
			up[gvr] = informermanager.Spec{LabelSelector: mapping.UpsyncOwnerLabel + "=" + ownerLabel}
		} else if spec.Namespaces != "" {
			up[gvr] = informermanager.Spec{} // the copies to delete may be outside the downsynced namespaces
		}
	}
	return up, down
}

// upstreamScope is the namespace scope of a downsynced resource's upstream informer: the namespaces
// the selection names for it, when every entry selecting it names its namespaces; "" (cluster-wide)
// when one names "*", when none names any, and for cluster-scoped resources (Namespaces among them).
// Objects outside those namespaces are not selected, so the informer need not see them, and the
// syncer may be granted the resource in those namespaces only.
func upstreamScope(sel *selection.Selection, r *selection.Resource) string {
	if !r.Upstream.Namespaced {
		return ""
	}
	namespaces, all := sel.NamespacesOf(r.Upstream.GVR.GroupResource(), r.Upstream.Kind)
	if all {
		return ""
	}
	return informermanager.NamespaceScope(namespaces)
}

// logProblems logs the problems at level 0 when they differ from those logged last.
func (r *resolver) logProblems(ctx context.Context, problems []problem.Problem) {
	texts := problem.Strings(problems)
	slices.Sort(texts)
	summary := strings.Join(texts, "\n")
	if summary == r.lastProblems {
		return
	}
	r.lastProblems = summary
	logger := klog.FromContext(ctx)
	for _, p := range problems {
		if p.Warning() {
			logger.Info("Selection warning", append([]interface{}{"problem", p.String(), "kind", p.Kind}, problem.ConfigKeysAndValues(p.ConfigKind, p.Config)...)...)
		} else {
			logger.Error(nil, "Selection problem", append([]interface{}{"problem", p.String(), "kind", p.Kind}, problem.ConfigKeysAndValues(p.ConfigKind, p.Config)...)...)
		}
	}
}
