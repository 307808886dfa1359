package downsync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// ObjectTooLarge is the reason of the Warning Event on an upstream object over the syncer's
// --max-object-bytes.
const ObjectTooLarge = "ObjectTooLarge"

// tooLarge tells whether upObj is held by the cache as its metadata only, being over the syncer's
// limit (mapping.TooLargeStub): then it is not written, the edge keeping what it has, and it is said
// once per size: a Warning Event on it, a log line at level 0, a failure in ObjectsSynced and a
// failed write in the metrics.
func (c *Controller) tooLarge(ctx context.Context, key framework.Key, upObj *unstructured.Unstructured) bool {
	size, ok := mapping.TooLarge(upObj)
	if !ok {
		return false
	}
	reason := fmt.Sprintf("the object is %d bytes, over the %d the syncer holds (--max-object-bytes); not written at the edge, which keeps the version it has",
		size, c.cfg.MaxObjectBytes)
	if c.withheld.Report(ctx, key, reason) {
		c.writes.Event(upObj, corev1.EventTypeWarning, ObjectTooLarge, fmt.Sprintf("Sync target %s: %s", c.cfg.SyncTargetName, reason))
	}
	c.cfg.Metrics.Writes.WithLabelValues(metrics.Downsync, key.GVR.GroupResource().String(), metrics.Error).Inc()
	return true
}
