package syncer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/autoscale"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/metrics"
)

func fakeSide(objs ...runtime.Object) (*dynamicfake.FakeDynamicClient, *Discovery, *discoveryfake.FakeDiscovery) {
	kinds := map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", secretGVR: "SecretList", namespaceGVR: "NamespaceList",
		crdGVR: "CustomResourceDefinitionList", edgev1.SyncerConfigResource: "SyncerConfigList",
		autoscale.HorizontalPodAutoscalers: "HorizontalPodAutoscalerList"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, objs...)
	disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: verbs},
		{Name: "namespaces", Kind: "Namespace", Verbs: verbs},
	}}}}}
	return client, NewDiscovery(disc), disc
}

// TestRunStopsEverything: when Run returns, every goroutine it started has exited (workers, resolver,
// heartbeat, informers), and its informer managers start nothing any more — the order of shutdown
// that keeps informers alive until their users have stopped.
func TestRunStopsEverything(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := &unstructured.Unstructured{}
	cfg.SetUnstructuredContent(syncerConfig("a", namespaceScope([]interface{}{"demo"}, "configmaps")).Object)
	up, upDisc, upFake := fakeSide(cfg, ownedCM("demo", "x"))
	down, downDisc, downFake := fakeSide()
	s, err := New(Config{UpstreamDynamic: up, UpstreamDiscovery: upDisc, DownstreamDynamic: down, DownstreamDiscovery: downDisc,
		SyncTargetName: "edge1", Workers: 2, StatusWorkers: 1, UpsyncWorkers: 1, HeartbeatPeriod: 50 * time.Millisecond,
		DiscoveryRefreshPeriod: 50 * time.Millisecond, Metrics: metrics.New(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		// Ready, and the refresh period has made a resolve read both sides' discovery anew.
		// One walk is the group list and one group version: more than that, and the refresh period
		// has made a resolve read discovery anew.
		return s.Ready() == nil && len(s.up.Running()) == 2 && len(upFake.Actions()) > 2 && len(downFake.Actions()) > 2, nil
	}); err != nil {
		t.Fatalf("never ready: %v; running upstream %v; discovery requests %d, %d", s.Ready(), s.up.Running(),
			len(upFake.Actions()), len(downFake.Actions()))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if s.Ready() == nil {
		t.Error("ready after Run returned")
	}
	s.up.Set(map[schema.GroupVersionResource]informermanager.Spec{secretGVR: {}})
	if running := s.up.Running(); len(running) != 0 {
		t.Errorf("informers running after Run returned: %v", running)
	}
}

// TestRunResolvesAgainWhileDiscoveryIsBehind: with no discovery refresh period, an edge CRD that is
// Established while the edge's discovery does not show its resource makes the engine read discovery
// again on its own, and stop once discovery shows it: the wake-up that no CRD event would bring.
func TestRunResolvesAgainWhileDiscoveryIsBehind(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := &unstructured.Unstructured{}
	cfg.SetUnstructuredContent(syncerConfig("a", namespaceScope([]interface{}{"demo"}, "configmaps")).Object)
	up, upDisc, _ := fakeSide(cfg)
	down, _, fake := fakeSide(crd("widgets.example.com", "1", true))
	downFake := &lockedDiscovery{FakeDiscovery: fake}
	s, err := New(Config{UpstreamDynamic: up, UpstreamDiscovery: upDisc, DownstreamDynamic: down, DownstreamDiscovery: NewDiscovery(downFake),
		SyncTargetName: "edge1", Workers: 1, StatusWorkers: 1, UpsyncWorkers: 1, Metrics: metrics.New(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	walks := func() int { return len(downFake.Actions()) }
	// One walk is two requests (the group list, one group version); a resolve at start and three
	// retries (0.25, 0.5 and 1 s later) make eight.
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return walks() >= 8, nil
	}); err != nil {
		t.Fatalf("discovery read %d times in all: the engine did not resolve again while discovery was behind the CRD", walks())
	}
	downFake.mu.Lock()
	downFake.Resources = append(downFake.Resources, &metav1.APIResourceList{GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Verbs: verbs}}})
	downFake.mu.Unlock()
	// The next retry (at most 16 s later) finds it; after that none follows.
	var settled int
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, false, func(context.Context) (bool, error) {
		n := walks()
		time.Sleep(2 * time.Second)
		settled = walks()
		return settled == n, nil
	}); err != nil {
		t.Fatalf("discovery still read again and again once it shows widgets: %d requests", walks())
	}
	time.Sleep(time.Second)
	if n := walks(); n != settled {
		t.Errorf("discovery read again (%d -> %d requests) with nothing behind", settled, n)
	}
}

// lockedDiscovery is a fake discovery whose resources a test may change while it is read.
type lockedDiscovery struct {
	mu sync.Mutex
	*discoveryfake.FakeDiscovery
}

func (d *lockedDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.FakeDiscovery.ServerGroups()
}

func (d *lockedDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.FakeDiscovery.ServerResourcesForGroupVersion(gv)
}

func (d *lockedDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.FakeDiscovery.ServerGroupsAndResources()
}
