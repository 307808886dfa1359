package syncer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/selection"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// fenceOut drops the selected resources a fenced syncer does not write, and returns a problem for
// each that a SyncerConfig names (not one "*" expands to): those no fence at the edge can hold
// (wellknown.AdmissionPolicy, upstream or, through a conversion, at the edge), and those that act on
// the whole cluster (wellknown.Fenced) unless the edge owner allowed them.
func fenceOut(sel *selection.Selection, resources map[schema.GroupResource]*selection.Resource, allowed []string) []problem.Problem {
	var problems []problem.Problem
	for gr, r := range resources {
		down := gr
		if r.ServedDownstream() {
			down = r.Downstream.GVR.GroupResource()
		}
		var reason string
		switch {
		case wellknown.AdmissionPolicy(gr) || wellknown.AdmissionPolicy(down):
			reason = fmt.Sprintf("resource %q is outside the edge owner's fence: Kubernetes exempts admission policies from admission control, so the syncer does not write them through its executor (syncer-gen --fence=false lifts this)", gr)
		case wellknown.FencedUnless(down, allowed):
			reason = fmt.Sprintf("resource %q is outside the edge owner's fence: its objects act on the whole cluster; the edge owner may allow it (syncer-gen --fence-allow=%s)", gr, down)
		default:
			continue
		}
		delete(resources, gr)
		if sel.Names(gr, r.Upstream.Kind) {
			problems = append(problems, problem.Problem{Kind: problem.OutsideFence, Resource: gr, Reason: reason})
		}
	}
	return problems
}
