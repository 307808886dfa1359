package status

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/selection"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// Resource is how one downsynced resource maps between the sides.
type Resource struct {
	Upstream   schema.GroupVersionResource
	Downstream schema.GroupVersionResource
	// UpstreamHasStatus tells whether the upstream resource serves a status subresource.
	UpstreamHasStatus bool
	// Rename, when a conversion applies, renames objects between the sides (keys name the upstream
	// object).
	Rename *mapping.Rename
}

// Selection is what the controller needs to know of the engine's current selection.
type Selection interface {
	// Resource tells how a resource maps, if it is downsynced and served on both sides.
	Resource(gr schema.GroupResource) (Resource, bool)
	// StatusProjection is what of the upstream object's status is to be returned (nothing, when it
	// does not Return).
	StatusProjection(o selection.Object) mapping.StatusProjection
}

// Refusals tells which upstream objects the edge refuses for good (downsync knows).
type Refusals interface {
	// Refused tells whether the edge refuses the upstream object of key: which of its generations,
	// and the edge's reason.
	Refused(key framework.Key) (generation int64, message string, ok bool)
}

// Config is what NewController needs.
type Config struct {
	Upstream            dynamic.Interface
	UpstreamInformers   framework.Informers
	DownstreamInformers framework.Informers
	Selection           Selection
	Metrics             *metrics.Metrics
	// Recorder, if set, records status writes the upstream refuses for good as Events on the
	// upstream object.
	Recorder record.EventRecorder
	// Refusals, if set, tells which updates the edge refuses: their status says so (RefusedStatus).
	Refusals Refusals
	// SyncTargetName names the edge in what the status says.
	SyncTargetName string
	// Pauses, if set, tells which objects are paused: no status is returned for them, and their
	// upstream objects are labelled with the end of the pause.
	Pauses Pauses
	// Now is the clock pauses are read against (time.Now when nil).
	Now func() time.Time
}

// notReturned are resources whose upstream status is the upstream apiserver's own.
var notReturned = map[schema.GroupResource]bool{
	wellknown.CRDs.GroupResource():       true,
	wellknown.Namespaces.GroupResource(): true,
}

// Controller is the status-return controller.
type Controller struct {
	cfg    Config
	queue  *framework.Queue
	writes *framework.Writes
	// executing is the key of the label naming this sync target as running an upstream object
	// (mapping.ExecutingLabel); "" when its name cannot be one.
	executing string
	// applied is the key of the label telling which version this target's edge runs
	// (mapping.AppliedLabel); "" when its name cannot be one.
	applied string
	// releasing are the keys of edge copies deleted after their resource left the selection: their
	// upstream objects may still name this target as running them (edgeCopyGone).
	releasing sync.Map // framework.Key -> struct{}
	// forbidden are the resources whose objects the syncer may not label upstream, since when (said
	// once each; tried again after forbiddenRetry).
	forbidden sync.Map // schema.GroupResource -> time.Time
	// pausedLabel is the key of the label telling that this target holds an object paused
	// (mapping.PausedLabel); "" when its name cannot be one. pauseChecks are the keys whose label
	// may have to change (PauseChanged).
	pausedLabel string
	pauseChecks sync.Map // framework.Key -> struct{}
	// driftedLabel is the key of the label telling that this target holds an object's drift
	// (mapping.DriftedLabel); "" when its name cannot be one.
	driftedLabel string
	// paced are the keys' last status writes (pace.go).
	paced pace
}

// NewController wires the controller; it does no API I/O.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Upstream == nil || cfg.UpstreamInformers == nil || cfg.DownstreamInformers == nil || cfg.Selection == nil || cfg.Metrics == nil {
		return nil, errors.New("status: every Config field is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Controller{cfg: cfg, writes: framework.NewWrites(metrics.Status, framework.DefaultFieldManager, cfg.Metrics, cfg.Recorder),
		executing: mapping.ExecutingLabel(cfg.SyncTargetName), applied: mapping.AppliedLabel(cfg.SyncTargetName), pausedLabel: mapping.PausedLabel(cfg.SyncTargetName),
		driftedLabel: mapping.DriftedLabel(cfg.SyncTargetName)}
	c.queue = framework.NewQueue(metrics.Status, cfg.Metrics.WorkqueueProvider(), c.process)
	return c, nil
}

// Queue is the controller's queue (for its failures).
func (c *Controller) Queue() *framework.Queue { return c.queue }

// Relevant tells whether a key still concerns status return (its resource is downsynced and served
// on both sides); failures of other keys are pruned.
func (c *Controller) Relevant(key framework.Key) bool {
	_, ok := c.cfg.Selection.Resource(key.GVR.GroupResource())
	return ok
}

// Recheck looks at a key's status again (the edge took, or refused, its object).
func (c *Controller) Recheck(key framework.Key) { c.queue.Add(key) }

// Prune forgets the failures and conflicts of keys that are no longer Relevant.
func (c *Controller) Prune() {
	c.queue.Prune(c.Relevant)
	c.writes.Conflicts().Prune(c.Relevant)
	c.pauseChecks.Range(func(k, _ interface{}) bool {
		if !c.Relevant(k.(framework.Key)) {
			c.pauseChecks.Delete(k)
		}
		return true
	})
}

// Writes is the controller's write path (for its conflicts: objects other sync targets run too).
func (c *Controller) Writes() *framework.Writes { return c.writes }

// Run starts the workers and blocks until ctx is done and they have exited.
func (c *Controller) Run(ctx context.Context, workers int) { c.queue.Run(ctx, workers) }

// Handler returns the event handler of an informer of one side. Downstream, it reacts to owned
// objects appearing, changing status or going; upstream, to objects appearing or their status changing (so
// a status overwritten upstream is put back). Changes of labels or annotations count too: the
// selectors of the configs that return status look at them. Nothing else concerns status return.
func (c *Controller) Handler(downstream bool, gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	gr := gvr.GroupResource()
	enqueue := func(u *unstructured.Unstructured) {
		if u == nil || notReturned[gr] {
			return
		}
		r, ok := c.cfg.Selection.Resource(gr)
		if !ok {
			return
		}
		name := u.GetName()
		if downstream {
			if !mapping.OwnedDownstream(u) {
				return
			}
			name = r.Rename.UpName(name)
		}
		c.queue.Add(framework.Key{GVR: r.Upstream, Namespace: u.GetNamespace(), Name: name})
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if !downstream {
				enqueue(framework.MetaOf(obj)) // its name: the content is read when processed
				return
			}
			u := framework.ObjectOf(obj) // in a slim cache, its metadata and status only
			if u != nil && !carriesStatus(u) && !tellsVersion(u) {
				return // nothing to return or tell (a create's echo); its first status comes as an update
			}
			enqueue(u)
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, n := framework.ObjectOf(oldObj), framework.ObjectOf(newObj)
			if o != nil && n != nil && mapping.StatusEqual(o, n) && mapping.OwnedDownstream(o) == mapping.OwnedDownstream(n) &&
				metadataEqual(o, n, "labels") && metadataEqual(o, n, "annotations") {
				return
			}
			enqueue(n)
		},
		DeleteFunc: func(obj interface{}) {
			if downstream { // the edge copy went: this target no longer runs the object
				c.edgeCopyGone(gvr, framework.MetaOf(obj), enqueue)
			}
		},
	}
}

// metadataEqual tells whether two versions of an object have the same metadata field (read in place).
func metadataEqual(a, b *unstructured.Unstructured, field string) bool {
	va, _, _ := unstructured.NestedFieldNoCopy(a.Object, "metadata", field)
	vb, _, _ := unstructured.NestedFieldNoCopy(b.Object, "metadata", field)
	return reflect.DeepEqual(va, vb)
}

// EnqueueResource enqueues every owned downstream object of a resource (of one namespace, or of all
// for ""), after a selection change or a (re-)list.
func (c *Controller) EnqueueResource(gr schema.GroupResource, namespace string) {
	r, ok := c.cfg.Selection.Resource(gr)
	if !ok || notReturned[gr] {
		return
	}
	down, listed, ok := framework.Listed(c.cfg.DownstreamInformers, r.Downstream, namespace)
	if !ok {
		return
	}
	for _, obj := range down.List(namespace) {
		if u := framework.MetaOf(obj); u != nil && listed(u.GetNamespace()) && mapping.OwnedDownstream(u) {
			c.queue.Add(framework.Key{GVR: r.Upstream, Namespace: u.GetNamespace(), Name: r.Rename.UpName(u.GetName())})
		}
	}
}

// process writes the downstream object's status upstream when it differs, once the object names
// this sync target as running it and no other (register).
func (c *Controller) process(ctx context.Context, key framework.Key) (time.Duration, error) {
	gr := key.GVR.GroupResource()
	r, ok := c.cfg.Selection.Resource(gr)
	if !ok {
		return 0, c.release(ctx, key)
	}
	if notReturned[gr] {
		return 0, nil
	}
	// Not synced: the informers' sync enqueues everything again.
	down, synced, err := framework.Cached(c.cfg.DownstreamInformers, r.Downstream, key.Namespace, r.Rename.DownName(key.Name))
	if err != nil || !synced {
		return 0, err
	}
	if paused, wrote, err := c.paused(ctx, key, r, down); paused || wrote || err != nil {
		return 0, err // paused: downsync tells when the pause ends
	}
	// Where the edge's refusals are said upstream, an edge copy without a status (or none, its create
	// refused) may still have something to say, or a refusal to take back. Without an edge copy, this
	// target may still be named as running the object.
	refusals := r.UpstreamHasStatus && c.cfg.Refusals != nil
	switch {
	case down != nil && !mapping.OwnedDownstream(down):
		return 0, nil
	case down != nil && !carriesStatus(down) && !refusals && !tellsVersion(down):
		return 0, nil // no status to return, no version to tell: the upstream object is not read
	case down == nil && !refusals && !c.namedUpstream(r, key):
		return 0, nil // nothing to say, no label to take back: the upstream object is not decoded
	}
	up, synced, err := framework.Cached(c.cfg.UpstreamInformers, r.Upstream, key.Namespace, key.Name)
	if err != nil || !synced {
		return 0, err
	}
	if up == nil || up.GetDeletionTimestamp() != nil || mapping.OwnedUpstream(up) {
		return 0, nil
	}
	if v := c.admit(ctx, &input{up: up, now: c.cfg.Now()}); v.Stop {
		return v.After, v.Err
	}
	projection := c.cfg.Selection.StatusProjection(selection.ObjectOf(gr, up))
	// It runs the object, as status return sees it, when it has a copy whose status may be returned.
	executes := down != nil && projection.Returns() && (r.UpstreamHasStatus || carriesStatus(down))
	if wrote, err := c.register(ctx, key, r, up, executes); wrote || err != nil {
		return 0, err // the write's event brings the key back
	}
	others := c.others(up)
	carried := r.UpstreamHasStatus && projection.Returns() && len(others) == 0 // its status says what the edge runs
	if wrote, err := c.markApplied(ctx, key, r, down, up, carried); wrote || err != nil {
		return 0, err
	}
	if !projection.Returns() || (down == nil && !refusals) {
		return 0, nil
	}
	if len(others) > 0 {
		c.writes.Conflict(ctx, key, up, "Other sync targets run this object too; its status is not returned", "StatusShared",
			fmt.Sprintf("sync targets %s run this object besides %s: its status is returned only while one does; say which returns it (statusReturn.enabled false in the others' SyncerConfigs)",
				strings.Join(others, ", "), c.cfg.SyncTargetName))
		return 0, nil
	}
	c.writes.ClearConflict(key)
	return c.write(ctx, key, r, down, up, projection)
}

// write writes the status of down, as projection projects it, on up, when it differs.
func (c *Controller) write(ctx context.Context, key framework.Key, r Resource, down, up *unstructured.Unstructured,
	projection mapping.StatusProjection) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	// The edge's status as the selection projects it, its generations in upstream terms; as it is
	// where the upstream has no status subresource (there every write, this one's too, makes a new
	// generation: they cannot be told), and never an empty one there (the whole object is written).
	var status interface{}
	if !r.UpstreamHasStatus {
		status = mapping.Project(runtime.DeepCopyJSONValue(down.Object["status"]), projection, up, c.cfg.SyncTargetName, c.cfg.Now())
		if m, ok := status.(map[string]interface{}); status == nil || (ok && len(m) == 0) {
			logger.V(logging.Skip).Info("No status to return")
			return 0, nil
		}
	} else {
		if status = c.returned(down, up, key, projection); status == nil {
			// No status at the edge (down may be nil) and no refusal now: only a refusal said earlier
			// is taken back.
			cleared, ok := mapping.WithoutRefusal(up, c.cfg.SyncTargetName)
			if !ok {
				return 0, nil
			}
			status = cleared
		}
	}
	if mapping.StatusIs(up, status) {
		logger.V(logging.Skip).Info("Upstream status is up to date")
		return 0, nil
	}
	now := c.cfg.Now()
	if wait := c.paced.wait(key, now); wait > 0 {
		logger.V(logging.Skip).Info("Status written less than a second ago; writing the latest then", "after", wait)
		return wait, nil
	}
	updated := up.DeepCopy() // never mutate the cache's object
	updated.Object["status"] = status
	client := c.cfg.Upstream.Resource(r.Upstream).Namespace(key.Namespace)
	var err error
	if r.UpstreamHasStatus {
		_, err = client.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	} else {
		_, err = client.Update(ctx, updated, metav1.UpdateOptions{})
	}
	gr := key.GVR.GroupResource()
	switch {
	case apierrors.IsNotFound(err):
		return 0, nil // gone upstream; downsync deletes the edge copy
	case apierrors.IsConflict(err):
		// Our cache is behind; the upstream event that made it so enqueues the key again.
		c.cfg.Metrics.Writes.WithLabelValues(metrics.Status, gr.String(), metrics.Conflict).Inc()
		logger.V(logging.Detail).Info("Upstream object changed meanwhile; will retry")
		return time.Second, nil
	case err != nil:
		return 0, c.writes.Failed(key, up, "StatusFailed", "writing status upstream", err)
	}
	c.paced.wrote(key, now)
	c.writes.Applied(ctx, key, metrics.Updated, "Returned status upstream", "subresource", r.UpstreamHasStatus)
	return 0, nil
}

// returned is the status to return for an upstream object whose resource has a status subresource:
// the edge's in upstream terms as projection projects it, and, when the edge refuses the upstream's
// generation for good, saying so. down is nil when there is no edge copy (its create refused, say).
// nil: the edge has no status and refuses nothing.
func (c *Controller) returned(down, up *unstructured.Unstructured, key framework.Key, projection mapping.StatusProjection) interface{} {
	var status interface{}
	applied, known := int64(0), false
	if down != nil {
		status = mapping.Project(mapping.ReturnedStatus(down, up), projection, up, c.cfg.SyncTargetName, c.cfg.Now())
		applied, known = mapping.AppliedGeneration(down)
	}
	if c.cfg.Refusals == nil {
		return status
	}
	g, msg, ok := c.cfg.Refusals.Refused(key)
	if !ok || g != up.GetGeneration() || (known && applied >= g) {
		return status // none, or stale: the current generation is being written, or is
	}
	why := fmt.Sprintf("%s%d: %s", mapping.RefusalPrefix(c.cfg.SyncTargetName), g, msg)
	switch {
	case known:
		why += fmt.Sprintf(" (it runs generation %d)", applied)
	case down == nil:
		why += " (it has no copy)"
	}
	return mapping.RefusedStatus(status, up, g, why, c.cfg.Now())
}

// carriesStatus tells whether an object has a status field (process returns it, even empty).
func carriesStatus(u *unstructured.Unstructured) bool {
	_, ok := u.Object["status"]
	return ok
}
