package downsync

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/gate"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/report"
	"github.com/kubestellar/syncer/pkg/selection"
)

// The gates of gates.go's lists, in the order of the lists. Each says why it stops a key, once where
// the policy says so (its own file: pauses.go, limits.go, signatures.go, drift.go, ...).

// fenceRecheck is how often a key held while the fence is not in force is looked at again.
const fenceRecheck = 10 * time.Second

// fenceGate holds every key while the edge owner's fence is not proven in force.
func (c *Controller) fenceGate(ctx context.Context, _ *input) gate.Verdict {
	if c.cfg.Fence == nil {
		return gate.Pass
	}
	if ok, why := c.cfg.Fence.InForce(); !ok {
		klog.FromContext(ctx).V(logging.Skip).Info("Not writing: the edge owner's fence is not in force", "reason", why)
		return gate.Stop(fenceRecheck, nil)
	}
	return gate.Pass
}

// pauseGate holds a paused key, whatever else would be done with it, until its pause ends.
func (c *Controller) pauseGate(ctx context.Context, in *input) gate.Verdict {
	if after, held := c.paused(ctx, in); held {
		klog.FromContext(ctx).V(logging.Skip).Info("Paused: not writing", "resumeIn", after.Round(time.Second).String())
		return gate.Stop(after, nil)
	}
	return gate.Pass
}

// earlyGate stops an object streamed in before its cache synced unless it is to be written.
func (c *Controller) earlyGate(ctx context.Context, in *input) gate.Verdict {
	switch {
	case !in.early:
		return gate.Pass
	case !in.wanted:
		return gate.Stop(0, nil)
	}
	klog.FromContext(ctx).V(logging.Trace).Info("Writing an object streamed in before the upstream cache synced")
	return gate.Pass
}

// renamedGate deletes the copy a conversion now renames (not for an early object: see earlyGate), a
// deletion the breaker counts. The object is wanted: what was kept of it is not any more.
func (c *Controller) renamedGate(ctx context.Context, in *input) gate.Verdict {
	c.kept.Clear(in.key)
	c.emptying.forget(in.key)
	if in.early {
		return gate.Pass
	}
	old, err := c.unrenamed(in.key, in.r, in.reportOnly)
	switch {
	case err != nil:
		return gate.Stop(0, err)
	case old == nil:
		c.forgetRewrite(in.key, renamed)
		return gate.Pass
	}
	if v := c.mayDelete(ctx, rewriteKey(in.key, renamed), 1); v.Stop {
		return v
	}
	client := c.cfg.Downstream.Resource(in.r.Downstream).Namespace(in.key.Namespace)
	if _, err := c.writes.DeleteOwned(ctx, client, in.key, old, "Deleted the copy a conversion now renames", "renamedTo", in.r.Rename.DownName(in.key.Name)); err != nil {
		return gate.Stop(0, err)
	}
	return gate.Pass
}

// namespaceGate holds a namespaced object until its namespace is at the edge and not terminating.
func (c *Controller) namespaceGate(ctx context.Context, in *input) gate.Verdict {
	if !in.r.Namespaced {
		return gate.Pass
	}
	logger, ns := klog.FromContext(ctx), in.key.Namespace
	wait, terminating, err := c.namespaceMissing(ns)
	if c.waitingOnTerminating(in.key, ns, terminating) {
		logger.V(logging.Change).Info("Waiting for the namespace to finish terminating at the edge", "namespace", ns)
	}
	if wait && !terminating && in.reportOnly {
		c.reported(ctx, in.key, report.Entry{Action: report.Create}) // its namespace would be created first
		return gate.Stop(0, nil)
	}
	if err != nil || wait {
		if wait && !terminating {
			logger.V(logging.Skip).Info("Waiting for the namespace downstream")
			c.namespaceWanted(ns)
		}
		return gate.Stop(0, err) // the namespace's arrival enqueues this key again
	}
	return gate.Pass
}

// sizeGate withholds an object over --max-object-bytes; its next change brings the key back.
func (c *Controller) sizeGate(ctx context.Context, in *input) gate.Verdict {
	if c.tooLarge(ctx, in.key, in.up) {
		return gate.Stop(0, nil)
	}
	return gate.Pass
}

// signatureGate replaces the object with what was signed, or withholds it (Enforce); its next change
// brings the key back.
func (c *Controller) signatureGate(ctx context.Context, in *input) gate.Verdict {
	up, ok := c.verified(ctx, in.key, in.up, in.down, in.r.Rename != nil)
	if !ok {
		return gate.Stop(0, nil)
	}
	if up != in.up {
		in.up, in.sel = up, selection.ObjectOf(in.key.GVR.GroupResource(), up)
		in.policy = c.cfg.Selection.PolicyOf(in.sel, in.now)
		in.reportOnly = c.cfg.ReportOnly || in.policy.ReportOnly
	}
	return gate.Pass
}

// retainGate names the fields the edge owns; an object with replicas waits for the edge's
// autoscalers to be listed.
func (c *Controller) retainGate(ctx context.Context, in *input) gate.Verdict {
	retain, known := c.retained(in.policy.Retain, in.key, in.r, in.up)
	if !known {
		klog.FromContext(ctx).V(logging.Skip).Info("Waiting for the edge's autoscalers to be listed: its replicas may be theirs")
		return gate.Stop(autoscalersWait, nil)
	}
	in.opts.Retain = retain
	return gate.Pass
}

// mappingGate maps the object to what is written at the edge (desired); one that cannot be mapped is
// said, and its next change brings the key back.
func (c *Controller) mappingGate(ctx context.Context, in *input) gate.Verdict {
	opts := c.cfg.Mapping
	opts.KeepOnDelete = !in.policy.PropagatesDeletion
	opts.Rename, opts.Generation, opts.Retain = in.r.Rename, in.r.UpstreamHasStatus, in.opts.Retain
	desired, err := mapping.ToDownstream(in.up, opts)
	if err != nil {
		c.writes.Unmappable(ctx, in.key, err)
		return gate.Stop(0, nil)
	}
	in.opts, in.desired = opts, desired
	if !in.reportOnly {
		c.cfg.Report.Forget(in.key) // no longer only reported (a config's reportOnly switched off)
	}
	return gate.Pass
}

// driftGate holds an object whose edge copy drifted under policy Report (not when only reported):
// the note's or the acknowledgement's event brings the key back.
func (c *Controller) driftGate(ctx context.Context, in *input) gate.Verdict {
	if in.reportOnly {
		return gate.Pass
	}
	if held, err := c.heldDrift(ctx, in.key, in.r, in.up, in.desired, in.down, in.policy.Drift); held || err != nil {
		return gate.Stop(0, err)
	}
	return gate.Pass
}

// servedGate holds an edge copy whose resource is selected but not served upstream right now, or held
// for having too many objects there: never deleted on a guess.
func (c *Controller) servedGate(ctx context.Context, in *input) gate.Verdict {
	if in.r.Upstream.Empty() && in.down != nil && (in.r.Held || c.cfg.Selection.Mentions(in.key.GVR.GroupResource(), in.down.GetKind())) {
		klog.FromContext(ctx).V(logging.Skip).Info("Holding: resource selected but not served upstream, or held")
		return gate.Stop(0, nil)
	}
	return gate.Pass
}

// unwantedGate forgets what was withheld, refused, reported or held of the object's writes, and says
// why a selected upsynced copy is not downsynced.
func (c *Controller) unwantedGate(ctx context.Context, in *input) gate.Verdict {
	c.takenAgain(in.key)
	c.withheld.Clear(in.key) // not wanted: nothing to verify or withhold any more
	c.full.Clear(in.key)
	c.warned.Clear(in.key)
	if in.markedUpsynced {
		c.upsyncedCopy(ctx, in.key, in.up)
	} else {
		c.writes.ClearConflict(in.key)
	}
	c.cfg.Report.Forget(in.key) // nothing to report unless it would be deleted (report-only, below)
	c.recordDrift(in.key, "")
	return gate.Pass
}

// keptGate leaves alone an edge copy that is not there, not the syncer's to delete, or kept by its
// marks.
func (c *Controller) keptGate(ctx context.Context, in *input) gate.Verdict {
	kept, why, kv := c.keptAtEdge(in.down)
	if !kept {
		return gate.Pass
	}
	if c.cfg.Deletions != nil {
		c.cfg.Deletions.Forget(in.key) // no deletion due for it (any more), if one was held
	}
	if why != "" {
		klog.FromContext(ctx).V(logging.Skip).Info(why, kv...)
	}
	return gate.Stop(0, nil)
}

// breakerGate asks the deletion breaker, weighing what the deletion takes with it: the deletion goes
// ahead, waits to be counted with the others due now, or is held (released, it comes back as a key
// to process). Report-only, nothing is deleted, nothing counted.
func (c *Controller) breakerGate(ctx context.Context, in *input) gate.Verdict {
	if c.cfg.Deletions == nil || in.reportOnly {
		return gate.Pass
	}
	weight, err := c.weightOf(ctx, in)
	if err != nil {
		return gate.Stop(0, err)
	}
	return c.mayDelete(ctx, in.key, weight)
}
