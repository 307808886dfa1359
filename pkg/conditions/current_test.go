package conditions

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCurrent: a beat whose status the cached config already shows, under a heartbeat younger than
// the refresh period, need not be written; a changed condition, a heartbeat as old as the period, a
// wiped status or another target's entry alone must be.
func TestCurrent(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	conds := []metav1.Condition{
		{Type: Ready, Status: metav1.ConditionTrue, Reason: "Syncing", Message: "fine"},
		{Type: ObjectsSynced, Status: metav1.ConditionTrue, Reason: "Synced", Message: "fine"},
	}
	written := func(target string, at time.Time) *unstructured.Unstructured {
		cfg := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncerConfig",
			"metadata": map[string]interface{}{"name": "c"}}}
		cfg.Object["status"] = StatusApply(cfg, target, conds, metav1.NewTime(at), time.Minute).Object["status"] // as the apiserver keeps it
		return cfg
	}
	for _, target := range []string{"florin", ""} {
		cfg := written(target, now.Add(-time.Minute))
		same := StatusApply(cfg, target, conds, metav1.NewTime(now), time.Minute)
		if !current(cfg, same, target, now, 5*time.Minute) {
			t.Errorf("target %q: the same status under a one-minute-old heartbeat is written again", target)
		}
		if current(cfg, same, target, now, time.Minute) {
			t.Errorf("target %q: a heartbeat as old as the refresh period is not refreshed", target)
		}
		changed := append([]metav1.Condition(nil), conds...)
		changed[1].Status, changed[1].Reason, changed[1].Message = metav1.ConditionFalse, "SyncFailures", "1 objects failing to sync"
		if current(cfg, StatusApply(cfg, target, changed, metav1.NewTime(now), time.Minute), target, now, 5*time.Minute) {
			t.Errorf("target %q: a changed condition is not written", target)
		}
		wiped := cfg.DeepCopy()
		delete(wiped.Object, "status")
		if current(wiped, same, target, now, 5*time.Minute) {
			t.Errorf("target %q: a wiped status is not written", target)
		}
	}
	other := written("lyon", now.Add(-time.Minute))
	if current(other, StatusApply(other, "florin", conds, metav1.NewTime(now), time.Minute), "florin", now, 5*time.Minute) {
		t.Error("a config with another target's entry only: this target's entry is not written")
	}
}
