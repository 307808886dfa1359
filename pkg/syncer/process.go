package syncer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	"github.com/kubestellar/syncer/pkg/selection"
)

// process makes the downstream object of one key match its upstream counterpart: create or update it
// when it is selected, delete it when it is owned and no longer selected. It returns a delay when the
// key must be looked at again later for a reason that is not an error.
func (c *Controller) process(ctx context.Context, key Key) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	st := c.state()
	gr := key.GVR.GroupResource()
	res := st.resources[gr]

	downGVR, servedDown := st.downstreamGVR(gr)
	if !servedDown {
		if res != nil {
			logger.V(logging.Skip).Info("Waiting for the resource to be served downstream")
		}
		return 0, nil // the informer's sync will enqueue it again
	}
	downObj, synced, err := framework.Cached(c.down, downGVR, key.Namespace, key.Name)
	if err != nil || !synced {
		return 0, err // not synced: enqueued again when the downstream cache syncs
	}

	var upObj *unstructured.Unstructured
	if res != nil {
		if upObj, synced, err = framework.Cached(c.up, res.Upstream.GVR, key.Namespace, key.Name); err != nil || !synced {
			return 0, err // not synced: enqueued again when the upstream cache syncs
		}
	}

	// Copies upsync wrote upstream are never downsynced back.
	wanted := upObj != nil && upObj.GetDeletionTimestamp() == nil && !mapping.OwnedUpstream(upObj) &&
		st.selection.Matches(gr, key.Namespace, key.Name)
	if !wanted {
		if res == nil && st.selection.Mentions(gr) {
			// Selected, but the API is not served upstream right now: hold, never delete on a guess.
			logger.V(logging.Skip).Info("Holding: resource selected but not served upstream")
			return 0, nil
		}
		return 0, c.deleteDownstream(ctx, key, downGVR, downObj)
	}
	return c.applyDownstream(ctx, key, res, downGVR, upObj, downObj)
}

// deleteDownstream deletes an owned downstream object that is no longer wanted.
func (c *Controller) deleteDownstream(ctx context.Context, key Key, gvr schema.GroupVersionResource, downObj *unstructured.Unstructured) error {
	logger := klog.FromContext(ctx)
	c.conflicts.Clear(key)
	if downObj == nil || !mapping.OwnedDownstream(downObj) {
		return nil
	}
	if mapping.CreateOnly(downObj) {
		logger.V(logging.Skip).Info("Not deleting a create-only object", "annotation", mapping.OverwriteAnnotation)
		return nil
	}
	if downObj.GetDeletionTimestamp() != nil {
		return nil
	}
	uid := downObj.GetUID()
	err := c.downClient.Resource(gvr).Namespace(key.Namespace).Delete(ctx, key.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	resource := key.GVR.GroupResource().String()
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return nil // a different object by now; its own events bring it back here
	case err != nil:
		c.metrics.Writes.WithLabelValues(metrics.Downsync, resource, metrics.Error).Inc()
		return fmt.Errorf("deleting downstream: %w", err)
	}
	c.metrics.Writes.WithLabelValues(metrics.Downsync, resource, metrics.Deleted).Inc()
	framework.ObserveLatency(ctx, c.metrics.SyncLatency.WithLabelValues(metrics.Downsync, resource))
	logger.V(logging.Change).Info("Deleted downstream object")
	return nil
}

// applyDownstream creates or updates the downstream object of a wanted upstream object.
func (c *Controller) applyDownstream(ctx context.Context, key Key, res *selection.Resource, downGVR schema.GroupVersionResource,
	upObj, downObj *unstructured.Unstructured) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	resource := key.GVR.GroupResource().String()
	desired, err := mapping.ToDownstream(upObj, c.opts)
	if err != nil {
		c.metrics.Writes.WithLabelValues(metrics.Downsync, resource, metrics.Error).Inc()
		logger.Error(err, "Cannot map the upstream object; not retrying until it changes")
		return 0, nil
	}
	if res.Upstream.Namespaced {
		if wait, err := c.namespaceMissing(key.Namespace); err != nil || wait {
			if wait {
				logger.V(logging.Skip).Info("Waiting for the namespace downstream")
			}
			return 0, err // the namespace's arrival enqueues this key again
		}
	}

	creating := downObj == nil
	if creating {
		// Our cache holds only labelled objects: make sure nobody else's object has this name. The
		// read is served from the apiserver's watch cache (resourceVersion "0"), not from etcd.
		live, err := c.downClient.Resource(downGVR).Namespace(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{ResourceVersion: "0"})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return 0, fmt.Errorf("looking for an existing downstream object: %w", err)
		default:
			downObj, creating = live, false
		}
	}
	if downObj != nil && !mapping.OwnedDownstream(downObj) && key.GVR.GroupResource() == selection.NamespacesResource {
		// A namespace that was there before the syncer: use it, leave it alone (even when adopting).
		logger.V(logging.Skip).Info("Namespace exists downstream and is not the syncer's; using it as it is")
		return 0, nil
	}
	if downObj != nil && !mapping.OwnedDownstream(downObj) && !c.cfg.AdoptExisting {
		c.metrics.Writes.WithLabelValues(metrics.Downsync, resource, metrics.Conflict).Inc()
		if c.conflicts.Report(ctx, key, fmt.Sprintf("Not writing downstream: %s exists downstream without the syncer's mark %s=%s (pass --adopt-existing to take it over)",
			key.String(), mapping.DownsyncedAnnotation, mapping.MarkOf(desired))) && c.cfg.Recorder != nil {
			c.cfg.Recorder.Eventf(upObj, corev1.EventTypeWarning, "Conflict",
				"Not written to sync target %s: an object of that name exists there without the syncer's mark (the syncer may take it over with --adopt-existing)", c.cfg.SyncTargetName)
		}
		return c.cfg.ConflictRecheckPeriod, nil
	}
	c.conflicts.Clear(key)
	if downObj != nil && mapping.OwnedDownstream(downObj) && mapping.CreateOnly(upObj) {
		logger.V(logging.Skip).Info("Create-only object exists downstream; not updating it", "annotation", mapping.OverwriteAnnotation)
		return 0, nil
	}
	if mapping.UpToDate(desired, downObj) {
		logger.V(logging.Skip).Info("Downstream object is up to date")
		return 0, nil
	}
	data, err := json.Marshal(desired.Object)
	if err != nil {
		return 0, err
	}
	force := true
	_, err = c.downClient.Resource(downGVR).Namespace(key.Namespace).Patch(ctx, key.Name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: c.cfg.FieldManager, Force: &force})
	if err != nil {
		c.metrics.Writes.WithLabelValues(metrics.Downsync, resource, metrics.Error).Inc()
		if framework.Permanent(err) && c.cfg.Recorder != nil {
			c.cfg.Recorder.Eventf(upObj, corev1.EventTypeWarning, "ApplyFailed", "Sync target %s refused the object: %v", c.cfg.SyncTargetName, err)
		}
		if apierrors.IsNotFound(err) && res.Upstream.Namespaced {
			return 0, fmt.Errorf("applying downstream (is the namespace there yet?): %w", err)
		}
		return 0, fmt.Errorf("applying downstream: %w", err)
	}
	result, verb := metrics.Updated, "Updated"
	if creating {
		result, verb = metrics.Created, "Created"
	}
	c.metrics.Writes.WithLabelValues(metrics.Downsync, resource, result).Inc()
	framework.ObserveLatency(ctx, c.metrics.SyncLatency.WithLabelValues(metrics.Downsync, resource))
	logger.V(logging.Change).Info(verb + " downstream object")
	return 0, nil
}

// namespaceMissing tells whether a namespaced object must wait for its namespace downstream: it is
// absent or terminating. The downstream namespace informer sees every namespace.
func (c *Controller) namespaceMissing(namespace string) (bool, error) {
	inf, ok := c.down.Synced(namespaceGVR)
	if !ok {
		return true, nil
	}
	ns, err := framework.GetFromCache(inf, "", namespace)
	if err != nil {
		return false, err
	}
	return ns == nil || ns.GetDeletionTimestamp() != nil, nil
}
