// Package gate is the shape of the syncer's per-object policies: a Gate looks at what a controller
// gathered once for a key and says go on, or stop (hold until an event brings the key back, wait a
// while, or fail and be retried); a Chain is a controller's gates in the order they apply, and Admit
// takes a key through it, counting the gate that stops it. Each controller (downsync, status return,
// upsync) lists its own chains, of the gates that apply to it, in one place; the policies themselves
// live with the controllers and in pkg/mapping.
//
// As in Kubernetes admission (a chain of named plugins) and cert-manager's policy chains, a new
// per-object policy is a gate and its line in a chain, where it belongs in the order.
package gate

import (
	"context"
	"time"
)

// Verdict is what a gate says of a key: go on (the zero Verdict), or stop, to be looked at again
// after a while (After > 0), with backoff (Err), or when an event brings the key back.
type Verdict struct {
	Stop  bool
	After time.Duration
	Err   error
}

// Pass lets the key go on to the next gate.
var Pass = Verdict{}

// Stop ends the key's processing for now.
func Stop(after time.Duration, err error) Verdict { return Verdict{Stop: true, After: after, Err: err} }

// Hold ends the key's processing until an event brings it back.
var Hold = Verdict{Stop: true}

// Kind names a verdict that stops a key: "error", "wait" or "hold".
func (v Verdict) Kind() string {
	switch {
	case v.Err != nil:
		return "error"
	case v.After > 0:
		return "wait"
	}
	return "hold"
}

// Gate is one named per-object policy over In, what a controller gathered for a key.
type Gate[In any] struct {
	// Name names the gate in metrics (kubestellar_syncer_gate_verdicts_total{gate}) and docs.
	Name  string
	Admit func(ctx context.Context, in In) Verdict
}

// Chain is gates in the order they apply.
type Chain[In any] []Gate[In]

// Admit takes in through the gates in order and returns the first verdict that stops it (Pass when
// none does), telling stopped which gate stopped it and how.
func (ch Chain[In]) Admit(ctx context.Context, in In, stopped func(gate string, v Verdict)) Verdict {
	for _, g := range ch {
		if v := g.Admit(ctx, in); v.Stop {
			if stopped != nil {
				stopped(g.Name, v)
			}
			return v
		}
	}
	return Pass
}

// Names are the gates' names, in order.
func (ch Chain[In]) Names() []string {
	out := make([]string, len(ch))
	for i, g := range ch {
		out[i] = g.Name
	}
	return out
}
