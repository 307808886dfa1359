package downsync

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// write creates or updates the edge object of a wanted upstream object through the steps of the
// write path (framework.Write; downWrite says what each means at the edge). downObj is what the edge
// cache holds (nil: absent there). The cache holds only the syncer's own objects, so an object absent
// from it may still exist, unowned: the create (a plain POST, the apiserver's cheapest write; an
// apply costs it a third more) then finds its name taken, and the object in the way is read and
// taken through the steps as it is.
//
// In report-only mode (in.reportOnly) the executor is a dry run (dryRun): the same steps, written
// nowhere, reported.
func (c *Controller) write(ctx context.Context, in *input) (time.Duration, error) {
	key := in.key
	op := &downWrite{c: c, key: key, r: in.r, up: in.up, desired: in.desired, down: in.down, retain: in.opts.Retain}
	if in.reportOnly {
		return c.writes.Do(ctx, key, dryRun{op})
	}
	after, err := c.writes.Do(ctx, key, op)
	if op.taken != nil {
		live := &downWrite{c: c, key: key, r: in.r, up: in.up, desired: in.desired, down: op.taken, readLive: true, retain: in.opts.Retain}
		after, err = c.writes.Do(ctx, key, live)
	}
	if err == nil {
		c.takenAgain(key)
	}
	return after, err
}

// refused records that the edge refuses the upstream object's generation for good, for status
// return to say so upstream.
func (c *Controller) refused(key framework.Key, up *unstructured.Unstructured, err error) {
	c.refusals.set(key, up.GetGeneration(), err.Error())
	if c.cfg.OnRefused != nil {
		c.cfg.OnRefused(key)
	}
}

// takenAgain forgets a refusal of key: its object is written, or no longer wanted.
func (c *Controller) takenAgain(key framework.Key) {
	if c.refusals.forget(key) && c.cfg.OnRefused != nil {
		c.cfg.OnRefused(key)
	}
}

// downWrite is one write to the edge (framework.Write).
type downWrite struct {
	c           *Controller
	key         framework.Key
	r           Resource
	up, desired *unstructured.Unstructured
	// down is what the edge holds: the cache's object, or, when readLive, the apiserver's.
	down     *unstructured.Unstructured
	readLive bool
	// taken is the object a create found in the way (read live), to take through the steps next.
	taken *unstructured.Unstructured
	// retain are the fields the edge owns: desired leaves them out, send puts in the values to write.
	retain []mapping.FieldPath
}

var _ framework.Write = &downWrite{}

func (w *downWrite) client() dynamic.ResourceInterface {
	return w.c.cfg.Downstream.Resource(w.r.Downstream).Namespace(w.key.Namespace)
}

func (w *downWrite) owned() bool { return w.down != nil && mapping.OwnedDownstream(w.down) }

// Blocked: an edge object of another sync target (marked and labelled for it: never taken, even when
// adopting), of another workspace (one syncer serving several), or without the syncer's mark (unless
// adopting; a Namespace that was there before is used as it is, see Skip). A mark without any owner
// label is the syncer's own object drifted (or the release-0.14 syncer's): it is put back.
func (w *downWrite) Blocked(context.Context) *framework.Blocked { return w.blocked() }

func (w *downWrite) blocked() *framework.Blocked {
	c, key := w.c, w.key
	recheck := c.cfg.ConflictRecheckPeriod
	switch {
	case ownerOf(w.down) != "" && ownerOf(w.down) != c.cfg.Mapping.OwnerLabelValue:
		other := ownerOf(w.down)
		return &framework.Blocked{About: w.up, Recheck: recheck, Reason: "Conflict",
			LogMsg: fmt.Sprintf("Not writing downstream: %s is owned by sync target %q (label %s); two syncers select it", key.String(), other, mapping.OwnerLabel),
			Event:  fmt.Sprintf("Not written to sync target %s: the object there belongs to sync target %q", c.cfg.SyncTargetName, other)}
	case w.owned() && mapping.ClusterOf(w.down) != c.cfg.Mapping.Cluster:
		other := mapping.ClusterOf(w.down)
		return &framework.Blocked{About: w.up, Recheck: recheck, Reason: "Conflict",
			LogMsg: fmt.Sprintf("Not writing downstream: %s belongs to workspace %q at the edge (annotation %s); two workspaces have an object of that name",
				key.String(), other, mapping.ClusterAnnotation),
			Event: fmt.Sprintf("Not written to sync target %s: the object there belongs to workspace %q", c.cfg.SyncTargetName, other)}
	case w.down != nil && !w.owned() && !isNamespaces(key.GVR.GroupResource()) && !c.cfg.AdoptExisting:
		return &framework.Blocked{About: w.up, Recheck: recheck, Reason: "Conflict",
			LogMsg: fmt.Sprintf("Not writing downstream: %s exists downstream without the syncer's mark %s=%s (pass --adopt-existing to take it over)",
				key.String(), mapping.DownsyncedAnnotation, mapping.MarkOf(w.desired)),
			Event: fmt.Sprintf("Not written to sync target %s: an object of that name exists there without the syncer's mark (the syncer may take it over with --adopt-existing)",
				c.cfg.SyncTargetName)}
	}
	return nil
}

func (w *downWrite) Creating() bool { return w.down == nil }

// Skip: a Namespace that was there before the syncer (used as it is, even when adopting), a
// create-only object that exists, an object up to date.
func (w *downWrite) Skip() string { return w.skip() }

func (w *downWrite) skip() string {
	switch {
	case w.down != nil && !w.owned() && isNamespaces(w.key.GVR.GroupResource()):
		return "Namespace exists downstream and is not the syncer's; using it as it is"
	case w.owned() && mapping.CreateOnly(w.up):
		return "Create-only object exists downstream; not updating it"
	case mapping.UpToDate(w.desired, w.down):
		return "Downstream object is up to date"
	}
	return ""
}

func (w *downWrite) Content() string { return w.desired.GetAnnotations()[mapping.HashAnnotation] }

// Before reads the edge object as the other writer left it.
func (w *downWrite) Before(ctx context.Context) *unstructured.Unstructured {
	live, _ := w.client().Get(ctx, w.desired.GetName(), metav1.GetOptions{})
	return live
}

// Do writes: the fields of earlier writes handed over first (handOver), a change the edge cannot
// take in place replaced (recreate), then a plain create or a server-side apply; a create that finds
// the name taken leaves the object in the way in taken.
func (w *downWrite) Do(ctx context.Context, _ *unstructured.Unstructured) framework.Outcome {
	if gone, err := w.handOver(ctx); err != nil || gone {
		return framework.Outcome{Err: err} // gone: its deletion's event brings the key back
	}
	if why, ok := mapping.ReplaceOnly(w.desired, w.down); ok && w.owned() {
		// The edge would keep the old value without an error (a headless Service made a ClusterIP one).
		return w.replace(ctx, why)
	}
	written, err := w.send(ctx)
	if err == nil && written != nil && mapping.Subset(w.desired.Object, written.Object) {
		// The edge holds what was written (no webhook changed it on the way; desired has no status):
		// its event is an echo.
		w.c.echoes.wrote(w.key, written.GetResourceVersion())
	}
	switch {
	case w.Creating() && apierrors.IsAlreadyExists(err):
		return framework.Outcome{Err: w.readTaken(ctx)}
	case err != nil && w.owned() && immutable(err):
		// The edge cannot change the object in place (a Job's template, say): replace it.
		return w.replace(ctx, fmt.Sprintf("sync target %s refuses the change in place (%v)", w.c.cfg.SyncTargetName, err))
	case err != nil:
		what := "applying downstream"
		if apierrors.IsNotFound(err) && w.r.Namespaced {
			what = "applying downstream (is the namespace there yet?)"
		}
		if framework.Permanent(err) {
			w.c.refused(w.key, w.up, err)
		}
		return framework.Outcome{Err: w.c.writes.Failed(w.key, w.up, "ApplyFailed", what+" to sync target "+w.c.cfg.SyncTargetName, err)}
	}
	w.c.forgetRewrite(w.key, recreating) // the edge took the change: no recreation due
	if w.Creating() {
		return framework.Outcome{Result: metrics.Created, Msg: "Created downstream object", About: w.up}
	}
	return framework.Outcome{Result: metrics.Updated, Msg: "Updated downstream object", About: w.up}
}

// send creates the object (strict, as an apply is: a field the edge does not know is an error, not
// dropped) or applies it.
func (w *downWrite) send(ctx context.Context) (*unstructured.Unstructured, error) {
	fm := w.c.cfg.FieldManager
	body, err := w.withRetained(ctx, nil)
	if err != nil {
		return nil, err
	}
	if w.Creating() {
		return w.client().Create(ctx, body, metav1.CreateOptions{FieldManager: fm, FieldValidation: metav1.FieldValidationStrict})
	}
	return w.client().Apply(ctx, body.GetName(), body, metav1.ApplyOptions{FieldManager: fm, Force: true})
}

// withRetained is what send writes: desired with the retained fields' values put in. A create takes
// them from the upstream object, so the edge starts from them; an apply takes the edge's own, read
// live (a slim cache holds no values), and carries the resourceVersion read as a precondition, so
// that an autoscaler's change in between is never undone: the apply is refused and tried again. live,
// when not nil, is the edge object just read (nothing written to it since); nil: it is read here.
func (w *downWrite) withRetained(ctx context.Context, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	switch {
	case len(w.retain) == 0:
		return w.desired, nil
	case w.Creating():
		w.c.retainedAbsent(ctx, w.key, w.up, nil, w.retain)
		return mapping.RetainedFrom(w.desired, w.up, w.retain), nil
	}
	if live == nil {
		// Read again even when the object was read live before: a hand-over's patch may have changed it.
		var err error
		if live, err = w.client().Get(ctx, w.desired.GetName(), metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("reading the fields the edge owns: %w", err)
		}
	}
	w.c.retainedAbsent(ctx, w.key, w.up, live, w.retain)
	body := mapping.RetainedFrom(w.desired, live, w.retain)
	body.SetResourceVersion(live.GetResourceVersion())
	return body, nil
}

// handOver hands the fields another manager name holds to the apply manager before its apply (the
// create's update entry; the release-0.14 syncer's), or a field the apply leaves out would stay at
// the edge, and every apply would weigh both entries. gone tells that the object went meanwhile.
func (w *downWrite) handOver(ctx context.Context) (gone bool, err error) {
	if w.Creating() {
		return false, nil
	}
	// A mark without the owner label: the release-0.14 syncer's object (or this syncer's, relabelled),
	// however the cache holds it (not at all when it keeps the labelled objects only; whole when the
	// resource is also upsynced).
	legacy := w.owned() && mapping.OwnerOf(w.down) == ""
	if !legacy && !mapping.CreatedByUpdate(w.down, w.c.cfg.FieldManager) {
		return false, nil
	}
	_, gone, err = w.c.handOver(ctx, w.key, w.r, w.down, w.readLive, legacy)
	return gone, err
}

// retainedAbsent says once per path and object that a retained field names nothing in the upstream
// object or at the edge (live; nil before a create): most likely a mistyped path (spec.replica).
func (c *Controller) retainedAbsent(ctx context.Context, key framework.Key, up, live *unstructured.Unstructured, paths []mapping.FieldPath) {
	for _, p := range paths {
		if p.Holds(up) || (live != nil && p.Holds(live)) || !c.told(key, "retain "+p.String(), "absent") {
			continue
		}
		klog.FromContext(ctx).Info("A retained field names no field of the object, upstream or at the edge", "path", p.String())
		c.writes.Event(up, corev1.EventTypeWarning, "RetainedFieldAbsent", fmt.Sprintf(
			"Sync target %s: retainFields %q names no field of this object, upstream or at the edge (a mistyped path?)", c.cfg.SyncTargetName, p.String()))
	}
}

// replace replaces an owned object whose change the edge would not make in place: a deletion the
// breaker counts (held, the key comes back when released), then a create. An object that opts out
// of being recreated, or whose deletion would lose data (mapping.KeepOnImmutable), is not replaced:
// the failure is reported.
func (w *downWrite) replace(ctx context.Context, why string) framework.Outcome {
	if mapping.KeepOnImmutable(w.up) {
		return framework.Outcome{Err: w.c.writes.Failed(w.key, w.up, "ApplyFailed", "applying downstream to sync target "+w.c.cfg.SyncTargetName,
			fmt.Errorf("%s, and the object is not recreated (%s)", why, mapping.KeepOnImmutableWhy(w.up)))}
	}
	if v := w.c.mayDelete(ctx, rewriteKey(w.key, recreating), 1); v.Stop {
		return framework.Outcome{Requeue: v.After, Err: v.Err}
	}
	return framework.Outcome{Err: w.c.recreate(ctx, w.key, w.client(), w.up, w.down, why)}
}

// readTaken reads the object a create found in the way (not the syncer's, or not seen yet) for the
// steps to take next; an error when it went meanwhile (the create is tried again).
func (w *downWrite) readTaken(ctx context.Context) error {
	live, err := w.c.existing(ctx, w.key, w.r)
	switch {
	case err != nil:
		return err
	case live == nil:
		return fmt.Errorf("%s was in the way at the edge and is gone now; retrying", w.key.String())
	}
	w.taken = live
	return nil
}
