package downsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/report"
	"github.com/kubestellar/syncer/pkg/selection"
)

// process makes the downstream object of one key match its upstream counterpart: what both caches
// hold for it is gathered, taken through the gates (gates.go), then written at the edge when it is
// wanted there, or its edge copy deleted when it is the syncer's and no longer wanted. It returns a
// delay when the key must be looked at again later for a reason that is not an error.
func (c *Controller) process(ctx context.Context, key framework.Key) (time.Duration, error) {
	// Before reading the caches: whatever this processing decides, it decides on what it reads, and
	// an earlier write's event may not have reached them yet.
	c.echoes.forget(key)
	in, ok, err := c.gather(ctx, key)
	if !ok || err != nil {
		return 0, err
	}
	if v := c.admit(ctx, in, c.gates.key); v.Stop {
		return v.After, v.Err
	}
	if in.wanted {
		if v := c.admit(ctx, in, c.gates.write); v.Stop {
			return v.After, v.Err
		}
		return c.write(ctx, in)
	}
	if v := c.admit(ctx, in, c.gates.delete); v.Stop {
		return v.After, v.Err
	}
	return c.delete(ctx, in)
}

// delete deletes an edge copy no longer wanted, or, report-only, reports that it would.
func (c *Controller) delete(ctx context.Context, in *input) (time.Duration, error) {
	if in.reportOnly {
		c.reported(ctx, in.key, report.Entry{Action: report.Delete})
		return 0, nil
	}
	client := c.cfg.Downstream.Resource(in.r.Downstream).Namespace(in.key.Namespace)
	_, err := c.writes.DeleteOwned(ctx, client, in.key, in.down, "Deleted downstream object")
	return 0, err
}

// gather reads what both caches hold for a key, and whether its upstream object is selected and
// wanted at the edge. ok is false when there is nothing to decide yet: the resource is no longer
// looked after, not served at the edge, or a cache has not synced (an event brings the key back).
func (c *Controller) gather(ctx context.Context, key framework.Key) (in *input, ok bool, err error) {
	logger := klog.FromContext(ctx)
	gr := key.GVR.GroupResource()
	r, ok := c.cfg.Selection.Resource(gr)
	if !ok {
		return nil, false, nil // no longer looked after; a resolve that brings it back enqueues it again
	}
	if r.Downstream.Empty() {
		logger.V(logging.Skip).Info("Waiting for the resource to be served downstream")
		return nil, false, nil // the informer's sync will enqueue it again
	}
	in = &input{key: key, r: r}
	var synced bool
	if in.down, synced, err = framework.Cached(c.cfg.DownstreamInformers, r.Downstream, key.Namespace, r.Rename.DownName(key.Name)); err != nil || !synced {
		return nil, false, err // not synced: enqueued again when the downstream cache syncs
	}
	if !r.Upstream.Empty() {
		if in.up, synced, err = framework.Cached(c.cfg.UpstreamInformers, r.Upstream, key.Namespace, key.Name); err != nil {
			return nil, false, err
		}
		if !synced {
			if in.up = c.early.get(r.Upstream, key.Namespace, key.Name); in.up == nil {
				return nil, false, nil // not synced: enqueued again when the upstream cache syncs
			}
			in.early = true
		}
	}
	in.now = c.cfg.Now()
	if in.up != nil {
		in.sel = selection.ObjectOf(gr, in.up)
		in.policy = c.cfg.Selection.PolicyOf(in.sel, in.now)
	}
	in.selected = in.up != nil && in.up.GetDeletionTimestamp() == nil && in.policy.Selected
	in.reportOnly = c.cfg.ReportOnly || (in.up != nil && in.policy.ReportOnly)
	in.markedUpsynced = in.selected && mapping.OwnedUpstream(in.up)
	in.wanted = in.selected && !in.markedUpsynced // copies upsync wrote upstream are never downsynced back
	if in.wanted && mapping.SystemObject(gr, in.up) && !c.cfg.Selection.NamesExplicitly(in.sel) {
		// The apiserver's own object (root CA, default ServiceAccount, token): each side has its own.
		logger.V(logging.Skip).Info("Not downsyncing an object the apiserver makes itself; name it explicitly to sync it")
		in.wanted = false
	}
	if !in.wanted && in.down != nil && !c.cfg.ReportOnly {
		// Its edge copy is what only report-only configs select, its upstream object gone (or not selected).
		in.reportOnly = c.cfg.Selection.PolicyOf(upstreamOf(key, r, in.down), in.now).ReportOnly
	}
	return in, true, nil
}

// upsyncedCopy says why a selected upstream object carrying an upsync mark is not downsynced: at
// logging.Skip for a copy an edge provably made, once at level 0 with a Conflict Event for a mark
// nothing proves (made by hand, or copied from a copy), which the user may want removed.
func (c *Controller) upsyncedCopy(ctx context.Context, key framework.Key, upObj *unstructured.Unstructured) {
	if mapping.ClaimOf(upObj, c.cfg.Mapping.OwnerLabelValue) != mapping.UpsyncedUnproven {
		klog.FromContext(ctx).V(logging.Skip).Info("Not downsyncing a copy upsync made", "upsyncedBy", upObj.GetLabels()[mapping.UpsyncOwnerLabel])
		c.writes.ClearConflict(key)
		return
	}
	c.writes.Conflict(ctx, key, upObj,
		fmt.Sprintf("Not downsyncing %s: it carries the upsync mark %s but not the edge UID (%s) of an upsynced copy; remove the annotation to downsync it",
			key.String(), mapping.UpsyncedAnnotation, mapping.UpsyncSourceUIDAnnotation),
		"UpsyncMarked", "Not downsynced: this object carries the upsync mark "+mapping.UpsyncedAnnotation+" (an upsynced copy is never downsynced); remove the annotation to downsync it")
}

// unrenamed is the copy of an object that a conversion now renames, written under its upstream name
// before the conversion existed, when the syncer is to delete it (the renamed copy replaces it); nil
// when there is none. Report-only, the renamed copy is reported and the old one left.
func (c *Controller) unrenamed(key framework.Key, r Resource, reportOnly bool) (*unstructured.Unstructured, error) {
	if !r.Rename.RenamesObjects() || r.Rename.DownName(key.Name) == key.Name || r.Upstream.GroupResource() != r.Downstream.GroupResource() ||
		reportOnly {
		return nil, nil
	}
	old, synced, err := framework.Cached(c.cfg.DownstreamInformers, r.Downstream, key.Namespace, key.Name)
	if err != nil || !synced || old == nil || !mapping.OwnedDownstream(old) || old.GetAnnotations()[mapping.RenaturedFromAnnotation] != "" ||
		old.GetDeletionTimestamp() != nil || mapping.CreateOnly(old) || mapping.KeepOnDelete(old) {
		return nil, err
	}
	return old, nil
}

// keptAtEdge tells whether a deletion leaves an edge object alone, breaker and report-only aside: none
// there, not owned or going already (said nowhere), another syncer's or workspace's, or kept by its
// marks; why is the log line saying so, with its key/values.
func (c *Controller) keptAtEdge(downObj *unstructured.Unstructured) (kept bool, why string, kv []interface{}) {
	switch {
	case downObj == nil:
		return true, "Not wanted, and no edge object to delete", nil
	case !mapping.OwnedDownstream(downObj) || downObj.GetDeletionTimestamp() != nil:
		return true, "", nil
	case !c.ours(downObj):
		// Another sync target's (or, serving several workspaces, another workspace's) copy: the edge's
		// Namespaces are watched whole, so another syncer's namespace shows up here.
		return true, "Not deleting another syncer's or workspace's object", []interface{}{"owner", mapping.OwnerOf(downObj), "workspace", mapping.ClusterOf(downObj)}
	case mapping.CreateOnly(downObj):
		return true, "Not deleting a create-only object", []interface{}{"annotation", mapping.OverwriteAnnotation}
	case mapping.KeepOnDelete(downObj):
		return true, "Not deleting: the configs that selected it do not propagate deletion", []interface{}{"annotation", mapping.PropagateDeletionAnnotation}
	}
	return false, "", nil
}

// upstreamOf is what the selection matches of an edge copy whose upstream object is gone: its
// upstream name and kind (a conversion may rename both), its labels.
func upstreamOf(key framework.Key, r Resource, downObj *unstructured.Unstructured) selection.Object {
	o := selection.ObjectOf(key.GVR.GroupResource(), downObj)
	o.Name = key.Name
	if r.Rename != nil {
		o.Kind = r.Rename.Up.Kind
	}
	return o
}

// autoscalersWait is how long an object with replicas waits for the edge's autoscalers to be listed.
const autoscalersWait = time.Second

// retained are the fields of an object that the edge owns: those the entries selecting it name, and
// spec.replicas when an autoscaler at the edge scales its copy. Not known (ok false) for an object
// with replicas before the edge's autoscalers are listed: applied then, its replicas would undo an
// autoscaler's.
func (c *Controller) retained(entries []mapping.FieldPath, key framework.Key, r Resource, upObj *unstructured.Unstructured) (paths []mapping.FieldPath, ok bool) {
	paths = entries
	if c.cfg.Autoscalers == nil {
		return paths, true
	}
	gk := schema.GroupKind{Group: r.Downstream.Group, Kind: upObj.GetKind()}
	if r.Rename != nil {
		gk = r.Rename.Down.GroupKind()
	}
	scales, known := c.cfg.Autoscalers.Scales(gk, key.Namespace, r.Rename.DownName(key.Name))
	switch {
	case !known:
		return paths, !mapping.Replicas.Holds(upObj)
	case scales:
		paths = mapping.SortPaths(append(append([]mapping.FieldPath(nil), paths...), mapping.Replicas))
	}
	return paths, true
}

// LegacyFieldManager is the field manager of the syncer this one replaces: the release-0.14 syncer
// wrote with plain updates, so the apiserver named its fields after its binary, "syncer".
const LegacyFieldManager = "syncer"

// beforeFirstApply is the manager the apiserver files an object's fields under when the object had
// no managedFields at its first server-side apply. The release-0.14 syncer sent empty managedFields
// with every write, which clears them: an object it left alone for a while has none.
const beforeFirstApply = "before-first-apply"

// handOver hands the fields of the update entries of this syncer's plain create (and, for legacy,
// of the release-0.14 syncer's updates) on an object to this syncer's apply manager, before its
// apply. A create's entry alone, at the place the cache recorded (mapping.CreatedIndex), is renamed
// in place by a JSON patch that first tests that it is there: one request. Otherwise (an object read
// live, a taken-over one, the rename refused because the object changed) the object is read, and
// client-go's csaupgrade merges the entries; the object read is returned (nil when the rename did
// it), and gone tells that the object is no longer there.
func (c *Controller) handOver(ctx context.Context, key framework.Key, r Resource, downObj *unstructured.Unstructured, readLive, legacy bool) (live *unstructured.Unstructured, gone bool, err error) {
	client := c.cfg.Downstream.Resource(r.Downstream).Namespace(key.Namespace)
	if !readLive && !legacy {
		if index, ok := mapping.CreatedIndex(downObj, c.cfg.FieldManager); ok {
			path := fmt.Sprintf("/metadata/managedFields/%d/", index)
			patch, err := json.Marshal([]map[string]interface{}{
				{"op": "test", "path": path + "manager", "value": c.cfg.FieldManager},
				{"op": "test", "path": path + "operation", "value": string(metav1.ManagedFieldsOperationUpdate)},
				{"op": "replace", "path": path + "operation", "value": string(metav1.ManagedFieldsOperationApply)},
			})
			if err != nil {
				return nil, false, err
			}
			if _, err := client.Patch(ctx, downObj.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{}); err == nil {
				c.handedOver(ctx, key, false)
				return nil, false, nil
			}
			// Refused (the entry moved, or is gone): read the object and merge below.
		}
	}
	live = downObj
	if !readLive {
		if live, err = c.existing(ctx, key, r); err != nil || live == nil {
			return nil, live == nil && err == nil, err
		}
	}
	managers := sets.New(c.cfg.FieldManager)
	takenOver := false
	if legacy {
		managers.Insert(LegacyFieldManager, beforeFirstApply)
		takenOver = len(live.GetManagedFields()) == 0 || mapping.CreatedByUpdate(live, LegacyFieldManager)
		if len(live.GetManagedFields()) == 0 {
			if live, err = c.claimUnmanaged(ctx, client, live); err != nil {
				return nil, false, err
			}
		}
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, managers, c.cfg.FieldManager)
	if err != nil || patch == nil {
		return live, false, err // nil, nil: nothing to hand over
	}
	if _, err := client.Patch(ctx, live.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		// Retried: the next try reads the object afresh (a changed object fails the patch's test).
		return nil, false, fmt.Errorf("handing over the fields of earlier writes to %s: %w", c.cfg.FieldManager, err)
	}
	c.handedOver(ctx, key, takenOver)
	return live, false, nil
}

// claimUnmanaged gives an object without managedFields (the release-0.14 syncer cleared them) a record
// of who owns its fields, so that they can be handed over: an apply of its identity and mark alone,
// changing nothing, after which the apiserver files every field already there under
// beforeFirstApply. It returns the object as the apply left it.
func (c *Controller) claimUnmanaged(ctx context.Context, client dynamic.ResourceInterface, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	claim := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": live.GetAPIVersion(), "kind": live.GetKind()}}
	claim.SetNamespace(live.GetNamespace())
	claim.SetName(live.GetName())
	claim.SetAnnotations(map[string]string{mapping.DownsyncedAnnotation: live.GetAnnotations()[mapping.DownsyncedAnnotation]})
	claim.SetUID(live.GetUID()) // the object read, not one made since under its name
	out, err := client.Apply(ctx, live.GetName(), claim, metav1.ApplyOptions{FieldManager: c.cfg.FieldManager, Force: true})
	if err != nil {
		return nil, fmt.Errorf("recording the fields of a release-0.14 object before taking it over: %w", err)
	}
	return out, nil
}

// handedOver counts and logs a hand-over.
func (c *Controller) handedOver(ctx context.Context, key framework.Key, legacy bool) {
	c.cfg.Metrics.Writes.WithLabelValues(metrics.Downsync, key.GVR.GroupResource().String(), metrics.HandedOver).Inc()
	if legacy {
		klog.FromContext(ctx).Info("Took over an object from the release-0.14 syncer: its fields now belong to this syncer",
			"from", LegacyFieldManager, "to", c.cfg.FieldManager)
		return
	}
	klog.FromContext(ctx).V(logging.Change).Info("Handed the fields of the create to the apply manager before its first apply")
}

// recreate deletes an owned downstream object that cannot take a change in place; the deletion's
// event brings the key back, and the object is created anew.
func (c *Controller) recreate(ctx context.Context, key framework.Key, client dynamic.ResourceInterface, upObj, downObj *unstructured.Unstructured, why string) error {
	c.writes.Event(upObj, corev1.EventTypeNormal, "Recreating", why+"; deleting and recreating the object at sync target "+c.cfg.SyncTargetName)
	klog.FromContext(ctx).Info("Recreating downstream object: it cannot change in place", "reason", why)
	_, err := c.writes.DeleteOwned(ctx, client, key, downObj, "Deleted downstream object to recreate it")
	return err
}

// immutable tells whether the apiserver refused a change because a field may not change.
func immutable(err error) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			if strings.Contains(cause.Message, "immutable") || strings.Contains(cause.Message, "may not change once set") {
				return true
			}
		}
	}
	return strings.Contains(err.Error(), "field is immutable")
}

// ours tells whether a marked downstream object is this syncer's to delete: labelled for its sync
// target (or for none: its own object drifted, or the release-0.14 syncer's it took over), and of
// its workspace.
func (c *Controller) ours(obj *unstructured.Unstructured) bool {
	owner := mapping.OwnerOf(obj)
	return (owner == "" || owner == c.cfg.Mapping.OwnerLabelValue) && mapping.ClusterOf(obj) == c.cfg.Mapping.Cluster
}

// ownerOf is the sync target a marked downstream object is labelled for; "" when unmarked or unlabelled.
func ownerOf(obj *unstructured.Unstructured) string {
	if obj == nil || !mapping.OwnedDownstream(obj) {
		return ""
	}
	return mapping.OwnerOf(obj)
}

// existing reads an object the downstream cache cannot show, after a create found its name taken:
// the cache holds only the syncer's own objects. The read is consistent (not from the watch cache,
// which may not have caught up with the object the create ran into).
func (c *Controller) existing(ctx context.Context, key framework.Key, r Resource) (*unstructured.Unstructured, error) {
	live, err := c.cfg.Downstream.Resource(r.Downstream).Namespace(key.Namespace).Get(ctx, r.Rename.DownName(key.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("looking for an existing downstream object: %w", err)
	}
	return live, nil
}

// namespaceWanted puts a namespace's key ahead of the others, when downsync looks after Namespaces:
// an object waits for it (in an initial sync, the namespaces of the objects streamed in first are
// then created first).
func (c *Controller) namespaceWanted(namespace string) {
	if r, ok := c.cfg.Selection.Resource(namespaceGVR.GroupResource()); ok {
		c.queue.AddWaited(framework.Key{GVR: r.KeyGVR(), Name: namespace})
	}
}

// namespaceMissing tells whether a namespaced object must wait for its namespace downstream: it is
// absent, or terminating (then terminating is true too). The downstream namespace informer sees
// every namespace.
func (c *Controller) namespaceMissing(namespace string) (wait, terminating bool, err error) {
	ns, synced, err := framework.Cached(c.cfg.DownstreamInformers, namespaceGVR, "", namespace)
	if err != nil || !synced {
		return !synced, false, err
	}
	if ns == nil {
		return true, false, nil
	}
	terminating = ns.GetDeletionTimestamp() != nil
	return terminating, terminating, nil
}
