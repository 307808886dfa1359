package conditions

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/problem"
)

func config(kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": kind}}
	u.SetName(name)
	return u
}

// TestBeatWritesEveryKind: the heartbeat applies the status of every SyncerConfig and EdgeSyncConfig
// through its own resource's status subresource, each with the selection problems of that config
// only (an EdgeSyncConfig and a SyncerConfig may share a name).
func TestBeatWritesEveryKind(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	type write struct{ resource, name, selectionValid string }
	var writes []write
	client.PrependReactor("patch", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		p := action.(clienttesting.PatchAction)
		var body struct {
			Status struct {
				Conditions []metav1.Condition `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
			t.Fatal(err)
		}
		w := write{resource: p.GetResource().Resource + "/" + p.GetSubresource(), name: p.GetName()}
		for _, c := range body.Status.Conditions {
			if c.Type == SelectionValid {
				w.selectionValid = string(c.Status)
			}
		}
		writes = append(writes, w)
		return true, nil, nil
	})
	src := sources{reachable: true, selection: []problem.Problem{
		{Kind: problem.InvalidConfig, ConfigKind: problem.EdgeSyncConfig, Config: "same", Field: "downSyncedResources[0]", Reason: "kind is empty"},
	}}
	h, err := New(Config{Upstream: client, Sources: src, Metrics: metrics.New(prometheus.NewRegistry()), FieldManager: "test",
		Configs: func() []*unstructured.Unstructured {
			return []*unstructured.Unstructured{config("SyncerConfig", "same"), config("EdgeSyncConfig", "same")}
		}})
	if err != nil {
		t.Fatal(err)
	}
	h.Beat(context.Background())
	want := []write{{"syncerconfigs/status", "same", "True"}, {"edgesyncconfigs/status", "same", "False"}}
	if len(writes) != len(want) || writes[0] != want[0] || writes[1] != want[1] {
		t.Errorf("writes %+v, want %+v", writes, want)
	}
}

// TestBeatWritesOnChange: with a refresh period, a beat whose status the config already shows is not
// written, and counts as a heartbeat; a change is written at once.
func TestBeatWritesOnChange(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	cfg := config("SyncerConfig", "c")
	patches := 0
	client.PrependReactor("patch", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		var body unstructured.Unstructured
		if err := json.Unmarshal(action.(clienttesting.PatchAction).GetPatch(), &body.Object); err != nil {
			t.Fatal(err)
		}
		cfg.Object["status"] = body.Object["status"] // what the watch brings back to the cache
		patches++
		return true, nil, nil
	})
	src := &sources{reachable: true}
	heartbeat := func() (*Heartbeat, *metrics.Metrics) {
		m := metrics.New(prometheus.NewRegistry())
		h, err := New(Config{Upstream: client, Sources: src, Metrics: m, FieldManager: "test", SyncTarget: "florin", Refresh: time.Hour,
			Configs: func() []*unstructured.Unstructured { return []*unstructured.Unstructured{cfg} }})
		if err != nil {
			t.Fatal(err)
		}
		return h, m
	}
	h, _ := heartbeat()
	h.Beat(context.Background())
	h2, m2 := heartbeat() // a fresh heartbeat metric: set by the second beat only
	h2.Beat(context.Background())
	if patches != 1 || testutil.CollectAndCount(m2.LastHeartbeat) != 1 {
		t.Errorf("%d writes for two beats of the same status, %d heartbeat series after the second; want one write, and the second beat counted", patches, testutil.CollectAndCount(m2.LastHeartbeat))
	}
	src.reachable = false
	h.Beat(context.Background())
	if patches != 2 {
		t.Errorf("%d writes after a condition changed; want 2", patches)
	}
}
