package mapping

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ReportAppliedAnnotation set to "true" on an upstream object asks each sync target to say on it
// which of its versions the edge runs (AppliedPrefix), so that a control-plane client can wait for
// it: for objects whose status does not say (ConfigMaps, Secrets, kinds without a status
// subresource, objects whose status is not returned).
const ReportAppliedAnnotation = "edge.kubestellar.io/report-applied"

// UpstreamResourceVersionAnnotation, on an edge copy of an object that asks for it
// (ReportAppliedAnnotation), is the upstream resourceVersion whose content the syncer last applied,
// written in the same request as that content. It is not part of the content: a new upstream
// resourceVersion with the same content (an annotation the syncer writes upstream, say) writes nothing
// at the edge.
const UpstreamResourceVersionAnnotation = "edge.kubestellar.io/upstream-resource-version"

// AppliedPrefix starts the key of the per-target signal of which version of an upstream object a
// sync target's edge runs: label applied.edge.kubestellar.io/<sync target>, its value the upstream
// resourceVersion whose content the edge copy carries (UpstreamResourceVersionAnnotation). Written by
// status return for objects that ask (ReportAppliedAnnotation), one merge patch per change.
const AppliedPrefix = "applied" + signalDomain + "/"

// AppliedLabel is a sync target's AppliedPrefix label key; "" when the target's name cannot be a
// label name.
func AppliedLabel(syncTarget string) string { return signalKey(AppliedPrefix, syncTarget) }

// ReportsApplied tells whether an upstream object asks to be told which of its versions the edge
// runs.
func ReportsApplied(up *unstructured.Unstructured) bool {
	return strings.EqualFold(up.GetAnnotations()[ReportAppliedAnnotation], "true")
}

// AppliedVersion is the version of its upstream object an edge copy carries, as AppliedPrefix's
// value says it: the resourceVersion it recorded; false when it records none or it cannot be a label
// value.
func AppliedVersion(down *unstructured.Unstructured) (string, bool) {
	v := down.GetAnnotations()[UpstreamResourceVersionAnnotation]
	return v, v != "" && len(validation.IsValidLabelValue(v)) == 0
}

// withoutAnnotation is u without the annotation key: u itself when it has none, else a copy sharing
// all but its metadata and annotations.
func withoutAnnotation(u *unstructured.Unstructured, key string) *unstructured.Unstructured {
	meta, _ := u.Object["metadata"].(map[string]interface{})
	annotations, _ := meta["annotations"].(map[string]interface{})
	if _, ok := annotations[key]; !ok {
		return u
	}
	out := &unstructured.Unstructured{Object: make(map[string]interface{}, len(u.Object))}
	for k, v := range u.Object {
		out.Object[k] = v
	}
	m := make(map[string]interface{}, len(meta))
	for k, v := range meta {
		m[k] = v
	}
	a := make(map[string]interface{}, len(annotations))
	for k, v := range annotations {
		if k != key {
			a[k] = v
		}
	}
	m["annotations"] = a
	out.Object["metadata"] = m
	return out
}
