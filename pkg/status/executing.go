package status

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// register makes the upstream object up name this sync target as running it (mapping.ExecutingLabel)
// when executes (its edge copy is there and its status returned), and not otherwise: one merge patch
// of the label, when it is not as it should be. wrote tells that it wrote: the write's event brings
// the key back. Nothing for a target whose name cannot be a label name.
func (c *Controller) register(ctx context.Context, key framework.Key, r Resource, up *unstructured.Unstructured, executes bool) (wrote bool, err error) {
	if c.executing == "" {
		return false, nil
	}
	_, named := up.GetLabels()[c.executing]
	if named == executes {
		return false, nil
	}
	var value interface{} // null removes it
	result := "unregistered"
	if executes {
		value, result = "true", "registered"
	}
	return c.patchLabel(ctx, key, r, up, c.executing, value, result)
}

// forbiddenRetry is how long labelling a resource's objects is not tried again after the upstream
// refused it (forbidden).
const forbiddenRetry = 5 * time.Minute

// patchLabel sets (or, for nil, removes) one label on the upstream object up by a merge patch with a
// precondition on the resourceVersion read, counted as a status write with result. wrote tells that
// it wrote (or that up changed meanwhile): the write's event brings the key back.
func (c *Controller) patchLabel(ctx context.Context, key framework.Key, r Resource, up *unstructured.Unstructured,
	label string, value interface{}, result string) (wrote bool, err error) {
	if at, ok := c.forbidden.Load(key.GVR.GroupResource()); ok && time.Since(at.(time.Time)) < forbiddenRetry {
		return false, nil // refused lately: not asked again for every status
	}
	err = c.patchLabelOf(ctx, r.Upstream, key, label, value, up.GetResourceVersion()) // only over what was read
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		c.cfg.Metrics.Writes.WithLabelValues(metrics.Status, key.GVR.GroupResource().String(), metrics.Conflict).Inc()
		return true, nil // the upstream event that made the cache behind brings the key back
	case apierrors.IsForbidden(err):
		// An identity made before status return labelled objects (syncer-gen's least RBAC granted no
		// patch): status return goes on without the label, and says so once per resource.
		c.cfg.Metrics.Writes.WithLabelValues(metrics.Status, key.GVR.GroupResource().String(), metrics.Error).Inc()
		if _, said := c.forbidden.Swap(key.GVR.GroupResource(), time.Now()); !said {
			klog.FromContext(ctx).Error(err, "May not label objects upstream; returning their status without naming the sync target on them, so another sync target running them is not noticed (run syncer-gen again to grant patch)",
				"resource", key.GVR.GroupResource().String(), "label", label)
		}
		return false, nil
	case err != nil:
		return false, c.writes.Failed(key, up, "StatusFailed", "writing label "+label+" upstream", err)
	}
	c.cfg.Metrics.Writes.WithLabelValues(metrics.Status, key.GVR.GroupResource().String(), result).Inc()
	klog.FromContext(ctx).V(logging.Change).Info("Wrote a per-target label upstream", "label", label, "value", value)
	return true, nil
}

// markApplied tells on the upstream object up which of its versions the edge copy down runs
// (mapping.AppliedLabel), when up asks (mapping.ReportsApplied) and its status does not say it
// (carried): one merge patch when the value changes. wrote tells that it wrote.
func (c *Controller) markApplied(ctx context.Context, key framework.Key, r Resource, down, up *unstructured.Unstructured, carried bool) (wrote bool, err error) {
	if c.applied == "" || carried || down == nil || !mapping.ReportsApplied(up) {
		return false, nil
	}
	version, ok := mapping.AppliedVersion(down)
	if !ok || up.GetLabels()[c.applied] == version {
		return false, nil
	}
	return c.patchLabel(ctx, key, r, up, c.applied, version, "applied")
}

// others are the other sync targets up names as running it.
func (c *Controller) others(up *unstructured.Unstructured) []string {
	var out []string
	for _, t := range mapping.Executors(up) {
		if t != c.cfg.SyncTargetName {
			out = append(out, t)
		}
	}
	return out
}

// edgeCopyGone handles the deletion of an edge object: a selected resource's is looked at as any
// change (process unregisters); one whose resource left the selection (deleted as a leftover) is
// released: its upstream object, if any, no longer names this target.
func (c *Controller) edgeCopyGone(gvr schema.GroupVersionResource, u *unstructured.Unstructured, enqueue func(*unstructured.Unstructured)) {
	if _, ok := c.cfg.Selection.Resource(gvr.GroupResource()); ok || u == nil {
		enqueue(u)
		return
	}
	if c.executing == "" || !mapping.OwnedDownstream(u) || u.GetAnnotations()[mapping.RenaturedFromAnnotation] != "" {
		return // a renamed object's upstream name is not known here
	}
	key := framework.Key{GVR: gvr, Namespace: u.GetNamespace(), Name: u.GetName()}
	c.releasing.Store(key, struct{}{})
	c.queue.Add(key)
}

// release removes the label naming this target as running the upstream object of a key edgeCopyGone
// released (its resource no longer selected, so no cache to read it from: one merge patch, which
// changes nothing where the label is not there, at the resource's edge version).
func (c *Controller) release(ctx context.Context, key framework.Key) error {
	if _, ok := c.releasing.Load(key); !ok {
		return nil
	}
	err := c.patchLabelOf(ctx, key.GVR, key, c.executing, nil, "")
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) && !apierrors.IsMethodNotSupported(err) {
		return fmt.Errorf("no longer naming the sync target on the upstream object: %w", err)
	}
	c.releasing.Delete(key)
	klog.FromContext(ctx).V(logging.Change).Info("The sync target no longer runs the object; released it upstream", "err", err)
	return nil
}

// patchLabelOf sets (or, for nil, removes) one label on the upstream object of key, served at gvr,
// by a merge patch; with a resourceVersion, only over that version.
func (c *Controller) patchLabelOf(ctx context.Context, gvr schema.GroupVersionResource, key framework.Key, label string, value interface{},
	resourceVersion string) error {
	meta := map[string]interface{}{"labels": map[string]interface{}{label: value}}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	patch, err := json.Marshal(map[string]interface{}{"metadata": meta})
	if err != nil {
		return err
	}
	_, err = c.cfg.Upstream.Resource(gvr).Namespace(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// namedUpstream tells whether the upstream object of key names this sync target as running it,
// reading only its head from the cache (false while the cache is not synced: its sync enqueues the
// key again).
func (c *Controller) namedUpstream(r Resource, key framework.Key) bool {
	cached, ok := framework.SyncedCache(c.cfg.UpstreamInformers, r.Upstream, key.Namespace)
	if !ok || c.executing == "" {
		return false
	}
	obj, err := cached.Get(key.Namespace, key.Name)
	if err != nil || obj == nil {
		return false
	}
	u := framework.MetaOf(obj)
	if u == nil {
		return false
	}
	_, named := u.GetLabels()[c.executing]
	return named
}

// tellsVersion tells whether an edge copy records the upstream version it carries for its upstream
// object to be told (mapping.ReportAppliedAnnotation): then it matters without a status.
func tellsVersion(down *unstructured.Unstructured) bool {
	return down.GetAnnotations()[mapping.UpstreamResourceVersionAnnotation] != ""
}
