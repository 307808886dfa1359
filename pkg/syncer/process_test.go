package syncer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/selection"
)

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func u(apiVersion, kind, ns, name string, data map[string]interface{}) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion, "kind": kind}}
	o.SetNamespace(ns)
	o.SetName(name)
	if data != nil {
		o.Object["data"] = data
	}
	return o
}

type harness struct {
	c        *Controller
	up, down *dynamicfake.FakeDynamicClient
	m        *metrics.Metrics
}

// newHarness runs fake-backed informers for configmaps and namespaces on both sides, with a
// selection of every ConfigMap in the namespaces given.
func newHarness(t *testing.T, namespaces []string, upObjs, downObjs []runtime.Object) *harness {
	t.Helper()
	kinds := map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", namespaceGVR: "NamespaceList"}
	up := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, upObjs...)
	down := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, downObjs...)
	down.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchAction)
		o := &unstructured.Unstructured{}
		return true, o, o.UnmarshalJSON(p.GetPatch())
	})
	m := metrics.New(prometheus.NewRegistry())
	sel, _ := selection.Merge([]*edgev1.SyncerConfig{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: namespaces,
			Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: metav1.GroupResource{Resource: "configmaps"}, APIVersion: "v1"}}},
	}}})
	verbs := sets.New("list", "watch", "get", "create", "patch", "delete")
	cmRes := selection.APIResource{GVR: cmGVR, Kind: "ConfigMap", Namespaced: true, Verbs: verbs}
	nsRes := selection.APIResource{GVR: namespaceGVR, Kind: "Namespace", Verbs: verbs}
	snap := &snapshot{selection: sel, resources: map[schema.GroupResource]*selection.Resource{
		cmGVR.GroupResource():        {Upstream: cmRes, Downstream: cmRes},
		namespaceGVR.GroupResource(): {Upstream: nsRes, Downstream: nsRes},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	upM := informermanager.New(Upstream, up, nil, 0)
	downM := informermanager.New(Downstream, down, nil, 0)
	upM.Start(ctx)
	downM.Start(ctx)
	t.Cleanup(func() { cancel(); upM.Stop(); downM.Stop() })
	upM.Set(map[schema.GroupVersionResource]informermanager.Spec{cmGVR: {}, namespaceGVR: {}})
	downM.Set(map[schema.GroupVersionResource]informermanager.Spec{cmGVR: {LabelSelector: mapping.OwnerLabel + "=t"}, namespaceGVR: {}})
	for _, m := range []*informermanager.Manager{upM, downM} {
		for _, gvr := range []schema.GroupVersionResource{cmGVR, namespaceGVR} {
			deadline := time.Now().Add(5 * time.Second)
			for _, ok := m.Synced(gvr); !ok; _, ok = m.Synced(gvr) {
				if time.Now().After(deadline) {
					t.Fatal("informers did not sync")
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	cfg := Config{UpstreamDynamic: up, DownstreamDynamic: down, Metrics: m, FieldManager: DefaultFieldManager, ConflictRecheckPeriod: time.Minute}
	c := NewController(cfg, "t", upM, downM, func() *snapshot { return snap })
	up.ClearActions()
	down.ClearActions()
	return &harness{c: c, up: up, down: down, m: m}
}

func (h *harness) actions() []string {
	var out []string
	for _, a := range h.down.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	for _, a := range h.up.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, "upstream "+a.GetVerb())
		}
	}
	return out
}

func owned(t *testing.T, up *unstructured.Unstructured) *unstructured.Unstructured {
	d, err := mapping.ToDownstream(up, mapping.Options{OwnerLabelValue: "t"})
	if err != nil {
		t.Fatal(err)
	}
	d.SetUID("down-uid")
	return d
}

func TestProcess(t *testing.T) {
	upCM := u("v1", "ConfigMap", "a", "x", map[string]interface{}{"k": "v"})
	nsA := u("v1", "Namespace", "", "a", nil)
	key := Key{GVR: cmGVR, Namespace: "a", Name: "x"}
	unowned := u("v1", "ConfigMap", "a", "x", map[string]interface{}{"k": "theirs"})
	for _, tc := range []struct {
		name       string
		namespaces []string
		up, down   []runtime.Object
		want       []string
		result     string // writes_total result label that must be 1
		requeue    bool
	}{
		{name: "new object is created", namespaces: []string{"a"}, up: []runtime.Object{upCM, nsA}, down: []runtime.Object{nsA},
			want: []string{"get configmaps", "patch configmaps"}, result: metrics.Created},
		{name: "up to date: no request", namespaces: []string{"a"}, up: []runtime.Object{upCM, nsA}, down: []runtime.Object{nsA, owned(t, upCM)}},
		{name: "drifted: applied again", namespaces: []string{"a"}, up: []runtime.Object{upCM, nsA},
			down: []runtime.Object{nsA, func() *unstructured.Unstructured {
				d := owned(t, upCM)
				d.Object["data"] = map[string]interface{}{"k": "edited"}
				return d
			}()},
			want: []string{"patch configmaps"}, result: metrics.Updated},
		{name: "waits for its namespace without a request", namespaces: []string{"a"}, up: []runtime.Object{upCM, nsA}},
		{name: "unowned object is not overwritten", namespaces: []string{"a"}, up: []runtime.Object{upCM, nsA}, down: []runtime.Object{nsA, unowned},
			want: []string{"get configmaps"}, result: metrics.Conflict, requeue: true},
		{name: "deselected owned object is deleted", namespaces: []string{"b"}, up: []runtime.Object{upCM, nsA}, down: []runtime.Object{nsA, owned(t, upCM)},
			want: []string{"delete configmaps"}, result: metrics.Deleted},
		{name: "deleted upstream: deleted downstream", namespaces: []string{"a"}, up: []runtime.Object{nsA}, down: []runtime.Object{nsA, owned(t, upCM)},
			want: []string{"delete configmaps"}, result: metrics.Deleted},
		{name: "unowned object is never deleted", namespaces: []string{"b"}, up: []runtime.Object{nsA}, down: []runtime.Object{nsA, unowned}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.namespaces, tc.up, tc.down)
			requeue, err := h.c.process(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(h.actions(), ", "), strings.Join(tc.want, ", "); got != want {
				t.Errorf("actions: got [%s], want [%s]", got, want)
			}
			if (requeue > 0) != tc.requeue {
				t.Errorf("requeueAfter = %v", requeue)
			}
			if tc.result != "" {
				if got := testutil.ToFloat64(h.m.Writes.WithLabelValues(metrics.Downsync, "configmaps", tc.result)); got != 1 {
					t.Errorf("writes_total{result=%s} = %v, want 1", tc.result, got)
				}
			}
			for _, a := range h.down.Actions() {
				if p, ok := a.(clienttesting.PatchAction); ok {
					if !strings.Contains(string(p.GetPatch()), mapping.OwnerLabel) {
						t.Errorf("applied object lacks the owner label: %s", p.GetPatch())
					}
				}
				if d, ok := a.(clienttesting.DeleteAction); ok {
					if pre := d.GetDeleteOptions().Preconditions; pre == nil || pre.UID == nil || *pre.UID != "down-uid" {
						t.Errorf("delete without the UID precondition: %+v", d.GetDeleteOptions())
					}
				}
			}
		})
	}
}

// TestProcessHoldsWhenAPIMissingUpstream: a resource the config names but the upstream does not
// serve (resolution dropped it) is never deleted downstream.
func TestProcessHoldsWhenAPIMissingUpstream(t *testing.T) {
	upCM := u("v1", "ConfigMap", "a", "x", map[string]interface{}{"k": "v"})
	nsA := u("v1", "Namespace", "", "a", nil)
	h := newHarness(t, []string{"a"}, []runtime.Object{nsA}, []runtime.Object{nsA, owned(t, upCM)})
	snap := h.c.state()
	held := &snapshot{selection: snap.selection, resources: map[schema.GroupResource]*selection.Resource{},
		leftovers: map[schema.GroupResource]schema.GroupVersionResource{cmGVR.GroupResource(): cmGVR}}
	h.c.state = func() *snapshot { return held }
	if _, err := h.c.process(context.Background(), Key{GVR: cmGVR, Namespace: "a", Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if a := h.actions(); len(a) != 0 {
		t.Fatalf("actions %v, want none", a)
	}
}
