package downsync

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/selection"
)

// The per-object policies of downsync, in the order they apply. process gathers once what both
// caches hold for a key (gather), takes it through keyGates, then either through writeGates and the
// write steps (framework.Write, as downWrite) or through deleteGates and the deletion. Each gate looks
// at what was gathered and says go on, or stop: nothing more is done for the key now, and it is
// looked at again after a while (a verdict's after), on the next event that concerns it, or with
// backoff (err). The gates before the mapping step may shape what is written (signature, retain);
// those after it see the object to write (desired), as admission's mutating plugins come before its
// validating ones. A new per-object policy is a gate and its line in one of these lists, where it
// belongs in the order. Report-only mode is not a gate: it chooses the executor (write, delete), a
// dry run that reports what it would do instead of doing it.

// gate is one per-object policy.
type gate struct {
	name  string
	admit func(c *Controller, ctx context.Context, in *input) verdict
}

// verdict is what a gate says of a key: go on (the zero verdict), or stop, to be looked at again
// after a while (after > 0), with backoff (err), or when an event brings the key back.
type verdict struct {
	stop  bool
	after time.Duration
	err   error
}

var goOn = verdict{}

// stopHere ends the key's processing for now.
func stopHere(after time.Duration, err error) verdict {
	return verdict{stop: true, after: after, err: err}
}

// keyGates apply to every key, whether its object is wanted at the edge or not.
var keyGates = []gate{
	// First: a pause (on the upstream object, the edge copy or the configs) holds everything, the
	// deletion of an edge copy too.
	{"pause", (*Controller).pauseGate},
	// An object streamed in before its upstream cache synced is only ever written: anything else (a
	// delete, the copy a rename replaces) waits for the complete cache, which enqueues the key again.
	{"early", (*Controller).earlyGate},
}

// writeGates apply to an object wanted at the edge, before the write steps.
var writeGates = []gate{
	// The copy a conversion now renames goes before the renamed one is written.
	{"renamed", (*Controller).renamedGate},
	// A cheap look at the edge's Namespaces before anything is read or mapped.
	{"namespace", (*Controller).namespaceGate},
	// Before the signature: a stub the cache holds instead of a too large object has nothing to verify.
	{"size", (*Controller).sizeGate},
	// What was signed is what is written, and what the entries below are matched against.
	{"signature", (*Controller).signatureGate},
	// The fields the edge owns (retainFields; replicas under an autoscaler) are left out of what is written.
	{"retain", (*Controller).retainGate},
	// The object to write (desired).
	{"mapping", (*Controller).mappingGate},
	// Under drift policy Report, an edge change left in place holds the upstream changes.
	{"drift", (*Controller).driftGate},
}

// deleteGates apply to an object no longer wanted at the edge, before its edge copy is deleted.
var deleteGates = []gate{
	// An API missing upstream, or a resource held for its count: hold, never delete on a guess.
	{"served", (*Controller).servedGate},
	// Not wanted: nothing of its writes is verified, refused or reported any more.
	{"unwanted", (*Controller).unwantedGate},
	// No edge copy, not the syncer's, or kept by its marks (create-only, kept on delete).
	{"kept", (*Controller).keptGate},
	// Last: the deletion breaker counts only the deletions that would be made now (not those report-only
	// mode reports).
	{"breaker", (*Controller).breakerGate},
}

// input is what was gathered once for a key, and what the gates made of it.
type input struct {
	key  framework.Key
	r    Resource
	up   *unstructured.Unstructured // the upstream object (nil: none); the signed one after signature
	down *unstructured.Unstructured // the edge copy as the cache holds it (nil: none)
	sel  selection.Object           // up as the selection matches it
	// policy is what the configs selecting up say of it (of the signed object after signature), at now.
	policy selection.Policy
	now    time.Time
	// selected: up is there, not being deleted, and selected; wanted: and to be written at the edge
	// (not an upsynced copy, nor the apiserver's own object unless named).
	selected, wanted bool
	markedUpsynced   bool // selected, and a copy upsync wrote (or that carries its mark)
	early            bool // up streamed in before its cache synced
	// Shaped by the write gates.
	opts    mapping.Options
	desired *unstructured.Unstructured
	// reportOnly: what would be written or deleted is reported, not done (the syncer runs report-only,
	// or only report-only configs select the object): the executor is a dry run.
	reportOnly bool
}

// admit takes a key through gates in order, and returns the first verdict that stops it, counted in
// kubestellar_syncer_gate_verdicts_total.
func (c *Controller) admit(ctx context.Context, in *input, gates []gate) verdict {
	for _, g := range gates {
		if v := g.admit(c, ctx, in); v.stop {
			c.cfg.Metrics.GateVerdicts.WithLabelValues(metrics.Downsync, g.name, v.kind()).Inc()
			return v
		}
	}
	return goOn
}

// kind names a verdict that stops a key, as the metric does.
func (v verdict) kind() string {
	switch {
	case v.err != nil:
		return "error"
	case v.after > 0:
		return "wait"
	}
	return "hold"
}
