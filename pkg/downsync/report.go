package downsync

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/report"
)

// reported records what the syncer would do with key, logging it at level 0 when that changed.
func (c *Controller) reported(ctx context.Context, key framework.Key, e report.Entry) {
	if !c.cfg.Report.Set(key, e) {
		return
	}
	changes, _ := json.Marshal(e.Changes)
	klog.FromContext(ctx).Info("Report-only: would write at the edge", "action", e.Action, "changes", string(changes), "error", e.Error)
}

// dryRun is the write of report-only mode: downWrite's steps, written nowhere; what they would do is
// recorded in the report (Config.Report): a conflict, a create, the changes of an update, a refusal;
// an object in step is not reported.
type dryRun struct{ *downWrite }

var _ framework.Write = dryRun{}

// Blocked reports the object in the way as a conflict (said as a write's would be).
func (w dryRun) Blocked(ctx context.Context) *framework.Blocked {
	b := w.blocked()
	if b != nil {
		w.c.reported(ctx, w.key, report.Entry{Action: report.Conflict, Error: b.LogMsg})
	}
	return b
}

// Skip forgets what was reported of an object that needs no write.
func (w dryRun) Skip() string {
	why := w.skip()
	if why != "" {
		w.c.cfg.Report.Forget(w.key)
	}
	return why
}

// Do reports what the write would do (report).
func (w dryRun) Do(ctx context.Context, _ *unstructured.Unstructured) framework.Outcome {
	return w.report(ctx)
}

// report is what the write would do, computed exactly and written nowhere.
// The edge object is read (a slim cache holds no content, and one the syncer does not own is not in
// it): absent, it would be created; there, the apply is sent as a server-side dry-run, and the fields
// whose values it would change are reported (none: in step, nothing reported). Nothing is handed
// over, replaced or noted. A reported key is looked at again every --conflict-recheck-period: the
// edge objects the syncer does not own send it no events.
func (w *downWrite) report(ctx context.Context) framework.Outcome {
	c := w.c
	recheck := framework.Outcome{Requeue: c.cfg.ConflictRecheckPeriod}
	live, err := w.client().Get(ctx, w.desired.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.reported(ctx, w.key, report.Entry{Action: report.Create})
		return recheck
	case err != nil:
		return framework.Outcome{Err: err}
	}
	check := &downWrite{c: c, key: w.key, r: w.r, up: w.up, desired: w.desired, down: live, readLive: true, retain: w.retain}
	if b := check.blocked(); b != nil {
		c.reported(ctx, w.key, report.Entry{Action: report.Conflict, Error: b.LogMsg})
		return recheck
	}
	if check.skip() != "" {
		c.cfg.Report.Forget(w.key)
		return framework.Outcome{}
	}
	body, err := check.withRetained(ctx, live) // read just above
	if err != nil {
		return framework.Outcome{Err: err}
	}
	after, err := w.client().Apply(ctx, body.GetName(), body, metav1.ApplyOptions{FieldManager: c.cfg.FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
	switch {
	case err != nil && !framework.Permanent(err):
		return framework.Outcome{Err: err} // retried, as a write would be
	case err != nil:
		c.reported(ctx, w.key, report.Entry{Action: report.Refused, Error: err.Error()})
		return recheck
	}
	if changes := mapping.Changes(live, after); len(changes) > 0 {
		e := report.Entry{Action: report.Update}
		for _, ch := range changes {
			e.Changes = append(e.Changes, edgev1.ReportedChange(ch))
		}
		c.reported(ctx, w.key, e)
		return recheck
	}
	c.cfg.Report.Forget(w.key)
	return framework.Outcome{}
}
