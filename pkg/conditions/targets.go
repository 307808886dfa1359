package conditions

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// targetEntry is one status.syncTargets entry as read from a cached config.
type targetEntry struct {
	name       string
	heartbeat  time.Time
	conditions []metav1.Condition
}

// readConditions decodes a list of conditions (as a config's status holds them).
func readConditions(raw []interface{}) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range raw {
		var cond metav1.Condition
		if m, ok := c.(map[string]interface{}); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
			out = append(out, cond)
		}
	}
	return out
}

// targetEntries are the status.syncTargets entries of a cached config, by sync target.
func targetEntries(cfg *unstructured.Unstructured) map[string]targetEntry {
	raw, _, _ := unstructured.NestedSlice(cfg.Object, "status", "syncTargets")
	out := make(map[string]targetEntry, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]interface{})
		if !ok {
			continue
		}
		e := targetEntry{}
		e.name, _, _ = unstructured.NestedString(m, "name")
		if hb, _, _ := unstructured.NestedString(m, "lastSyncerHeartbeatTime"); hb != "" {
			e.heartbeat, _ = time.Parse(time.RFC3339, hb)
		}
		list, _, _ := unstructured.NestedSlice(m, "conditions")
		e.conditions = readConditions(list)
		if e.name != "" {
			out[e.name] = e
		}
	}
	return out
}

// withTransitions is conds with each one's lastTransitionTime kept from existing while its status
// holds, now otherwise.
func withTransitions(conds, existing []metav1.Condition, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(conds))
	for _, c := range conds {
		merged := append([]metav1.Condition(nil), existing...)
		c.LastTransitionTime = now
		meta.SetStatusCondition(&merged, c)
		out = append(out, *meta.FindStatusCondition(merged, c.Type))
	}
	return out
}

// summed are the config's own conditions when the sync targets of others (their entries, recent
// ones only) read it too: each condition healthy when it is for every target, else the first
// target's (by name) for which it is not, its message naming that target. Without others, ours.
func summed(target string, ours []metav1.Condition, others []targetEntry) []metav1.Condition {
	if len(others) == 0 {
		return ours
	}
	all := append([]targetEntry{{name: target, conditions: ours}}, others...)
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	out := make([]metav1.Condition, 0, len(ours))
	for _, c := range ours {
		sum := c
		sum.Message = fmt.Sprintf("%s for sync targets %s.", c.Type, names(all))
		for _, e := range all {
			if tc := meta.FindStatusCondition(e.conditions, c.Type); tc != nil && !healthy(*tc) {
				sum.Status, sum.Reason = tc.Status, tc.Reason
				sum.Message = capLen(fmt.Sprintf("sync target %s: %s", e.name, tc.Message), MaxMessageLen)
				break
			}
		}
		out = append(out, sum)
	}
	return out
}

func names(entries []targetEntry) string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.name
	}
	return strings.Join(out, ", ")
}
