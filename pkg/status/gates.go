package status

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/gate"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// input is what status return's gates look at: a key's upstream object, read once it has something
// to say of it, and the time.
type input struct {
	up  *unstructured.Unstructured
	now time.Time
}

// gates are the per-object policies of status return that apply once the upstream object is read,
// in order (downsync's pause, told by Config.Pauses, and the labels that say it, come before: paused).
var gates = gate.Chain[*input]{
	// The upstream object's own pause holds before downsync has looked at it (after a restart).
	{Name: "pause", Admit: func(_ context.Context, in *input) gate.Verdict {
		if mapping.PauseOf(in.up).Active(in.now) {
			return gate.Hold // downsync tells when the pause ends
		}
		return gate.Pass
	}},
	// An object held as its metadata only (over --max-object-bytes) is never written back from that;
	// downsync says why.
	{Name: "size", Admit: func(_ context.Context, in *input) gate.Verdict {
		if _, stub := mapping.TooLarge(in.up); stub {
			return gate.Hold
		}
		return gate.Pass
	}},
}

// admit takes a key through the gates, counting the one that stops it.
func (c *Controller) admit(ctx context.Context, in *input) gate.Verdict {
	return gates.Admit(ctx, in, func(name string, v gate.Verdict) {
		c.cfg.Metrics.GateVerdicts.WithLabelValues(metrics.Status, name, v.Kind()).Inc()
	})
}
