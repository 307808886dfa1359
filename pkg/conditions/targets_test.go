package conditions

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSyncTargetsKeptApart: each sync target writes its own entry; the config's own conditions sum
// up the targets whose heartbeat is recent, naming the one that fails; a stale target counts no more.
func TestSyncTargetsKeptApart(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	ok := []metav1.Condition{
		{Type: Ready, Status: metav1.ConditionTrue, Reason: "Syncing", Message: "fine"},
		{Type: ObjectsSynced, Status: metav1.ConditionTrue, Reason: "Synced", Message: "fine"},
	}
	failing := []metav1.Condition{
		{Type: Ready, Status: metav1.ConditionFalse, Reason: "SyncFailures", Message: "See condition ObjectsSynced."},
		{Type: ObjectsSynced, Status: metav1.ConditionFalse, Reason: "SyncFailures", Message: "1 objects failing to sync"},
	}
	cfg := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncerConfig",
		"metadata": map[string]interface{}{"name": "shared"}}}
	// b writes first, alone: the config's conditions are b's.
	body := StatusApply(cfg, "b", failing, now, time.Minute)
	status := body.Object["status"].(map[string]interface{})
	if own := readConditions(status["conditions"].([]interface{})); own[0].Status != metav1.ConditionFalse || own[0].Message != "See condition ObjectsSynced." {
		t.Errorf("alone: conditions %v; want b's as they are", own)
	}
	entries := status["syncTargets"].([]interface{})
	if len(entries) != 1 || entries[0].(map[string]interface{})["name"] != "b" {
		t.Fatalf("entries %v: want b's only (each target applies its own)", entries)
	}
	cfg.Object["status"] = status // as the apiserver keeps it
	// a writes: its entry; the sum names b, which fails.
	body = StatusApply(cfg, "a", ok, now, time.Minute)
	status = body.Object["status"].(map[string]interface{})
	sum := readConditions(status["conditions"].([]interface{}))
	if sum[0].Type != Ready || sum[0].Status != metav1.ConditionFalse || sum[0].Reason != "SyncFailures" || !strings.HasPrefix(sum[0].Message, "sync target b: ") {
		t.Errorf("summed Ready %+v: want False, b's reason, naming b", sum[0])
	}
	if entries := status["syncTargets"].([]interface{}); len(entries) != 1 || entries[0].(map[string]interface{})["name"] != "a" {
		t.Errorf("entries %v: want a's only", entries)
	}
	if own := readConditions(status["syncTargets"].([]interface{})[0].(map[string]interface{})["conditions"].([]interface{})); own[0].Status != metav1.ConditionTrue {
		t.Errorf("a's own Ready %+v: want True", own[0])
	}
	// b's heartbeat goes stale: the sum is a's.
	later := metav1.NewTime(now.Add(2 * time.Minute))
	body = StatusApply(cfg, "a", ok, later, time.Minute)
	if sum := readConditions(body.Object["status"].(map[string]interface{})["conditions"].([]interface{})); sum[0].Status != metav1.ConditionTrue {
		t.Errorf("with b stale, summed Ready %+v: want a's True", sum[0])
	}
}

// TestDeletionsHeld: held deletions make DeletionsHeld True (the one condition whose True is a
// problem) and Ready False; the message says how to release them; the sum across sync targets reads
// it the same way.
func TestDeletionsHeld(t *testing.T) {
	conds := ForConfig("SyncerConfig", "a", 1, nil, Shared(sources{reachable: true, held: 120}))
	if conds[0].Type != Ready || conds[0].Status != metav1.ConditionFalse || conds[0].Reason != "TooManyDeletions" {
		t.Errorf("Ready %+v: want False, TooManyDeletions", conds[0])
	}
	var held metav1.Condition
	for _, c := range conds {
		if c.Type == DeletionsHeld {
			held = c
		}
	}
	if held.Status != metav1.ConditionTrue || !strings.Contains(held.Message, `annotate --overwrite configmap kubestellar-syncer-release edge.kubestellar.io/release-deletions=120`) ||
		!strings.Contains(held.Message, "configmaps ns/c000") {
		t.Errorf("DeletionsHeld %+v", held)
	}
	fine := ForConfig("SyncerConfig", "a", 1, nil, Shared(sources{reachable: true}))
	if fine[0].Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v with nothing held: want True", fine[0])
	}
	now := metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	cfg := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncerConfig",
		"metadata": map[string]interface{}{"name": "a"}}}
	cfg.Object["status"] = StatusApply(cfg, "b", conds, now, time.Minute).Object["status"]
	sum := readConditions(StatusApply(cfg, "a", fine, now, time.Minute).Object["status"].(map[string]interface{})["conditions"].([]interface{}))
	for _, c := range sum {
		if c.Type == DeletionsHeld && (c.Status != metav1.ConditionTrue || !strings.HasPrefix(c.Message, "sync target b: ")) {
			t.Errorf("summed DeletionsHeld %+v: want b's True", c)
		}
	}
}

// TestEdgeFence: a syncer writing through a fence says whether it is in force, and Ready follows it;
// one without says nothing.
func TestEdgeFence(t *testing.T) {
	find := func(conds []metav1.Condition, typ string) (metav1.Condition, bool) {
		for _, c := range conds {
			if c.Type == typ {
				return c, true
			}
		}
		return metav1.Condition{}, false
	}
	if _, ok := find(ForConfig("SyncerConfig", "a", 1, nil, Shared(sources{reachable: true})), EdgeFence); ok {
		t.Error("EdgeFence without a fence")
	}
	conds := ForConfig("SyncerConfig", "a", 1, nil, Shared(sources{reachable: true, fenceRequired: true}))
	if c, _ := find(conds, EdgeFence); c.Status != metav1.ConditionTrue || conds[0].Status != metav1.ConditionTrue {
		t.Errorf("EdgeFence %+v, Ready %+v: want both True", c, conds[0])
	}
	conds = ForConfig("SyncerConfig", "a", 1, nil, Shared(sources{reachable: true, fenceRequired: true, fenceMissing: true}))
	if c, _ := find(conds, EdgeFence); c.Status != metav1.ConditionFalse || c.Reason != "FenceMissing" || conds[0].Status != metav1.ConditionFalse {
		t.Errorf("EdgeFence %+v, Ready %+v: want both False (FenceMissing)", c, conds[0])
	}
}
