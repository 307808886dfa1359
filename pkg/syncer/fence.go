package syncer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/selection"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// fenceOut drops the selected resources no fence at the edge can hold (wellknown.AdmissionPolicy,
// upstream or, through a conversion, at the edge) and returns a problem for each: a syncer that
// writes through an executor never writes them.
func fenceOut(resources map[schema.GroupResource]*selection.Resource) []problem.Problem {
	var problems []problem.Problem
	for gr, r := range resources {
		if !wellknown.AdmissionPolicy(gr) && !(r.ServedDownstream() && wellknown.AdmissionPolicy(r.Downstream.GVR.GroupResource())) {
			continue
		}
		delete(resources, gr)
		problems = append(problems, problem.Problem{Kind: problem.OutsideFence, Resource: gr, Reason: fmt.Sprintf(
			"resource %q is outside the edge owner's fence: Kubernetes exempts admission policies from admission control, so the syncer does not write them through its executor (syncer-gen --fence=false lifts this)", gr)})
	}
	return problems
}
