package autoscale

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func hpa(name, kind, target string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]interface{}{"namespace": "demo", "name": name},
		"spec":     map[string]interface{}{"scaleTargetRef": map[string]interface{}{"apiVersion": "apps/v1", "kind": kind, "name": target}},
	}}
}

// The index follows autoscalers as they come, retarget and go, and tells a target's first autoscaler
// and last one only.
func TestIndex(t *testing.T) {
	var told []string
	x := NewIndex(func(tg Target) { told = append(told, tg.GroupKind.Kind+"/"+tg.Name) })
	h := x.Handler()
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	h.OnAdd(hpa("a", "Deployment", "web"), false)
	h.OnAdd(hpa("b", "Deployment", "web"), false)
	scales := func(gk schema.GroupKind, ns, name string) bool {
		s, _ := x.Scales(gk, ns, name)
		return s
	}
	if _, known := x.Scales(deploy, "demo", "web"); known {
		t.Error("known before Known")
	}
	x.Known()
	if s, known := x.Scales(deploy, "demo", "web"); !s || !known || scales(deploy, "other", "web") || scales(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "demo", "web") {
		t.Fatal("Scales")
	}
	h.OnUpdate(hpa("a", "Deployment", "web"), hpa("a", "StatefulSet", "db"))
	h.OnDelete(hpa("b", "Deployment", "web"))
	if scales(deploy, "demo", "web") || !scales(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "demo", "db") {
		t.Error("after retargeting and deleting: Scales")
	}
	h.OnUpdate(nil, &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"namespace": "demo", "name": "a"}}})
	want := []string{"Deployment/web", "StatefulSet/db", "Deployment/web", "StatefulSet/db"}
	if len(told) != len(want) {
		t.Fatalf("told %v, want %v", told, want)
	}
	for i := range want {
		if told[i] != want[i] {
			t.Fatalf("told %v, want %v", told, want)
		}
	}
}
