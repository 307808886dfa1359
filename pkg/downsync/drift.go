package downsync

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// DriftFieldManager is the field manager of the syncer's own note on a held edge copy
// (mapping.DriftHeldAnnotation): not the apply manager's, whose applies leave it alone.
const DriftFieldManager = "kubestellar-syncer-drift"

// maxDriftsTold is how many drifted fields an Event and the edge note name.
const maxDriftsTold = 10

// heldDrift tells whether the object's drift is held under the Report policy: its edge copy differs
// from what downsync applied and nobody changed it upstream since (the digests are equal), or it was
// held before (mapping.DriftHeldAnnotation on the edge copy, which makes a hold last across restarts).
// Then nothing is written at the edge for it. A hold ends when the upstream object acknowledges it
// (mapping.AcknowledgeDriftAnnotation) or the drifted fields are put back at the edge to what downsync
// last wrote (mapping.PutBack), both written in the same pass, or when the edge copy matches upstream
// again or the policy is Correct; then the notes are removed (and the object written on the next pass).
func (c *Controller) heldDrift(ctx context.Context, key framework.Key, r Resource, upObj, desired, downObj *unstructured.Unstructured,
	entries mapping.DriftPolicy) (held bool, err error) {
	policy := c.driftPolicy(ctx, key, upObj, entries) // read first: a bad value is said when first seen
	if downObj == nil || !mapping.OwnedDownstream(downObj) {
		c.recordDrift(key, "") // a held copy deleted, or replaced
		return false, nil
	}
	if id := mapping.HeldDrift(downObj); id != "" {
		var why string
		switch {
		case policy != mapping.DriftReport:
			why = "the drift policy is " + string(policy)
		case mapping.Acknowledged(upObj, c.cfg.SyncTargetName, id):
			// Put back in this same pass: found again, the drift would be held anew.
			return false, c.releaseDrift(ctx, key, r, upObj, downObj, "acknowledged upstream")
		case mapping.UpToDate(desired, downObj):
			why = "the edge copy matches upstream again"
		default:
			putBack, err := c.drifted(ctx, key, r, downObj)
			if err != nil || !putBack {
				c.recordDrift(key, id) // found held after a restart
				return true, err
			}
			// Undone at the edge: the changes held meanwhile are written in this same pass.
			return false, c.releaseDrift(ctx, key, r, upObj, downObj, "the drifted fields were put back at the edge")
		}
		return true, c.releaseDrift(ctx, key, r, upObj, downObj, why)
	}
	c.recordDrift(key, "")
	if policy != mapping.DriftReport || mapping.UpToDate(desired, downObj) ||
		desired.GetAnnotations()[mapping.HashAnnotation] != downObj.GetAnnotations()[mapping.HashAnnotation] {
		return false, nil // in step, or changed upstream: written as usual
	}
	return c.holdDrift(ctx, key, r, upObj, desired)
}

// drifted tells whether a held copy's drifted fields were put back at the edge to the values downsync
// last wrote (mapping.PutBack): the technician undid the hotfix. The cache keeps no field values, so
// a copy that notes them is read.
func (c *Controller) drifted(ctx context.Context, key framework.Key, r Resource, downObj *unstructured.Unstructured) (putBack bool, err error) {
	if downObj.GetAnnotations()[mapping.DriftPutBackAnnotation] == "" {
		return false, nil
	}
	live, err := c.cfg.Downstream.Resource(r.Downstream).Namespace(key.Namespace).Get(ctx, downObj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil // gone: its delete event brings the key back
	case err != nil:
		return false, fmt.Errorf("reading the held edge copy: %w", err)
	}
	return mapping.HeldDrift(live) != "" && mapping.PutBack(live), nil
}

// driftPolicy is the object's drift policy: its annotation, else its selection entries'. A value that
// is not a policy is said once (Event DriftPolicyInvalid) and the entries' is used.
func (c *Controller) driftPolicy(ctx context.Context, key framework.Key, upObj *unstructured.Unstructured, entries mapping.DriftPolicy) mapping.DriftPolicy {
	if v, ok := upObj.GetAnnotations()[mapping.DriftAnnotation]; ok {
		p, err := mapping.ParseDriftPolicy(v)
		if err == nil {
			return p
		}
		if c.told(key, "drift", v) {
			klog.FromContext(ctx).Info("Drift policy annotation is not a policy; using the selection's", "reason", err.Error())
			c.writes.Event(upObj, corev1.EventTypeWarning, "DriftPolicyInvalid",
				fmt.Sprintf("Sync target %s: %s %v; using the selection entries' policy", c.cfg.SyncTargetName, mapping.DriftAnnotation, err))
		}
	}
	return entries
}

// holdDrift reads the edge copy, names what differs and who changed it, notes the hold on the edge
// copy, and says so upstream.
func (c *Controller) holdDrift(ctx context.Context, key framework.Key, r Resource, upObj, desired *unstructured.Unstructured) (bool, error) {
	client := c.cfg.Downstream.Resource(r.Downstream).Namespace(key.Namespace)
	live, err := client.Get(ctx, desired.GetName(), metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading the drifted edge copy: %w", err)
	}
	drifts := mapping.Drifts(desired, live, c.cfg.FieldManager)
	if len(drifts) == 0 || mapping.AcknowledgedAll(upObj, c.cfg.SyncTargetName, drifts) {
		return false, nil // the cache was behind, or the drift was acknowledged: written as usual
	}
	id := mapping.DriftID(c.cfg.Now())
	paths := make([]string, 0, len(drifts))
	for _, d := range drifts {
		paths = append(paths, d.Path)
	}
	note := id + " " + strings.Join(paths[:min(len(paths), maxDriftsTold)], ",")
	if err := c.noteDrift(ctx, client, live, note, mapping.PutBackNote(desired, live)); err != nil {
		return false, err
	}
	details, _ := json.Marshal(drifts[:min(len(drifts), maxDriftsTold)])
	klog.FromContext(ctx).Info("Holding drift at the edge: the edge copy was changed there; upstream changes wait until it is acknowledged",
		"drift", id, "fields", string(details))
	c.writes.Event(upObj, corev1.EventTypeWarning, "Drifted", fmt.Sprintf(
		"Sync target %s: the edge copy was changed at the edge and is left so (drift policy Report); upstream changes to this object wait until %s: \"%s=%s\" is set on it, or the fields are put back at the edge. Fields: %s",
		c.cfg.SyncTargetName, mapping.AcknowledgeDriftAnnotation, c.cfg.SyncTargetName, id, details))
	c.edgeEvent(live, "DriftHeld", fmt.Sprintf("This object was changed here and is left so (drift policy Report): %s; the syncer writes nothing for it until the drift %s is acknowledged upstream or these fields are put back to what the syncer wrote (annotation %s)",
		strings.Join(paths[:min(len(paths), maxDriftsTold)], ", "), id, mapping.DriftPutBackAnnotation))
	c.driftChanged(key, id)
	return true, nil
}

// noteDrift writes (or, for "", removes) the hold's notes on the edge copy, under the notes' own field
// manager, only over the object read: note for the technician, and the values that end the hold when
// put back (mapping.DriftPutBackAnnotation; none when "").
func (c *Controller) noteDrift(ctx context.Context, client interface {
	Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*unstructured.Unstructured, error)
}, live *unstructured.Unstructured, note, putBack string) error {
	orNull := func(s string) interface{} {
		if s == "" {
			return nil
		}
		return s
	}
	patch, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{
		"resourceVersion": live.GetResourceVersion(),
		"annotations":     map[string]interface{}{mapping.DriftHeldAnnotation: orNull(note), mapping.DriftPutBackAnnotation: orNull(putBack)}}})
	if err != nil {
		return err
	}
	if _, err := client.Patch(ctx, live.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: DriftFieldManager}); err != nil {
		return fmt.Errorf("writing the drift note on the edge copy: %w", err)
	}
	return nil
}

// releaseDrift ends a hold: the note goes (its event brings the key back, which is then written).
func (c *Controller) releaseDrift(ctx context.Context, key framework.Key, r Resource, upObj, downObj *unstructured.Unstructured, why string) error {
	client := c.cfg.Downstream.Resource(r.Downstream).Namespace(key.Namespace)
	if err := c.noteDrift(ctx, client, downObj, "", ""); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Drift hold ended", "reason", why)
	c.writes.Event(upObj, corev1.EventTypeNormal, "DriftReleased", fmt.Sprintf("Sync target %s: the drift hold ended (%s); the object syncs again", c.cfg.SyncTargetName, why))
	c.driftChanged(key, "")
	return nil
}

// recordDrift records the drift held for key ("" none) when it is not recorded so (found held after a
// restart; a held copy gone).
func (c *Controller) recordDrift(key framework.Key, id string) {
	c.pauses.mu.Lock()
	known := c.pauses.drifted[key] == id
	c.pauses.mu.Unlock()
	if !known {
		c.driftChanged(key, id)
	}
}

// HeldDrift is the id of the drift held for key, "" when none (status return labels the upstream
// object with it).
func (c *Controller) HeldDrift(key framework.Key) string {
	c.pauses.mu.Lock()
	defer c.pauses.mu.Unlock()
	return c.pauses.drifted[key]
}

// driftChanged records a key's held drift ("" none), sets the gauge and tells status return, which
// labels the upstream object.
func (c *Controller) driftChanged(key framework.Key, id string) {
	c.pauses.mu.Lock()
	if id == "" {
		delete(c.pauses.drifted, key)
	} else {
		c.pauses.drifted[key] = id
	}
	c.cfg.Metrics.DriftHeld.Set(float64(len(c.pauses.drifted)))
	c.pauses.mu.Unlock()
	if c.cfg.OnPauseChanged != nil {
		c.cfg.OnPauseChanged(key)
	}
}
