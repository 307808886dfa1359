package bootstrap

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The syncer container's default requests and limits (--requests-cpu, --requests-memory,
// --limits-cpu, --limits-memory). No CPU limit, so that a resync is not throttled.
const (
	DefaultRequestsCPU    = "100m"
	DefaultRequestsMemory = "128Mi"
	DefaultLimitsCPU      = ""
	DefaultLimitsMemory   = "1Gi"
)

// Resources are the syncer container's requests and limits as the flags give them: a quantity
// each ("100m", "128Mi"), or empty to leave that entry out of the Deployment.
type Resources struct {
	RequestsCPU, RequestsMemory, LimitsCPU, LimitsMemory string
}

// DefaultResources are syncer-gen's defaults.
func DefaultResources() Resources {
	return Resources{RequestsCPU: DefaultRequestsCPU, RequestsMemory: DefaultRequestsMemory,
		LimitsCPU: DefaultLimitsCPU, LimitsMemory: DefaultLimitsMemory}
}

// Requirements parses the quantities. The error names every flag whose value is not a quantity,
// is negative, or requests more than its limit (the apiserver would refuse the Deployment).
func (r Resources) Requirements() (corev1.ResourceRequirements, error) {
	var req corev1.ResourceRequirements
	var errs []string
	for _, e := range []struct {
		flag, value string
		list        *corev1.ResourceList
		name        corev1.ResourceName
	}{
		{"--requests-cpu", r.RequestsCPU, &req.Requests, corev1.ResourceCPU},
		{"--requests-memory", r.RequestsMemory, &req.Requests, corev1.ResourceMemory},
		{"--limits-cpu", r.LimitsCPU, &req.Limits, corev1.ResourceCPU},
		{"--limits-memory", r.LimitsMemory, &req.Limits, corev1.ResourceMemory},
	} {
		if e.value == "" {
			continue
		}
		q, err := resource.ParseQuantity(e.value)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s %q is not a quantity (examples: 100m, 0.5, 128Mi, 1Gi)", e.flag, e.value))
			continue
		case q.Sign() < 0:
			errs = append(errs, fmt.Sprintf("%s %q must not be negative", e.flag, e.value))
			continue
		}
		if *e.list == nil {
			*e.list = corev1.ResourceList{}
		}
		(*e.list)[e.name] = q
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		request, hasRequest := req.Requests[name]
		limit, hasLimit := req.Limits[name]
		if hasRequest && hasLimit && request.Cmp(limit) > 0 {
			errs = append(errs, fmt.Sprintf("--requests-%s %s exceeds --limits-%s %s", name, request.String(), name, limit.String()))
		}
	}
	if len(errs) > 0 {
		return corev1.ResourceRequirements{}, errors.New(strings.Join(errs, "; "))
	}
	return req, nil
}

// defaultRequirements are DefaultResources parsed.
func defaultRequirements() corev1.ResourceRequirements {
	req, err := DefaultResources().Requirements()
	if err != nil {
		panic(err) // the constants above are quantities
	}
	return req
}
