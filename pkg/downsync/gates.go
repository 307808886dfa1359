package downsync

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/gate"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/selection"
)

// The per-object policies of downsync, in the order they apply (newChains). process gathers once what
// both caches hold for a key (gather), takes it through the key gates, then either through the write
// gates and the write steps (framework.Write, as downWrite) or through the delete gates and the
// deletion. Each gate looks at what was gathered and says go on, or stop (package gate): nothing more
// is done for the key now, and it is looked at again after a while, on the next event that concerns
// it, or with backoff. The gates before the mapping step may shape what is written (signature,
// retain); those after it see the object to write (desired), as admission's mutating plugins come
// before its validating ones. A new per-object policy is a gate and its line in one of these chains,
// where it belongs in the order. Report-only mode is not a gate: it chooses the executor (write,
// delete), a dry run that reports what it would do instead of doing it.

// chains are downsync's gates, in the order they apply: key to every key, write to an object wanted
// at the edge, delete to one no longer wanted.
type chains struct {
	key, write, delete gate.Chain[*input]
}

// newChains lists the controller's gates (its methods), in order, with why each sits where it does.
func (c *Controller) newChains() chains {
	return chains{
		key: gate.Chain[*input]{
			// First: while the edge owner's fence is not proven in force, nothing is written at the edge
			// (failing closed), nor deleted.
			{Name: "fence", Admit: c.fenceGate},
			// A pause (on the upstream object, the edge copy or the configs) holds everything, the
			// deletion of an edge copy too.
			{Name: "pause", Admit: c.pauseGate},
			// An object streamed in before its upstream cache synced is only ever written: anything else (a
			// delete, the copy a rename replaces) waits for the complete cache, which enqueues the key again.
			{Name: "early", Admit: c.earlyGate},
		},
		write: gate.Chain[*input]{
			// The copy a conversion now renames goes (a deletion the breaker counts) before the renamed one
			// is written.
			{Name: "renamed", Admit: c.renamedGate},
			// A cheap look at the edge's Namespaces before anything is read or mapped.
			{Name: "namespace", Admit: c.namespaceGate},
			// Before the signature: a stub the cache holds instead of a too large object has nothing to verify.
			{Name: "size", Admit: c.sizeGate},
			// What was signed is what is written, and what the configs' policy is read for.
			{Name: "signature", Admit: c.signatureGate},
			// The fields the edge owns (retainFields; replicas under an autoscaler) are left out of what is written.
			{Name: "retain", Admit: c.retainGate},
			// The object to write (desired).
			{Name: "mapping", Admit: c.mappingGate},
			// Under drift policy Report, an edge change left in place holds the upstream changes.
			{Name: "drift", Admit: c.driftGate},
			// On what would be written: a rewrite that empties the edge copy (replicas 0, data
			// emptied) is counted like a deletion; any other drops a held deletion (wanted again).
			{Name: "emptying", Admit: c.emptyingGate},
			// Then what the copies at the edge would hold in all, once the write is sure to be made.
			{Name: "stored", Admit: c.storedGate},
		},
		delete: gate.Chain[*input]{
			// An API missing upstream, or a resource held for its count: hold, never delete on a guess.
			{Name: "served", Admit: c.servedGate},
			// Not wanted: nothing of its writes is verified, refused or reported any more.
			{Name: "unwanted", Admit: c.unwantedGate},
			// No edge copy, not the syncer's, or kept by its marks (create-only, kept on delete).
			{Name: "kept", Admit: c.keptGate},
			// A Namespace or CRD goes only once nothing but the syncer's own is in it, after them: its
			// deletion would take everything in it.
			{Name: "contents", Admit: c.contentsGate},
			// Last: the deletion breaker counts only the deletions that would be made now (not those
			// report-only mode reports), each weighing what it takes with it.
			{Name: "breaker", Admit: c.breakerGate},
		},
	}
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

// admit takes a key through a chain, counting the gate that stops it in
// kubestellar_syncer_gate_verdicts_total.
func (c *Controller) admit(ctx context.Context, in *input, ch gate.Chain[*input]) gate.Verdict {
	return ch.Admit(ctx, in, func(name string, v gate.Verdict) {
		c.cfg.Metrics.GateVerdicts.WithLabelValues(metrics.Downsync, name, v.Kind()).Inc()
	})
}
