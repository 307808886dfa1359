package upsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/gate"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/selection"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// Resource is how one upsynced resource maps between the sides. Both sides serve the same version,
// and the same group and kind unless a conversion renames them.
type Resource struct {
	Upstream   schema.GroupVersionResource
	Downstream schema.GroupVersionResource
	Namespaced bool
	// UpstreamHasStatus tells whether the upstream resource serves a status subresource.
	UpstreamHasStatus bool
	// Selected is false for a leftover: a resource that left the upsync selection while upstream
	// copies remain; those are deleted.
	Selected bool
	// Rename, when a conversion applies, renames objects between the sides: keys name the upstream
	// copy, the edge object may have another group, kind or name.
	Rename *mapping.Rename
}

// Selection is what the controller needs to know of the engine's current selection.
type Selection interface {
	// Resource tells how a resource maps, if it is upsynced or a leftover; gr names it on either side.
	Resource(gr schema.GroupResource) (Resource, bool)
	// UpsyncMatches tells whether an edge object is selected for upsync.
	UpsyncMatches(o selection.Object) bool
	// UpsyncNamesExplicitly tells whether an upsync entry lists the object's name itself.
	UpsyncNamesExplicitly(o selection.Object) bool
	// Resources lists the upsynced resources (Selected) and the leftovers.
	Resources() []Resource
}

// Config is what NewController needs.
type Config struct {
	Upstream            dynamic.Interface
	UpstreamInformers   framework.Informers
	DownstreamInformers framework.Informers
	Selection           Selection
	Metrics             *metrics.Metrics
	// OwnerLabelValue identifies this syncer's copies (mapping.UpsyncOwnerLabel).
	OwnerLabelValue string
	// ConflictRecheckPeriod is how often an object blocked by an unmarked upstream object is looked
	// at again.
	ConflictRecheckPeriod time.Duration
	// OnLeftoverDeleted, if set, is told when a copy of a leftover resource was deleted.
	OnLeftoverDeleted func(schema.GroupResource)
	// Recorder, if set, records a conflict as an Event on the upstream object in the way.
	Recorder record.EventRecorder
	// FieldManager names the syncer's writes upstream (framework.DefaultFieldManager when empty), so
	// that a loop with another writer can name that writer.
	FieldManager string
	// Now is the clock pauses are read against (time.Now when nil).
	Now func() time.Time
	// ProtectedNamespaces are kept to the edge: nothing in them is upsynced, nor are they.
	ProtectedNamespaces sets.Set[string]
	// Secrets lets Secrets be upsynced (never a ServiceAccount token's): the edge owner's choice.
	Secrets bool
}

// Controller is the upsync controller.
type Controller struct {
	cfg    Config
	queue  *framework.Queue
	writes *framework.Writes
	gates  gate.Chain[*input]
	// withheld are the edge objects selected but kept to the edge (reads), and why.
	withheld framework.ConflictLog
}

// NewController wires the controller; it does no API I/O.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Upstream == nil || cfg.UpstreamInformers == nil || cfg.DownstreamInformers == nil || cfg.Selection == nil || cfg.Metrics == nil {
		return nil, errors.New("upsync: clients, informers, selection and metrics are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ConflictRecheckPeriod <= 0 {
		cfg.ConflictRecheckPeriod = time.Minute
	}
	if cfg.FieldManager == "" {
		cfg.FieldManager = framework.DefaultFieldManager
	}
	c := &Controller{cfg: cfg, writes: framework.NewWrites(metrics.Upsync, cfg.FieldManager, cfg.Metrics, cfg.Recorder).LogDeletesLoudly()}
	c.gates = c.newGates()
	c.withheld.Describe = func(reason string) (problem.Kind, string) { return problem.SyncFailed, reason }
	c.queue = framework.NewQueue(metrics.Upsync, cfg.Metrics.WorkqueueProvider(), c.process)
	return c, nil
}

// Writes is the controller's write path (for its conflicts).
func (c *Controller) Writes() *framework.Writes { return c.writes }

// Withheld are the edge objects selected for upsync but kept to the edge (for ObjectsSynced).
func (c *Controller) Withheld() *framework.ConflictLog { return &c.withheld }

// Relevant tells whether a key still concerns upsync: its resource is upsynced (or a leftover) and,
// when selected, the edge object matches an upsync entry. Conflicts and failures of other keys are
// pruned. A key whose edge object the cache cannot show (gone, or not synced yet) is kept: its
// upstream copy may still have to go, and processing it settles that.
func (c *Controller) Relevant(key framework.Key) bool {
	r, ok := c.cfg.Selection.Resource(key.GVR.GroupResource())
	if !ok || !r.Selected {
		return ok
	}
	down, synced, err := framework.Cached(c.cfg.DownstreamInformers, r.Downstream, key.Namespace, r.Rename.DownName(key.Name))
	if err != nil || !synced || down == nil {
		return true
	}
	return c.cfg.Selection.UpsyncMatches(selection.ObjectOf(r.Downstream.GroupResource(), down))
}

// Prune forgets the conflicts and failures of keys that are no longer Relevant: nothing processes
// them again, so they would otherwise be reported for good.
func (c *Controller) Prune() {
	c.writes.Conflicts().Prune(c.Relevant)
	c.queue.Prune(c.Relevant)
}

// Queue is the controller's queue (for its failures).
func (c *Controller) Queue() *framework.Queue { return c.queue }

// Run starts the workers and blocks until ctx is done and they have exited.
func (c *Controller) Run(ctx context.Context, workers int) { c.queue.Run(ctx, workers) }

// Handler returns the event handler of an informer of one side. Downstream it reacts to every
// object the syncer did not downsync; upstream to its own copies, and to deletions (a conflicting
// object going away frees the name).
func (c *Controller) Handler(downstream bool, gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	gr := gvr.GroupResource()
	relevant := func(u *unstructured.Unstructured) bool {
		if downstream {
			return !mapping.OwnedDownstream(u)
		}
		return mapping.OwnedUpstream(u)
	}
	enqueue := func(u *unstructured.Unstructured) {
		if r, ok := c.cfg.Selection.Resource(gr); ok {
			name := u.GetName()
			if downstream {
				name = r.Rename.UpName(name) // keys name the upstream copy
			}
			c.queue.Add(framework.Key{GVR: r.Upstream, Namespace: u.GetNamespace(), Name: name})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if u := framework.MetaOf(obj); u != nil && relevant(u) { // its marks; the content is read when processed
				enqueue(u)
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, n := framework.ObjectOf(oldObj), framework.ObjectOf(newObj)
			if o == nil || n == nil || o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			if relevant(o) || relevant(n) {
				enqueue(n)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if u := framework.MetaOf(obj); u != nil {
				enqueue(u)
			}
		},
	}
}

// EnqueueResource enqueues every object of a resource (of one namespace, or of all for "") that
// either side's cache holds.
func (c *Controller) EnqueueResource(gr schema.GroupResource, namespace string) {
	r, ok := c.cfg.Selection.Resource(gr)
	if !ok {
		return
	}
	add := func(ns, name string) { c.queue.Add(framework.Key{GVR: r.Upstream, Namespace: ns, Name: name}) }
	framework.ForEachKey(c.cfg.UpstreamInformers, r.Upstream, namespace, add)
	framework.ForEachKey(c.cfg.DownstreamInformers, r.Downstream, namespace, func(ns, name string) { add(ns, r.Rename.UpName(name)) })
}

// process makes the upstream copy of one edge object match it: create or update it while the edge
// object is selected, delete it otherwise.
func (c *Controller) process(ctx context.Context, key framework.Key) (time.Duration, error) {
	r, ok := c.cfg.Selection.Resource(key.GVR.GroupResource())
	if !ok {
		return 0, nil
	}
	// Upsync entries select edge objects: by the edge's resource and name.
	gr, name := r.Downstream.GroupResource(), r.Rename.DownName(key.Name)
	// Not synced: enqueued again when the cache syncs.
	up, synced, err := framework.Cached(c.cfg.UpstreamInformers, r.Upstream, key.Namespace, key.Name)
	if err != nil || !synced {
		return 0, err
	}
	var down *unstructured.Unstructured
	if r.Selected {
		if down, synced, err = framework.Cached(c.cfg.DownstreamInformers, r.Downstream, key.Namespace, name); err != nil || !synced {
			return 0, err
		}
	}
	in := &input{key: key, gr: gr, down: down, now: c.cfg.Now()}
	if v := c.admit(ctx, in); v.Stop {
		return v.After, v.Err
	}
	wanted := r.Selected && down != nil && in.withheld == "" && down.GetDeletionTimestamp() == nil && !mapping.OwnedDownstream(down) &&
		c.cfg.Selection.UpsyncMatches(selection.ObjectOf(gr, down)) &&
		// The edge apiserver's own objects (root CA, default ServiceAccount, tokens) only when named.
		(!mapping.SystemObject(gr, down) || c.cfg.Selection.UpsyncNamesExplicitly(selection.ObjectOf(gr, down)))
	if !wanted {
		return 0, c.deleteUpstream(ctx, key, r, up, down)
	}
	return c.applyUpstream(ctx, key, r, down, up)
}

func (c *Controller) deleteUpstream(ctx context.Context, key framework.Key, r Resource, up, down *unstructured.Unstructured) error {
	c.writes.ClearConflict(key)
	if up == nil || !mapping.OwnedUpstream(up) || up.GetDeletionTimestamp() != nil {
		return nil
	}
	switch mapping.ClaimOf(up, c.cfg.OwnerLabelValue) {
	case mapping.UpsyncedByOther:
		return nil // another syncer's copy
	case mapping.UpsyncedUnproven:
		// It looks like a copy, but nothing proves this syncer made it: never delete it.
		c.writes.Conflict(ctx, key, up,
			fmt.Sprintf("Not deleting %s upstream: it carries the upsync mark but not the edge UID (%s) that proves this syncer made it; delete it by hand if it is a stale copy",
				key.String(), mapping.UpsyncSourceUIDAnnotation),
			"UpsyncNotDeleted", "Not deleted by the syncer: this object carries the upsync mark but nothing proves the syncer made it (no "+mapping.UpsyncSourceUIDAnnotation+")")
		return nil
	}
	why := "the edge object is gone"
	switch {
	case !r.Selected:
		why = "its resource is no longer upsynced"
	case down != nil && down.GetDeletionTimestamp() != nil:
		why = "the edge object is being deleted"
	case down != nil:
		why = "the edge object is no longer selected for upsync"
	}
	client := c.cfg.Upstream.Resource(r.Upstream).Namespace(key.Namespace)
	// Deleting upstream removes what others may read: logged at level 0, and an Event.
	deleted, err := c.writes.DeleteOwned(ctx, client, key, up, "Deleted upsynced copy upstream", "reason", why, "edgeUID", mapping.UpsyncedFrom(up))
	if err != nil || !deleted {
		return err
	}
	c.writes.Event(up, corev1.EventTypeNormal, "UpsyncDeleted", "Deleted by sync target "+c.cfg.OwnerLabelValue+": "+why)
	if !r.Selected && c.cfg.OnLeftoverDeleted != nil {
		c.cfg.OnLeftoverDeleted(key.GVR.GroupResource())
	}
	return nil
}

// ensureNamespace creates a missing namespace upstream for an upsynced object.
func (c *Controller) ensureNamespace(ctx context.Context, name string) error {
	ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetName(name)
	_, err := c.cfg.Upstream.Resource(wellknown.Namespaces).Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %q upstream: %w", name, err)
	}
	if err == nil {
		klog.FromContext(ctx).V(logging.Change).Info("Created namespace upstream for upsynced objects", "namespace", name)
	}
	return nil
}
