package downsync

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/report"
	"github.com/kubestellar/syncer/pkg/selection"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

var namespaceGVR = wellknown.Namespaces

// Resource is how one resource maps for downsync.
type Resource struct {
	// Upstream is where objects are read; empty for a leftover (a resource watched downstream only
	// to delete, or hold, the objects the syncer owns there).
	Upstream schema.GroupVersionResource
	// Downstream is where objects are written; empty while the edge does not serve the resource.
	Downstream schema.GroupVersionResource
	// Namespaced tells whether objects of the resource live in namespaces.
	Namespaced bool
	// UpstreamHasStatus tells whether the upstream resource serves a status subresource (then the
	// edge copies record the upstream generation: mapping.Options.Generation).
	UpstreamHasStatus bool
	// Rename, when a conversion applies, renames objects between the sides: keys name the upstream
	// object, the downstream one may have another group, kind or name.
	Rename *mapping.Rename
	// Held, for a leftover, tells that its resource is selected but held (too many objects
	// upstream): its objects are kept, never deleted.
	Held bool
}

// KeyGVR is the GVR of the resource's queue keys: the upstream version when selected, so that events
// of both sides for one object make one key.
func (r Resource) KeyGVR() schema.GroupVersionResource {
	if !r.Upstream.Empty() {
		return r.Upstream
	}
	return r.Downstream
}

// Selection is what the controller needs to know of the engine's current selection.
type Selection interface {
	// Resource tells how a resource maps, if downsync looks after it (selected or a leftover). gr is
	// the upstream GroupResource, or the downstream one where a conversion renames the resource.
	Resource(gr schema.GroupResource) (Resource, bool)
	// Matches tells whether an upstream object is selected.
	Matches(o selection.Object) bool
	// PolicyOf is what the configs selecting an object say of it at now: whether it is selected, its
	// retained fields, drift policy, pause, report-only, deletion (selection.Policy).
	PolicyOf(o selection.Object, now time.Time) selection.Policy
	// NamesExplicitly tells whether a config names the object itself, not only through a wildcard.
	NamesExplicitly(o selection.Object) bool
	// Mentions tells whether any config names the resource (whose objects are of the kind, "" when
	// unknown), served or not.
	Mentions(gr schema.GroupResource, kind string) bool
	// Resources lists the selected resources read upstream (their Upstream set; Downstream when the
	// edge serves them).
	Resources() []Resource
}

// Config is what NewController needs.
type Config struct {
	Downstream          dynamic.Interface
	UpstreamInformers   framework.Informers
	DownstreamInformers framework.Informers
	Selection           Selection
	Metrics             *metrics.Metrics
	// Recorder, if set, records conflicts and writes the edge refuses for good as Events on the
	// upstream object.
	Recorder record.EventRecorder
	// EdgeRecorder, if set, records Events on edge copies for the technician at the site: a pause
	// set upstream, a drift held.
	EdgeRecorder record.EventRecorder
	// SyncTargetName names the edge in Events.
	SyncTargetName string
	// Mapping is the syncer's identity as written into the marks.
	Mapping mapping.Options
	// FieldManager is the server-side apply field manager (framework.DefaultFieldManager when empty).
	FieldManager string
	// AdoptExisting lets the syncer take over downstream objects that exist without its mark.
	AdoptExisting bool
	// ConflictRecheckPeriod is how often an object blocked by an unowned downstream object is looked
	// at again (a minute when zero).
	ConflictRecheckPeriod time.Duration
	// OnOwnedDeleted, if set, is told the resource of every object deleted downstream, so that the
	// engine can stop watching a leftover resource once nothing of the syncer's is left in it.
	OnOwnedDeleted func(schema.GroupResource)
	// OnRefused, if set, is told the key of every object whose write the edge refuses for good, or
	// takes again after such a refusal (Refused changed): status return reports it upstream.
	OnRefused func(framework.Key)
	// Deletions, if set, is asked before each deletion of an object no longer wanted (the deletion
	// breaker), and told of keys wanted again.
	Deletions Deletions
	// Fence, if set, says whether the edge owner's fence was last proven in force: nothing is written
	// at the edge while it is not.
	Fence Fence
	// Contents, if set, lists what the edge holds in a Namespace or of a CRD's resource: such a
	// container is deleted only once nothing the syncer did not write is in it, after the syncer's own.
	Contents Contents
	// AllowEmptyingHonoured lets the configs' allowEmptying exempt rewrites that empty objects from
	// Deletions (the site trusts its mailbox with its breaker); else they are counted regardless.
	AllowEmptyingHonoured bool
	// OnDeletionsHeld, if set, is told when Deletions starts holding.
	OnDeletionsHeld func()
	// OnPauseChanged, if set, is told the key of every object whose pause starts, changes or ends
	// (PausedUntil changed): status return labels the upstream object with it.
	OnPauseChanged func(framework.Key)
	// ReportOnly writes nothing at the edge: what would be written is recorded in Report (and
	// logged). So are the objects that only report-only SyncerConfigs select.
	ReportOnly bool
	// Report is the report of report-only mode (an empty one when nil).
	Report *report.Store
	// Now is the clock pauses are read against (time.Now when nil).
	Now func() time.Time
	// Autoscalers, if set, tells which edge objects an autoscaler there scales: their spec.replicas is
	// the autoscaler's (a retained field).
	Autoscalers Autoscalers
	// Signatures, if set, verifies each upstream object before it is written (package signature):
	// what is applied is what was signed.
	Signatures Signatures
	// MaxObjectBytes is the syncer's limit on an upstream object (for what it says of one over it:
	// the upstream caches hold such an object as a mapping.TooLargeStub).
	MaxObjectBytes int
	// MaxEdgeBytes, when positive, bounds what the syncer's copies at the edge hold in all (stored):
	// a write past it is held, and said.
	MaxEdgeBytes int64
}

// Signatures verifies upstream objects against the keys the edge trusts (package signature).
type Signatures interface {
	// Verify returns the object to apply (the signed manifest), the key's id, or why it does not
	// verify at sync target target, whose copy there records appliedSerial (signature.AppliedSerial).
	Verify(obj *unstructured.Unstructured, target string, appliedSerial int64) (*unstructured.Unstructured, string, error)
	// Enforce tells whether an object that does not verify is left unwritten (else written, and said).
	Enforce() bool
}

// Autoscalers tells which edge objects an autoscaler at the edge scales (package autoscale); known is
// false until the autoscalers are listed.
type Autoscalers interface {
	Scales(gk schema.GroupKind, namespace, name string) (scales, known bool)
}

// Fence says whether the edge owner's fence holds the syncer's writes at the edge (pkg/syncer's proof).
type Fence interface {
	InForce() (bool, string)
}

// Deletions decides whether a deletion at the edge may go ahead now (package breaker).
type Deletions interface {
	// Allow tells whether the deletion of key, weighing weight objects, may go ahead: ok, or to be
	// asked again after wait, or held (it comes back as a key to process when released). tripped: this
	// call started the holding.
	Allow(key framework.Key, weight int) (ok bool, wait time.Duration, tripped bool)
	// Forget drops a held key that is wanted again.
	Forget(key framework.Key)
}

// Controller is the downsync controller.
type Controller struct {
	cfg      Config
	queue    *framework.Queue
	writes   *framework.Writes
	early    *early
	echoes   echoes
	refusals refusals
	pauses   pauses
	// withheld are the keys whose upstream object is not written, and why: it does not verify
	// (Config.Signatures, Enforce) or is too large (Config.MaxObjectBytes). warned are those written
	// though they do not verify (Warn), said once.
	withheld, warned framework.ConflictLog
	// kept are the keys whose edge copy is no longer wanted but kept, and why (a Namespace holding
	// what the syncer did not write); emptying the containers waiting for the syncer's own objects in
	// them to go.
	kept     framework.ConflictLog
	emptying backoffs
	// full are the keys not written for the edge's storage bound (stored), said once each.
	full   framework.ConflictLog
	stored *stored
	// gates are the per-object policies, in order (gates.go).
	gates chains

	mu sync.Mutex
	// terminating are the keys waiting for their namespace to finish terminating at the edge.
	terminating map[framework.Key]string
}

// NewController wires the controller; it does no API I/O.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Downstream == nil || cfg.UpstreamInformers == nil || cfg.DownstreamInformers == nil || cfg.Selection == nil || cfg.Metrics == nil {
		return nil, errors.New("downsync: client, informers, selection and metrics are required")
	}
	if cfg.FieldManager == "" {
		cfg.FieldManager = framework.DefaultFieldManager
	}
	if cfg.ConflictRecheckPeriod <= 0 {
		cfg.ConflictRecheckPeriod = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Report == nil {
		cfg.Report = report.NewStore()
	}
	c := &Controller{cfg: cfg, writes: framework.NewWrites(metrics.Downsync, cfg.FieldManager, cfg.Metrics, cfg.Recorder), terminating: map[framework.Key]string{}, early: newEarly(),
		pauses: pauses{held: map[framework.Key]time.Time{}, drifted: map[framework.Key]string{}, told: map[framework.Key]map[string]string{}}}
	c.withheld.Describe = func(reason string) (problem.Kind, string) { return problem.SyncFailed, reason }
	c.kept.Describe = c.withheld.Describe
	c.full.Describe = c.withheld.Describe
	c.stored = newStored(cfg.MaxEdgeBytes, cfg.Metrics.EdgeStoredBytes)
	c.gates = c.newChains()
	c.queue = framework.NewQueue(metrics.Downsync, cfg.Metrics.WorkqueueProvider(), c.process)
	return c, nil
}

// Queue is the controller's queue (for its failures).
func (c *Controller) Queue() *framework.Queue { return c.queue }

// Writes is the controller's write path (for its conflicts).
func (c *Controller) Writes() *framework.Writes { return c.writes }

// Withheld are the objects not written because they do not verify or are too large (for
// ObjectsSynced).
func (c *Controller) Withheld() *framework.ConflictLog { return &c.withheld }

// Kept is the log of edge objects no longer wanted but kept (a Namespace or CRD holding objects the
// syncer did not write), for the conditions.
func (c *Controller) Kept() *framework.ConflictLog { return &c.kept }

// Full are the objects not written for the edge's storage bound (for ObjectsSynced).
func (c *Controller) Full() *framework.ConflictLog { return &c.full }

// Run starts the workers and blocks until ctx is done and they have exited.
func (c *Controller) Run(ctx context.Context, workers int) { c.queue.Run(ctx, workers) }

// Relevant tells whether a key still concerns downsync: its resource is looked after and, when it is
// read upstream, the object is selected. Conflicts and failures of other keys are pruned. A key
// whose upstream object the cache cannot show (gone, or not synced yet) is kept: its edge copy may
// still have to go, and processing it settles that.
func (c *Controller) Relevant(key framework.Key) bool {
	gr := key.GVR.GroupResource()
	r, ok := c.cfg.Selection.Resource(gr)
	if !ok {
		return false
	}
	if r.Upstream.Empty() {
		return true
	}
	up, synced, err := framework.Cached(c.cfg.UpstreamInformers, r.Upstream, key.Namespace, key.Name)
	if err != nil || !synced || up == nil {
		return true
	}
	return c.cfg.Selection.Matches(selection.ObjectOf(gr, up))
}

// Prune forgets the conflicts and failures of keys that are no longer Relevant: nothing processes
// them again, so they would otherwise be reported for good.
func (c *Controller) Prune() {
	c.writes.Conflicts().Prune(c.Relevant)
	c.withheld.Prune(c.Relevant)
	c.kept.Prune(c.Relevant)
	c.warned.Prune(c.Relevant)
	c.queue.Prune(c.Relevant)
	c.pauses.forget(c.Relevant)
	c.cfg.Report.Prune(c.Relevant)
	c.refusals.prune(func(key framework.Key) bool {
		r, ok := c.cfg.Selection.Resource(key.GVR.GroupResource())
		return ok && r.Upstream == key.GVR // still selected, at the version the keys name
	})
}

// Handler returns the event handler of one side's informer for a resource. Downstream it follows
// only the objects the syncer owns (and Namespaces, for the objects waiting on them); status-only
// changes are status return's business, not downsync's. Its enqueues are logged with ctx's logger
// (which names the side and resource).
func (c *Controller) Handler(ctx context.Context, downstream bool, gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	gr := gvr.GroupResource()
	logger := klog.FromContext(ctx)
	enqueue := func(u *unstructured.Unstructured, why string) {
		r, ok := c.cfg.Selection.Resource(gr)
		if !ok {
			return // an upsync-only resource
		}
		name := u.GetName()
		if downstream {
			name = r.Rename.UpName(name) // keys name the upstream object
		}
		key := framework.Key{GVR: r.KeyGVR(), Namespace: u.GetNamespace(), Name: name}
		if downstream && c.ours(u) { // the edge's Namespaces are all watched: other syncers' too
			if why == "deleted" {
				c.stored.set(key, 0)
			} else {
				c.stored.observe(key, u)
			}
		}
		if downstream && c.echoes.echo(key, u.GetResourceVersion()) && why != "deleted" {
			logger.V(logging.Trace).Info("Not enqueueing the echo of its own write", "key", key.String(), "reason", why)
			return
		}
		logger.V(logging.Trace).Info("Enqueue", "key", key.String(), "reason", why)
		c.queue.Add(key)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			u := framework.MetaOf(obj) // its name and marks: the content is read when processed
			if u == nil {
				return
			}
			if downstream && gvr == namespaceGVR {
				c.enqueueNamespace(u.GetName()) // objects waiting for this namespace can go now
			}
			if !downstream || mapping.OwnedDownstream(u) {
				enqueue(u, "added")
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, n := framework.ObjectOf(oldObj), framework.ObjectOf(newObj)
			if o == nil || n == nil || mapping.EqualApartFromStatus(o, n) {
				return // a status write (or a resync)
			}
			if downstream && !mapping.OwnedDownstream(o) && !mapping.OwnedDownstream(n) {
				return // an edge object (seen when the resource is also upsynced)
			}
			enqueue(n, "updated")
		},
		DeleteFunc: func(obj interface{}) {
			u := framework.MetaOf(obj)
			if u == nil {
				return
			}
			enqueue(u, "deleted")
			if downstream && c.cfg.OnOwnedDeleted != nil {
				c.cfg.OnOwnedDeleted(gr)
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
	add := func(ns, name string) { c.queue.Add(framework.Key{GVR: r.KeyGVR(), Namespace: ns, Name: name}) }
	if !r.Upstream.Empty() {
		framework.ForEachKey(c.cfg.UpstreamInformers, r.Upstream, namespace, add)
	}
	if !r.Downstream.Empty() {
		framework.ForEachKey(c.cfg.DownstreamInformers, r.Downstream, namespace, func(ns, name string) { add(ns, r.Rename.UpName(name)) })
	}
}

// EnqueueEdgeObject enqueues the object whose edge copy has that group, kind, namespace and name,
// if the syncer holds such a copy (an autoscaler of it came or went).
func (c *Controller) EnqueueEdgeObject(gk schema.GroupKind, namespace, name string) {
	for _, r := range c.cfg.Selection.Resources() {
		if r.Downstream.Empty() || r.Downstream.Group != gk.Group {
			continue
		}
		down, synced, err := framework.Cached(c.cfg.DownstreamInformers, r.Downstream, namespace, name)
		if err == nil && synced && down != nil && down.GetKind() == gk.Kind {
			c.queue.Add(framework.Key{GVR: r.KeyGVR(), Namespace: namespace, Name: r.Rename.UpName(name)})
		}
	}
}

// enqueueNamespace enqueues the upstream objects in a namespace, for every selected resource (those
// streamed in early too), ahead of other keys: they may have waited for the namespace.
func (c *Controller) enqueueNamespace(namespace string) {
	c.early.inNamespace(namespace, func(gvr schema.GroupVersionResource, name string) {
		if r, ok := c.cfg.Selection.Resource(gvr.GroupResource()); ok {
			c.queue.AddWaited(framework.Key{GVR: r.KeyGVR(), Namespace: namespace, Name: name})
		}
	})
	for _, r := range c.cfg.Selection.Resources() {
		if !r.Namespaced {
			continue
		}
		framework.ForEachKey(c.cfg.UpstreamInformers, r.Upstream, namespace, func(_, name string) {
			c.queue.AddWaited(framework.Key{GVR: r.KeyGVR(), Namespace: namespace, Name: name})
		})
	}
}

// Waiting are warnings for the namespaces terminating at the edge that hold objects up: one per
// namespace, with how many objects wait.
func (c *Controller) Waiting() []problem.Problem {
	c.mu.Lock()
	counts := map[string]int{}
	for key, ns := range c.terminating {
		if _, terminating, _ := c.namespaceMissing(ns); terminating {
			counts[ns]++
		} else {
			delete(c.terminating, key) // the namespace is gone or back: the key is processed again anyway
		}
	}
	c.mu.Unlock()
	out := make([]problem.Problem, 0, len(counts))
	for ns, n := range counts {
		out = append(out, problem.Problem{Kind: problem.NamespaceTerminating, Resource: namespaceGVR.GroupResource(),
			Reason: fmt.Sprintf("%d objects wait for namespace %q, which is terminating at the edge", n, ns)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Reason < out[j].Reason })
	return out
}

// waitingOnTerminating records whether a key waits for a namespace terminating at the edge, and
// tells whether that is new.
func (c *Controller) waitingOnTerminating(key framework.Key, namespace string, waiting bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, was := c.terminating[key]
	if waiting {
		c.terminating[key] = namespace
	} else {
		delete(c.terminating, key)
	}
	return waiting && !was
}

// isNamespaces tells whether a resource is the core Namespace resource.
func isNamespaces(gr schema.GroupResource) bool { return gr == selection.NamespacesResource }
