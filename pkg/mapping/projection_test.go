package mapping

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestProject(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	status := func() map[string]interface{} {
		return map[string]interface{}{
			"readyReplicas": int64(2), "observedGeneration": int64(3),
			"loadBalancer": map[string]interface{}{"ingress": []interface{}{map[string]interface{}{"ip": "10.0.0.1"}}, "other": "x"},
			"big":          strings.Repeat("x", 1000),
			"conditions":   []interface{}{map[string]interface{}{"type": "Available", "status": "True"}},
		}
	}
	up := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment"}}
	for _, tc := range []struct {
		name string
		p    StatusProjection
		want string
	}{
		{"all", StatusProjection{All: true}, ""},
		{"fields and a dotted path", StatusProjection{Fields: []string{"readyReplicas", "loadBalancer.ingress", "absent.field"}},
			`{"loadBalancer":{"ingress":[{"ip":"10.0.0.1"}]},"readyReplicas":2}`},
		{"under the cap", StatusProjection{Fields: []string{"readyReplicas"}, MaxBytes: 100}, `{"readyReplicas":2}`},
		{"cut: the largest field left out, said in a condition", StatusProjection{All: true, MaxBytes: 300},
			`{"conditions":[{"status":"True","type":"Available"},{"lastTransitionTime":"2026-11-27T12:00:00Z",` +
				`"message":"sync target edge1: the edge's status is over 300 bytes; left out: big","reason":"TooLarge","status":"True","type":"EdgeStatusCut"}],` +
				`"loadBalancer":{"ingress":[{"ip":"10.0.0.1"}],"other":"x"},"observedGeneration":3,"readyReplicas":2}`},
		{"cut: conditions too", StatusProjection{All: true, MaxBytes: 50},
			`{"conditions":[{"lastTransitionTime":"2026-11-27T12:00:00Z",` +
				`"message":"sync target edge1: the edge's status is over 50 bytes; left out: big, conditions, loadBalancer","reason":"TooLarge","status":"True","type":"EdgeStatusCut"}],` +
				`"observedGeneration":3,"readyReplicas":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := status()
			got, _ := json.Marshal(Project(in, tc.p, up, "edge1", now))
			want := tc.want
			if want == "" {
				raw, _ := json.Marshal(status())
				want = string(raw)
			}
			if string(got) != want {
				t.Errorf("projected\n%s\nwant\n%s", got, want)
			}
		})
	}
	// The cut's condition keeps its time while it says the same.
	earlier := map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": CutCondition, "status": "True",
		"lastTransitionTime": "2026-11-01T00:00:00Z"}}}
	up.Object["status"] = earlier
	got := Project(status(), StatusProjection{All: true, MaxBytes: 300}, up, "edge1", now)
	if c := conditionsByType(got.(map[string]interface{}))[CutCondition]; c["lastTransitionTime"] != "2026-11-01T00:00:00Z" {
		t.Errorf("cut condition %v: want the transition time upstream kept", c)
	}
	if Project(nil, StatusProjection{Fields: []string{"a"}}, up, "edge1", now) != nil {
		t.Error("nil status projected to something")
	}
}

func TestProjectionUnion(t *testing.T) {
	all, none := StatusProjection{All: true}, StatusProjection{}
	a := StatusProjection{Fields: []string{"b", "a"}, MaxBytes: 100}
	b := StatusProjection{Fields: []string{"c", "a"}, MaxBytes: 200}
	for _, tc := range []struct {
		name       string
		x, y, want StatusProjection
	}{
		{"nothing and nothing", none, none, none},
		{"nothing adds nothing", none, a, a},
		{"fields: the union, the larger cap", a, b, StatusProjection{Fields: []string{"a", "b", "c"}, MaxBytes: 200}},
		{"all wins, no cap wins", a, all, StatusProjection{All: true}},
	} {
		if got := tc.x.Union(tc.y); got.Key() != tc.want.Key() {
			t.Errorf("%s: %+v ∪ %+v = %+v, want %+v", tc.name, tc.x, tc.y, got, tc.want)
		}
	}
}

// An object that asks to be told what the edge runs carries, at the edge, the upstream
// resourceVersion of its content, which is not content: a new resourceVersion alone is up to date.
func TestUpstreamResourceVersionIsNotContent(t *testing.T) {
	up := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
		"data": map[string]interface{}{"k": "v"}}}
	up.SetNamespace("app")
	up.SetName("cm")
	up.SetResourceVersion("10")
	plain, err := ToDownstream(up, Options{OwnerLabelValue: "edge1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.GetAnnotations()[UpstreamResourceVersionAnnotation]; ok {
		t.Fatal("resourceVersion recorded for an object that does not ask")
	}
	up.SetAnnotations(map[string]string{ReportAppliedAnnotation: "true"})
	asked, _ := ToDownstream(up, Options{OwnerLabelValue: "edge1"})
	if asked.GetAnnotations()[UpstreamResourceVersionAnnotation] != "10" || asked.GetAnnotations()[HashAnnotation] != plain.GetAnnotations()[HashAnnotation] {
		t.Fatalf("annotations %v: want resourceVersion 10 recorded, the digest unchanged", asked.GetAnnotations())
	}
	if UpToDate(asked, plain) {
		t.Error("an edge copy without the resourceVersion is up to date for an object that starts asking: it would never be told")
	}
	if v, ok := AppliedVersion(asked); !ok || v != "10" {
		t.Errorf("applied version %q %v", v, ok)
	}
	up.SetResourceVersion("11") // the syncer's own annotation upstream, say
	next, _ := ToDownstream(up, Options{OwnerLabelValue: "edge1"})
	if !UpToDate(next, asked) {
		t.Error("a new upstream resourceVersion with the same content is not up to date: every upstream write would write the edge")
	}
	up.Object["data"] = map[string]interface{}{"k": "w"}
	changed, _ := ToDownstream(up, Options{OwnerLabelValue: "edge1"})
	if UpToDate(changed, asked) {
		t.Error("changed content up to date")
	}
}
