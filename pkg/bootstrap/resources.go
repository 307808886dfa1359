package bootstrap

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The syncer container's default CPU request and limit (--requests-cpu, --limits-cpu). No CPU limit,
// so that a resync is not throttled. The memory defaults derive from --expected-objects (MemoryFor).
const (
	DefaultRequestsCPU = "100m"
	DefaultLimitsCPU   = ""
)

// The syncer's measured memory cost (docs/performance.md, the memory scenario: ConfigMaps
// of about 1.2 KiB synced at the default flags, from 1,000 to 100,000 objects).
const (
	// MemoryBase is the RSS of a syncer with nothing selected: measured 52.7–53.2 MiB, rounded up
	// for the discovery documents of a cluster with many more APIs than the bench's.
	MemoryBase int64 = 64 << 20
	// MemoryPerObject is the RSS per synced object: measured 7.1–7.9 KB from 10,000 to 100,000
	// objects (the upstream object as JSON, a slim edge copy, with the headroom Go's garbage
	// collector leaves), rounded up.
	MemoryPerObject int64 = 8 << 10
	// DefaultExpectedObjects is --expected-objects' default.
	DefaultExpectedObjects = 10000

	// memoryQuantum is what memory requests and limits are rounded up to a multiple of.
	memoryQuantum int64 = 16 << 20
	// minMemoryLimit is the lowest limit MemoryFor gives: below it a start-up (discovery, the first
	// LISTs) has no room for anything the measurements did not see.
	minMemoryLimit int64 = 256 << 20
)

// MemoryFor is the memory request and limit of a syncer expected to hold objects synced objects
// (objects of the selected resources upstream, in every namespace of a shared upstream, since its
// upstream informers are cluster-wide): the request is what they were measured to cost,
// MemoryBase + objects × MemoryPerObject; the limit what twice as many cost, MemoryBase + 2 ×
// objects × MemoryPerObject, and at least 256Mi: room for a relist (which holds a second copy of a
// resource's objects while it lasts), an initial sync's backlog, and objects larger than the
// measured 1.2 KiB. Both are rounded up to a multiple of 16Mi. objects must not be negative.
func MemoryFor(objects int) (request, limit resource.Quantity) {
	roundUp := func(b int64) int64 { return (b + memoryQuantum - 1) / memoryQuantum * memoryQuantum }
	n := int64(objects)
	request = *resource.NewQuantity(roundUp(MemoryBase+n*MemoryPerObject), resource.BinarySI)
	limit = *resource.NewQuantity(max(minMemoryLimit, roundUp(MemoryBase+2*n*MemoryPerObject)), resource.BinarySI)
	return request, limit
}

// Resources are the syncer container's requests and limits as the flags give them: a quantity
// each ("100m", "128Mi"), or empty to leave that entry out of the Deployment.
type Resources struct {
	RequestsCPU, RequestsMemory, LimitsCPU, LimitsMemory string
}

// ResourcesFor are syncer-gen's defaults for a syncer expected to hold objects synced objects: the
// CPU defaults and the memory of MemoryFor.
func ResourcesFor(objects int) Resources {
	request, limit := MemoryFor(objects)
	return Resources{RequestsCPU: DefaultRequestsCPU, RequestsMemory: request.String(),
		LimitsCPU: DefaultLimitsCPU, LimitsMemory: limit.String()}
}

// MaxObjectsFor is the syncer's --max-objects-per-resource for a syncer expected to hold objects
// synced objects: twice that many (all MemoryFor's limit has room for), at least 1,000. A mailbox
// that makes more objects of one resource then holds that resource up rather than runs the syncer
// out of memory; several resources near the limit can still exhaust it.
func MaxObjectsFor(objects int) int { return max(2*objects, 1000) }

// DefaultResources are syncer-gen's defaults: those for DefaultExpectedObjects.
func DefaultResources() Resources { return ResourcesFor(DefaultExpectedObjects) }

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
