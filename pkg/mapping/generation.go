package mapping

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// UpstreamGenerationAnnotation, on an edge object, is the metadata.generation of the upstream object
// whose content the syncer last applied to it. The edge object's own generation counts the edge's
// changes, not the upstream's; with this annotation status return says which upstream generation the
// edge has observed (ReturnedStatus).
const UpstreamGenerationAnnotation = "edge.kubestellar.io/upstream-generation"

// ReturnedStatus is the .status to write on the upstream object up for its edge copy down: the edge's
// status with every generation in it — status.observedGeneration and each condition's
// observedGeneration — in upstream terms, so that `kubectl rollout status`, `kubectl wait` and
// kstatus upstream read it as they would in one cluster. nil when down has no status. For resources
// whose upstream serves a status subresource, the ones whose copies record it (Options.Generation).
//
// The edge copy records the upstream generation it carries (UpstreamGenerationAnnotation), written
// in the same request as the content, so an edge generation at or past the edge copy's own is that
// upstream generation. An older one (the edge has not observed the latest apply yet) is not known
// here: up keeps the value it had, which the edge had observed, if lower, or the field is left out
// (never a generation the edge has not observed). An upstream object without a generation (its
// resource has none) gets the edge's values as they are.
func ReturnedStatus(down, up *unstructured.Unstructured) interface{} {
	status, ok := down.Object["status"]
	if !ok {
		return nil
	}
	status = runtime.DeepCopyJSONValue(status)
	m, ok := status.(map[string]interface{})
	if !ok || up.GetGeneration() == 0 {
		return status
	}
	t := generations{edge: down.GetGeneration(), upstream: up.GetGeneration()}
	if g, ok := AppliedGeneration(down); ok && t.edge > 0 {
		t.applied = g
	}
	upStatus, _ := up.Object["status"].(map[string]interface{})
	t.translate(m, upStatus)
	if conditions, ok := m["conditions"].([]interface{}); ok {
		prev := conditionsByType(upStatus)
		for _, c := range conditions {
			if cm, ok := c.(map[string]interface{}); ok {
				t.translate(cm, prev[cm["type"]])
			}
		}
	}
	return m
}

// AppliedGeneration is the upstream generation an edge copy carries (UpstreamGenerationAnnotation),
// if it says.
func AppliedGeneration(down *unstructured.Unstructured) (int64, bool) {
	g, err := strconv.ParseInt(down.GetAnnotations()[UpstreamGenerationAnnotation], 10, 64)
	return g, err == nil && g > 0
}

// generations translates an edge object's observed generations into its upstream object's.
type generations struct {
	// edge is the edge copy's metadata.generation; applied the upstream generation it carries (0:
	// unknown, the copy was written without the annotation); upstream the upstream object's.
	edge, applied, upstream int64
}

// translate rewrites obj's observedGeneration (the edge's) in upstream terms; prev is the matching
// part of the upstream status (the status, or the condition of the same type), nil when none.
func (t generations) translate(obj, prev map[string]interface{}) {
	g, ok := number(obj["observedGeneration"])
	if !ok {
		return
	}
	if t.applied > 0 && int64(g) >= t.edge {
		obj["observedGeneration"] = t.applied
		return
	}
	// The edge has not observed the latest apply, or the copy does not say what it carries: the
	// upstream's own value, which it had observed, as long as it is below what the copy carries.
	if p, ok := number(prev["observedGeneration"]); ok && p > 0 && int64(p) <= t.upstream && (t.applied == 0 || int64(p) < t.applied) {
		obj["observedGeneration"] = int64(p)
		return
	}
	delete(obj, "observedGeneration")
}

// conditionsByType indexes the conditions of a status by their type.
func conditionsByType(status map[string]interface{}) map[interface{}]map[string]interface{} {
	list, _ := status["conditions"].([]interface{})
	out := make(map[interface{}]map[string]interface{}, len(list))
	for _, c := range list {
		if cm, ok := c.(map[string]interface{}); ok {
			out[cm["type"]] = cm
		}
	}
	return out
}

// RefusedStatus is status (ReturnedStatus's) when the edge refuses generation of the upstream
// object up for good, why saying so: the status observes that generation, and a condition tells
// that it will not progress, as the edge's own controllers would say it, so that `kubectl rollout
// status` upstream fails with the message and kstatus reads Failed instead of waiting for ever. A
// Deployment gets Progressing False with reason ProgressDeadlineExceeded (the only reason on which
// kubectl rollout status fails), any other kind Stalled True with reason EdgeRefused (kstatus's
// convention); the rest of the status stays the edge's. The condition keeps the transition time of
// the same condition upstream while its status is the same (a Deployment's update time while its
// message is), so that writing it again changes nothing; now stamps a new one.
func RefusedStatus(status interface{}, up *unstructured.Unstructured, generation int64, why string, now time.Time) interface{} {
	m, ok := status.(map[string]interface{})
	if !ok {
		m = map[string]interface{}{}
	}
	m["observedGeneration"] = generation
	cond := map[string]interface{}{"type": "Stalled", "status": "True", "reason": "EdgeRefused", "message": why,
		"observedGeneration": generation}
	gk := up.GroupVersionKind().GroupKind()
	if gk.Group == "apps" && gk.Kind == "Deployment" {
		cond = map[string]interface{}{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": why}
	}
	setCondition(m, up, cond, now)
	return m
}

// setCondition puts cond in status m's conditions (replacing one of its type), with the transition
// time of the same condition upstream (in up's status) while its status is the same (a Deployment's
// update time while its message is), so that writing it again changes nothing; now stamps a new one.
func setCondition(m map[string]interface{}, up *unstructured.Unstructured, cond map[string]interface{}, now time.Time) {
	upStatus, _ := up.Object["status"].(map[string]interface{})
	stamp := now.UTC().Format(time.RFC3339)
	prev := conditionsByType(upStatus)[cond["type"]]
	keep := func(field string, same bool) {
		if v, ok := prev[field]; ok && same {
			cond[field] = v
		} else {
			cond[field] = stamp
		}
	}
	keep("lastTransitionTime", prev != nil && prev["status"] == cond["status"])
	if cond["type"] == "Progressing" { // metav1.Condition has no update time
		keep("lastUpdateTime", prev != nil && prev["status"] == cond["status"] && prev["message"] == cond["message"])
	}
	conditions, _ := m["conditions"].([]interface{})
	replaced := false
	for i, c := range conditions {
		if cm, ok := c.(map[string]interface{}); ok && cm["type"] == cond["type"] {
			conditions[i], replaced = cond, true
		}
	}
	if !replaced {
		conditions = append(conditions, cond)
	}
	m["conditions"] = conditions
}

// RefusalPrefix starts the message of the condition RefusedStatus writes for a sync target.
func RefusalPrefix(syncTarget string) string {
	return "sync target " + syncTarget + " refuses generation "
}

// WithoutRefusal is up's status without the refusal condition RefusedStatus wrote for a sync target
// (its message starts with RefusalPrefix) and without the observedGeneration that went with it, for
// when the refusal is over but the edge copy has no status of its own to return; false when up's
// status carries no such condition (then nothing is copied).
func WithoutRefusal(up *unstructured.Unstructured, syncTarget string) (map[string]interface{}, bool) {
	prefix := RefusalPrefix(syncTarget)
	said := func(c interface{}) bool {
		cm, _ := c.(map[string]interface{})
		msg, _ := cm["message"].(string)
		return strings.HasPrefix(msg, prefix)
	}
	upStatus, _ := up.Object["status"].(map[string]interface{})
	if conditions, _ := upStatus["conditions"].([]interface{}); !slices.ContainsFunc(conditions, said) {
		return nil, false
	}
	status := runtime.DeepCopyJSONValue(upStatus).(map[string]interface{})
	kept := slices.DeleteFunc(status["conditions"].([]interface{}), said)
	if len(kept) == 0 {
		delete(status, "conditions")
	} else {
		status["conditions"] = kept
	}
	delete(status, "observedGeneration")
	return status, true
}
