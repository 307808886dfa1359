package status

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/framework/fakeinformers"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// TestStatusPaced: an edge status that flaps is written upstream at most once a second: a second
// change within the second waits out the rest of it (the key comes back then, and the status read
// then is the latest), and is written once the second has passed.
func TestStatusPaced(t *testing.T) {
	up := withLabel(widget(nil, false), "executing.edge.kubestellar.io/edge-1", "true")
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"}, up.DeepCopy())
	edge := fakeinformers.With(widget(map[string]interface{}{"phase": "Ready"}, true))
	upCache := fakeinformers.With(up)
	c, err := NewController(Config{
		Upstream: client, Metrics: metrics.New(prometheus.NewRegistry()), Selection: view{hasStatus: true, returns: true}, SyncTargetName: "edge-1",
		UpstreamInformers: fakeinformers.Informers{widgets: upCache}, DownstreamInformers: fakeinformers.Informers{widgets: edge},
		Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	key := framework.Key{GVR: widgets, Namespace: "ns", Name: "w"}
	process := func() time.Duration {
		t.Helper()
		after, err := c.process(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return after
	}
	updates := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "update" {
				n++
			}
		}
		return n
	}
	if process(); updates() != 1 {
		t.Fatalf("first status: %d updates", updates())
	}
	edge.Add(widget(map[string]interface{}{"phase": "Failed"}, true)) // flaps
	now = now.Add(300 * time.Millisecond)
	if after := process(); updates() != 1 || after != 700*time.Millisecond {
		t.Errorf("a change 0.3 s later: %d updates, back after %v; want none, back after 0.7 s", updates(), after)
	}
	now = now.Add(700 * time.Millisecond)
	if process(); updates() != 2 {
		t.Errorf("a second later: %d updates, want 2", updates())
	}
}
