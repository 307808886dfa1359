package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// DefaultFieldManager is the field manager of the syncer's writes in every direction: server-side
// apply downstream, updates upstream, the heartbeat. A loop with another writer names the other one.
const DefaultFieldManager = "kubestellar-syncer"

// Writes is the one write path of a direction (downsync, status, upsync): it counts every write and
// its result, observes the latency from the observed change to the write that applied it, logs one
// line per change, reports conflicts with objects the syncer does not own (log once, Event, count)
// and records writes refused for good as Events. The controllers decide what to write; this records
// what happened.
type Writes struct {
	direction string
	// fieldManager names the syncer's writes: a loop report names the other writers.
	fieldManager string
	metrics      *metrics.Metrics
	recorder     record.EventRecorder
	conflicts    ConflictLog
	loops        loops
	// loudDeletes logs deletions at level 0 (upsync: deleting upstream removes what others read).
	loudDeletes bool
}

// LogDeletesLoudly makes DeleteOwned log every deletion at level 0 instead of logging.Change.
func (w *Writes) LogDeletesLoudly() *Writes { w.loudDeletes = true; return w }

// NewWrites returns the write path of one direction, whose writes go under fieldManager. recorder
// may be nil (no Events).
func NewWrites(direction, fieldManager string, m *metrics.Metrics, recorder record.EventRecorder) *Writes {
	return &Writes{direction: direction, fieldManager: fieldManager, metrics: m, recorder: recorder}
}

// Applied records a write that applied a change: counted by result, its latency observed, and one
// line logged at logging.Change with msg and the key/value pairs.
func (w *Writes) Applied(ctx context.Context, key Key, result, msg string, keysAndValues ...interface{}) {
	w.count(ctx, key, result)
	klog.FromContext(ctx).V(logging.Change).Info(msg, keysAndValues...)
}

// count counts a write by result and observes its latency.
func (w *Writes) count(ctx context.Context, key Key, result string) {
	resource := key.GVR.GroupResource().String()
	w.metrics.Writes.WithLabelValues(w.direction, resource, result).Inc()
	ObserveLatency(ctx, w.metrics.SyncLatency.WithLabelValues(w.direction, resource))
}

// Failed records a failed write and returns the error to retry with, saying what was attempted. A
// write refused for good (invalid, forbidden, ...) is also recorded as a Warning Event with reason
// on about (the object the user looks at), when about is set; client-go's recorder deduplicates them.
func (w *Writes) Failed(key Key, about runtime.Object, reason, what string, err error) error {
	w.metrics.Writes.WithLabelValues(w.direction, key.GVR.GroupResource().String(), metrics.Error).Inc()
	if Permanent(err) {
		w.Event(about, corev1.EventTypeWarning, reason, fmt.Sprintf("%s: %v", what, err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Conflict records that a key is blocked by an object the syncer does not own: counted every time,
// logged once at level 0 (then at logging.Skip), and recorded once as a Warning Event with reason and
// event on about.
func (w *Writes) Conflict(ctx context.Context, key Key, about runtime.Object, logMsg, reason, event string) {
	w.metrics.Writes.WithLabelValues(w.direction, key.GVR.GroupResource().String(), metrics.Conflict).Inc()
	if w.conflicts.Report(ctx, key, logMsg) {
		w.Event(about, corev1.EventTypeWarning, reason, event)
	}
}

// Event records an Event on about, the upstream object the user looks at; nothing without a
// recorder or an object (nil, or a nil *unstructured.Unstructured). client-go's recorder deduplicates and rate-limits Events.
func (w *Writes) Event(about runtime.Object, eventType, reason, message string) {
	if u, ok := about.(*unstructured.Unstructured); ok && u == nil {
		return // no object (gone upstream): a nil in an interface is not nil
	}
	if w.recorder != nil && about != nil {
		w.recorder.Event(about, eventType, reason, message)
	}
}

// ClearConflict forgets a key's conflict (the key was written, or needs no write any more).
func (w *Writes) ClearConflict(key Key) { w.conflicts.Clear(key) }

// Conflicts are the keys in conflict now.
func (w *Writes) Conflicts() *ConflictLog { return &w.conflicts }

// DeleteOwned deletes obj, an object the syncer owns, through client, with a precondition on its UID
// so that a different object of the same name is never deleted, and background propagation so that
// its dependents go too (a Job's Pods; the default for Jobs and ReplicationControllers is to orphan
// them). Gone already, or replaced by a different object (whose own events bring its key back),
// counts as done. It records the deletion as Applied with msg and the key/value pairs, and tells
// whether it deleted obj.
func (w *Writes) DeleteOwned(ctx context.Context, client dynamic.ResourceInterface, key Key, obj *unstructured.Unstructured, msg string, keysAndValues ...interface{}) (bool, error) {
	w.ClearConflict(key)
	err := client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: ptr.To(obj.GetUID())},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return false, nil
	case err != nil:
		return false, w.Failed(key, nil, "", "deleting "+key.String(), err)
	}
	if w.loudDeletes {
		w.count(ctx, key, metrics.Deleted)
		klog.FromContext(ctx).Info(msg, keysAndValues...)
		return true, nil
	}
	w.Applied(ctx, key, metrics.Deleted, msg, keysAndValues...)
	return true, nil
}

// ObserveLatency records on o the seconds since the change being processed was observed, if known.
func ObserveLatency(ctx context.Context, o interface{ Observe(float64) }) {
	if d, ok := ObservedSince(ctx); ok {
		o.Observe(d.Seconds())
	}
}

// Unmappable records an object that cannot be mapped to the other side: counted as an error and
// logged at level 0, and not retried until it changes (retrying cannot help).
func (w *Writes) Unmappable(ctx context.Context, key Key, err error) {
	w.metrics.Writes.WithLabelValues(w.direction, key.GVR.GroupResource().String(), metrics.Error).Inc()
	klog.FromContext(ctx).Error(err, "Cannot map the object to the other side; not retrying until it changes")
}
