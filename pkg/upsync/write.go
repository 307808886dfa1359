package upsync

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// applyUpstream creates or updates the upstream copy of a selected edge object through the steps of
// the write path (framework.Write; upWrite says what each means upstream).
func (c *Controller) applyUpstream(ctx context.Context, key framework.Key, r Resource, down, up *unstructured.Unstructured) (time.Duration, error) {
	desired, err := mapping.ToUpstream(down, mapping.Options{OwnerLabelValue: c.cfg.OwnerLabelValue, Rename: r.Rename})
	if err != nil {
		c.writes.Unmappable(ctx, key, err)
		return 0, nil
	}
	return c.writes.Do(ctx, key, &upWrite{c: c, key: key, r: r, desired: desired, up: up})
}

// upWrite is one write of an upstream copy (framework.Write).
type upWrite struct {
	c           *Controller
	key         framework.Key
	r           Resource
	desired, up *unstructured.Unstructured // up: the upstream object of that name, if any
}

var _ framework.Write = &upWrite{}

func (w *upWrite) client() dynamic.ResourceInterface {
	return w.c.cfg.Upstream.Resource(w.r.Upstream).Namespace(w.key.Namespace)
}

// Blocked: an upstream object of that name without the upsync mark, or another sync target's copy.
func (w *upWrite) Blocked(context.Context) *framework.Blocked {
	if w.up == nil {
		return nil
	}
	key, recheck := w.key, w.c.cfg.ConflictRecheckPeriod
	switch mapping.ClaimOf(w.up, w.c.cfg.OwnerLabelValue) {
	case mapping.NotUpsynced:
		return &framework.Blocked{About: w.up, Recheck: recheck, Reason: "UpsyncConflict",
			LogMsg: fmt.Sprintf("Not upsyncing: %s exists upstream without the syncer's mark %s=%s", key.String(), mapping.UpsyncedAnnotation, mapping.MarkOf(w.desired)),
			Event:  "The edge object of this name is not upsynced: this object exists without the mark " + mapping.UpsyncedAnnotation}
	case mapping.UpsyncedByOther:
		other := w.up.GetLabels()[mapping.UpsyncOwnerLabel]
		return &framework.Blocked{About: w.up, Recheck: recheck, Reason: "UpsyncConflict",
			LogMsg: fmt.Sprintf("Not upsyncing: %s exists upstream as a copy upsynced by sync target %q (label %s); two edges upsync the same name", key.String(), other, mapping.UpsyncOwnerLabel),
			Event:  fmt.Sprintf("The edge object of this name at sync target %s is not upsynced: this object is sync target %q's copy", w.c.cfg.OwnerLabelValue, other)}
	}
	return nil
}

func (w *upWrite) Creating() bool { return w.up == nil }

func (w *upWrite) contentOK() bool { return w.up != nil && mapping.UpsyncedUpToDate(w.desired, w.up) }
func (w *upWrite) statusOK() bool  { return w.up != nil && mapping.StatusEqual(w.desired, w.up) }

// Skip: the copy holds the edge object's content and status.
func (w *upWrite) Skip() string {
	if w.contentOK() && w.statusOK() {
		return "Upstream copy is up to date"
	}
	return ""
}

func (w *upWrite) Content() string { return mapping.UpsyncedContent(w.desired) }

// Before reads the copy as the other writer left it.
func (w *upWrite) Before(ctx context.Context) *unstructured.Unstructured {
	live, _ := w.client().Get(ctx, w.key.Name, metav1.GetOptions{})
	return live
}

// Do creates the copy (and its namespace, when missing) or updates it, then its status through the
// status subresource where the resource has one. A cache behind the upstream (the name taken, or
// the copy changed meanwhile) looks again a second later.
func (w *upWrite) Do(ctx context.Context, _ *unstructured.Unstructured) framework.Outcome {
	current, result, err := w.writeContent(ctx)
	if err == nil && w.r.UpstreamHasStatus {
		var wrote bool
		if wrote, err = w.writeStatus(ctx, current); wrote && result == "" {
			result = metrics.Updated
		}
	}
	switch {
	case apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err):
		klog.FromContext(ctx).V(logging.Detail).Info("Upstream changed meanwhile; will look again", "reason", apierrors.ReasonForError(err))
		return framework.Outcome{Requeue: time.Second}
	case err != nil:
		var about runtime.Object // Events go upstream: about the copy, when there is one
		if w.up != nil {
			about = w.up
		}
		return framework.Outcome{Err: w.c.writes.Failed(w.key, about, "UpsyncFailed", "writing the upstream copy", err)}
	}
	about := w.up // the Event goes on the copy
	if about == nil {
		about = current
	}
	return framework.Outcome{Result: result, Msg: "Upsynced", KeysAndValues: []interface{}{"result", result}, About: about}
}

// writeContent creates or updates the copy as needed; it returns the copy as it is now and the
// result ("" when its content needed no write).
func (w *upWrite) writeContent(ctx context.Context) (*unstructured.Unstructured, string, error) {
	client := w.client()
	create := metav1.CreateOptions{FieldManager: w.c.cfg.FieldManager}
	switch {
	case w.up == nil:
		current, err := client.Create(ctx, w.desired, create)
		if apierrors.IsNotFound(err) && w.r.Namespaced {
			if err = w.c.ensureNamespace(ctx, w.key.Namespace); err == nil {
				current, err = client.Create(ctx, w.desired, create)
			}
		}
		return current, metrics.Created, err
	case !w.contentOK() || (!w.r.UpstreamHasStatus && !w.statusOK()):
		body := w.desired.DeepCopy()
		body.SetResourceVersion(w.up.GetResourceVersion())
		current, err := client.Update(ctx, body, metav1.UpdateOptions{FieldManager: w.c.cfg.FieldManager})
		return current, metrics.Updated, err
	}
	return w.up, "", nil
}

// writeStatus writes the edge object's status on the copy through its status subresource, when it
// differs; it tells whether it wrote.
func (w *upWrite) writeStatus(ctx context.Context, current *unstructured.Unstructured) (bool, error) {
	status, ok := w.desired.Object["status"]
	if !ok || mapping.StatusEqual(w.desired, current) {
		return false, nil
	}
	body := current.DeepCopy()
	body.Object["status"] = runtime.DeepCopyJSONValue(status)
	_, err := w.client().UpdateStatus(ctx, body, metav1.UpdateOptions{FieldManager: w.c.cfg.FieldManager})
	return err == nil, err
}
