package conditions

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/mapping"
)

// current tells whether cfg, as the upstream cache holds it, already shows what body (a StatusApply
// of target at now) would write, and its heartbeat is younger than refresh: then the write is
// skipped, so that an idle syncer writes its status (and reads it back through its watch) once per
// refresh rather than once per beat. A change of any condition, of the report, or a status someone
// else wiped is written at the next beat.
func current(cfg, body *unstructured.Unstructured, target string, now time.Time, refresh time.Duration) bool {
	have, _, _ := unstructured.NestedMap(cfg.Object, "status")
	want, _, _ := unstructured.NestedMap(body.Object, "status")
	if have == nil || want == nil {
		return false
	}
	heartbeat, _, _ := unstructured.NestedString(have, "lastSyncerHeartbeatTime")
	if target != "" {
		heartbeat = ""
		if e, ok := entryOf(have, target); ok {
			heartbeat, _, _ = unstructured.NestedString(e, "lastSyncerHeartbeatTime")
			wantEntry, _ := entryOf(want, target)
			if !mapping.Subset(withoutHeartbeat(wantEntry), e) {
				return false
			}
		}
	}
	at, err := time.Parse(time.RFC3339, heartbeat)
	if err != nil || now.Sub(at) >= refresh {
		return false
	}
	wantConds, _, _ := unstructured.NestedSlice(want, "conditions")
	haveConds, _, _ := unstructured.NestedSlice(have, "conditions")
	return mapping.Subset(wantConds, haveConds)
}

// entryOf is status.syncTargets' entry of target.
func entryOf(status map[string]interface{}, target string) (map[string]interface{}, bool) {
	entries, _, _ := unstructured.NestedSlice(status, "syncTargets")
	for _, e := range entries {
		if m, ok := e.(map[string]interface{}); ok && m["name"] == target {
			return m, true
		}
	}
	return nil, false
}

// withoutHeartbeat is a copy of an entry without its heartbeat time.
func withoutHeartbeat(entry map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(entry))
	for k, v := range entry {
		if k != "lastSyncerHeartbeatTime" {
			out[k] = v
		}
	}
	return out
}
