package downsync

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/selection"
)

// retaining is a view selecting every ConfigMap in namespace a, whose data.mode the edge owns.
func retaining() *view {
	v := selecting("a")
	v.sel, _ = selection.Merge([]*edgev1.SyncerConfig{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: metav1.GroupResource{Resource: "configmaps"}, APIVersion: "v1",
				EntryPolicy: edgev1.EntryPolicy{RetainFields: []string{"data.mode"}}}}},
	}}})
	return v
}

type autoscalers struct{ scales, known bool }

func (a autoscalers) Scales(schema.GroupKind, string, string) (bool, bool) { return a.scales, a.known }

// A retained field changed at the edge is no drift: no write. An upstream change of another field is
// applied with the edge's value of the retained one, read live, under the resourceVersion read.
func TestRetainedFieldsAreTheEdges(t *testing.T) {
	up := u("v1", "ConfigMap", "a", "x", map[string]interface{}{"k": "v", "mode": "upstream"})
	desired, err := mapping.ToDownstream(up, mapping.Options{OwnerLabelValue: "t", Retain: retaining().sel.RetainedFields(selection.ObjectOf(cmGVR.GroupResource(), up))})
	if err != nil {
		t.Fatal(err)
	}
	edge := desired.DeepCopy()
	edge.Object["data"] = map[string]interface{}{"k": "v", "mode": "hotfix"}
	edge.SetResourceVersion("7")
	h := newHarness(t, retaining(), objs(up, nsA), objs(edge, nsA))
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if a := h.actions(); len(a) != 0 {
		t.Fatalf("a retained field changed at the edge made writes: %v", a)
	}

	changed := up.DeepCopy()
	changed.Object["data"] = map[string]interface{}{"k": "new", "mode": "upstream"}
	h = newHarness(t, retaining(), objs(changed, nsA), objs(edge, nsA))
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	var applied *unstructured.Unstructured
	for _, a := range h.down.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			applied = &unstructured.Unstructured{}
			if err := applied.UnmarshalJSON(p.GetPatch()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if applied == nil {
		t.Fatalf("no apply: %v", h.actions())
	}
	if d, _, _ := unstructured.NestedStringMap(applied.Object, "data"); d["k"] != "new" || d["mode"] != "hotfix" {
		t.Errorf("applied data %v: want upstream's k and the edge's mode", d)
	}
	if applied.GetResourceVersion() != "7" {
		t.Errorf("applied under resourceVersion %q, want the one read (7)", applied.GetResourceVersion())
	}
}

// An object with replicas waits for the edge's autoscalers to be listed; others do not.
func TestReplicasWaitForAutoscalers(t *testing.T) {
	withReplicas := up("spec", map[string]interface{}{"replicas": int64(2)})
	for _, tc := range []struct {
		name  string
		obj   *unstructured.Unstructured
		a     autoscalers
		waits bool
	}{
		{"replicas, autoscalers not listed", withReplicas, autoscalers{}, true},
		{"replicas, autoscalers listed", withReplicas, autoscalers{known: true}, false},
		{"no replicas", upCM, autoscalers{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, selecting("a"), objs(tc.obj, nsA), objs(nsA))
			h.c.cfg.Autoscalers = tc.a
			after, err := h.c.process(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			if waited := after == autoscalersWait && len(h.actions()) == 0; waited != tc.waits {
				t.Errorf("waited %v (after %v, actions %v), want %v", waited, after, h.actions(), tc.waits)
			}
		})
	}
}

func up(field string, v map[string]interface{}) *unstructured.Unstructured {
	o := upCM.DeepCopy()
	o.Object[field] = v
	return o
}
