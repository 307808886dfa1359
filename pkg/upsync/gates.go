package upsync

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/gate"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// input is what upsync's gates look at: a key's edge object (nil: none) and the time.
type input struct {
	down *unstructured.Unstructured
	now  time.Time
}

// gates are the per-object policies of upsync, in order.
var gates = gate.Chain[*input]{
	// A technician paused the edge object: neither its copy nor its copy's deletion is written, until
	// the pause ends.
	{Name: "pause", Admit: func(ctx context.Context, in *input) gate.Verdict {
		p := mapping.PauseOf(in.down)
		if !p.Active(in.now) {
			return gate.Pass
		}
		klog.FromContext(ctx).V(logging.Skip).Info("Paused at the edge: not writing its copy upstream", "until", p.Until.UTC().Format(time.RFC3339))
		return gate.Stop(mapping.ResumeAfter(p.Until, in.now), nil)
	}},
}

// admit takes a key through the gates, counting the one that stops it.
func (c *Controller) admit(ctx context.Context, in *input) gate.Verdict {
	return gates.Admit(ctx, in, func(name string, v gate.Verdict) {
		c.cfg.Metrics.GateVerdicts.WithLabelValues(metrics.Upsync, name, v.Kind()).Inc()
	})
}
