package upsync

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/gate"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/selection"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// input is what upsync's gates look at: a key's edge object (nil: none), its resource at the edge,
// and the time; withheld is why the edge keeps the object to itself (reads), "" when it does not.
type input struct {
	key      framework.Key
	gr       schema.GroupResource
	down     *unstructured.Unstructured
	now      time.Time
	withheld string
}

// newGates lists the per-object policies of upsync, in order.
func (c *Controller) newGates() gate.Chain[*input] {
	return gate.Chain[*input]{
		// A technician paused the edge object: neither its copy nor its copy's deletion is written,
		// until the pause ends.
		{Name: "pause", Admit: func(ctx context.Context, in *input) gate.Verdict {
			p := mapping.PauseOf(in.down)
			if !p.Active(in.now) {
				return gate.Pass
			}
			klog.FromContext(ctx).V(logging.Skip).Info("Paused at the edge: not writing its copy upstream", "until", p.Until.UTC().Format(time.RFC3339))
			return gate.Stop(mapping.ResumeAfter(p.Until, in.now), nil)
		}},
		// What the edge owner keeps to the edge is not upsynced, whatever the mailbox selects; a copy
		// made before is deleted.
		{Name: "reads", Admit: c.readsGate},
	}
}

// readsGate marks withheld an edge object the edge owner keeps to the edge: anything in a protected
// namespace (the syncer's own, whose Secrets hold its credentials, among them) or the protected
// Namespaces themselves, a ServiceAccount token Secret, and any Secret unless the edge owner lets
// Secrets be upsynced (Config.Secrets). Said once per object and reason when an entry names it (a log
// line at level 0, a failure in ObjectsSynced); passed over at logging.Skip when only a wildcard
// selects it.
func (c *Controller) readsGate(ctx context.Context, in *input) gate.Verdict {
	if in.down == nil {
		return gate.Pass
	}
	if in.withheld = c.refusedRead(in.gr, in.down); in.withheld == "" {
		c.withheld.Clear(in.key)
		return gate.Pass
	}
	if !c.cfg.Selection.UpsyncNamesExplicitly(selection.ObjectOf(in.gr, in.down)) {
		// Selected by a wildcard only: passed over quietly, as the apiserver's own objects are.
		klog.FromContext(ctx).V(logging.Skip).Info("Not upsyncing what the edge keeps to itself", "reason", in.withheld)
		c.withheld.Clear(in.key)
		return gate.Pass
	}
	c.withheld.Report(ctx, in.key, "not upsynced: "+in.withheld)
	return gate.Pass
}

var secrets = schema.GroupResource{Resource: "secrets"}

// refusedRead says why the edge keeps obj (of gr) to itself; "" when it does not.
func (c *Controller) refusedRead(gr schema.GroupResource, obj *unstructured.Unstructured) string {
	ns := obj.GetNamespace()
	if gr == wellknown.Namespaces.GroupResource() {
		ns = obj.GetName()
	}
	switch {
	case c.cfg.ProtectedNamespaces.Has(ns):
		return fmt.Sprintf("namespace %s is protected at the edge: nothing in it is read for the mailbox (the syncer's --protected-namespaces)", ns)
	case gr != secrets:
		return ""
	case secretType(obj) == string(corev1.SecretTypeServiceAccountToken):
		return "a ServiceAccount token Secret is never upsynced: it is an identity at the edge"
	case !c.cfg.Secrets:
		return "Secrets are upsynced only where the edge owner lets them be (the syncer's --upsync-secrets)"
	}
	return ""
}

// admit takes a key through the gates, counting the one that stops it.
func (c *Controller) admit(ctx context.Context, in *input) gate.Verdict {
	return c.gates.Admit(ctx, in, func(name string, v gate.Verdict) {
		c.cfg.Metrics.GateVerdicts.WithLabelValues(metrics.Upsync, name, v.Kind()).Inc()
	})
}

// secretType is a Secret's type.
func secretType(obj *unstructured.Unstructured) string {
	t, _, _ := unstructured.NestedString(obj.Object, "type")
	return t
}
