package downsync

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/signature"
)

// SignatureInvalid is the reason of the Warning Event on an upstream object that does not verify.
const SignatureInvalid = "SignatureInvalid"

// errRenamed: a conversion renames a signed object.
var errRenamed = errors.New("a conversion of a SyncerConfig renames it, and conversions are not signed")

// verified is the upstream object to write: what was signed, when the edge requires signatures and
// it verifies. One that does not verify is not written under Enforce (ok false: the edge keeps the
// version it has, the last verified), and written as it is under Warn; either way it is said once
// per reason: a Warning Event on it, a log line at level 0, a failure in ObjectsSynced (Enforce).
// A signature whose claims name other sync targets, or a serial lower than the edge copy's, does not
// verify either (a replay of another site's object, a rollback).
// An object a conversion renames does not verify either: conversions come from the mailbox's
// SyncerConfigs, which are not signed, and would write the signed content under another name or kind.
func (c *Controller) verified(ctx context.Context, key framework.Key, upObj, edgeCopy *unstructured.Unstructured, renamed bool) (*unstructured.Unstructured, bool) {
	v := c.cfg.Signatures
	if v == nil {
		c.withheld.Clear(key) // no longer too large, if it was
		return upObj, true
	}
	signed, keyID, err := v.Verify(upObj, c.cfg.SyncTargetName, signature.AppliedSerial(edgeCopy))
	if err == nil && renamed {
		err = errRenamed
	}
	if err == nil {
		klog.FromContext(ctx).V(logging.Trace).Info("Signature verified", "keyID", keyID)
		c.withheld.Clear(key)
		c.warned.Clear(key)
		return signed, true
	}
	enforce := v.Enforce()
	what := "not written at the edge, which keeps the version it has"
	if !enforce {
		what = "written anyway (signature policy Warn)"
	}
	reason := fmt.Sprintf("its signature does not verify with the keys the edge trusts: %v; %s", err, what)
	said := &c.withheld // a failure to sync (ObjectsSynced)
	if !enforce {
		said = &c.warned // written: said, not failing
	}
	if said.Report(ctx, key, reason) {
		c.writes.Event(upObj, corev1.EventTypeWarning, SignatureInvalid, fmt.Sprintf("Sync target %s: %s", c.cfg.SyncTargetName, reason))
	}
	if !enforce {
		return upObj, true
	}
	c.cfg.Metrics.Writes.WithLabelValues(metrics.Downsync, key.GVR.GroupResource().String(), metrics.Error).Inc()
	return nil, false
}
