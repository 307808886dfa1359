package mapping

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func service(clusterIP string) *unstructured.Unstructured {
	spec := map[string]interface{}{"ports": []interface{}{map[string]interface{}{"port": int64(80)}}}
	if clusterIP != "" {
		spec["clusterIP"] = clusterIP
	}
	o := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Service", "spec": spec}}
	o.SetNamespace("n")
	o.SetName("s")
	return o
}

// TestReplaceOnly: a Service changing between headless and not is replaced (the edge would keep
// the old clusterIP without an error); any other change is applied in place.
func TestReplaceOnly(t *testing.T) {
	toDown := func(up *unstructured.Unstructured) *unstructured.Unstructured {
		d, err := ToDownstream(up, Options{OwnerLabelValue: "t"})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	cm := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}
	cm.SetName("c")
	for _, tc := range []struct {
		name            string
		desired, actual *unstructured.Unstructured
		want            bool
	}{
		{"headless upstream becomes ClusterIP", toDown(service("10.0.0.7")), service("None"), true},
		{"ClusterIP upstream becomes headless", toDown(service("None")), service("10.0.0.9"), true},
		{"ClusterIP upstream, the edge allocated its own IP", toDown(service("10.0.0.7")), service("10.0.0.9"), false},
		{"headless stays headless", toDown(service("None")), service("None"), false},
		{"no edge object yet", toDown(service("None")), nil, false},
		{"not a Service", toDown(cm), cm, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, got := ReplaceOnly(tc.desired, tc.actual)
			if got != tc.want || (got && why == "") {
				t.Errorf("ReplaceOnly = %v %q, want %v", got, why, tc.want)
			}
		})
	}
}

// TestSourceControllerAnnotationsStripped: what the source cluster's controllers wrote on a PVC
// (its binding) and a Deployment (its rollout revision) is not copied to the edge, whose own
// controllers write their own; the user's annotations are.
func TestSourceControllerAnnotationsStripped(t *testing.T) {
	for _, tc := range []struct{ apiVersion, kind, stripped string }{
		{"v1", "PersistentVolumeClaim", "pv.kubernetes.io/bind-completed"},
		{"v1", "PersistentVolumeClaim", "volume.kubernetes.io/selected-node"},
		{"apps/v1", "Deployment", "deployment.kubernetes.io/revision"},
	} {
		up := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": tc.apiVersion, "kind": tc.kind}}
		up.SetNamespace("n")
		up.SetName("o")
		up.SetAnnotations(map[string]string{tc.stripped: "yes", "team": "a"})
		down, err := ToDownstream(up, Options{OwnerLabelValue: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if a := down.GetAnnotations(); a[tc.stripped] != "" || a["team"] != "a" {
			t.Errorf("%s: annotations %v: want %s dropped and team kept", tc.kind, a, tc.stripped)
		}
	}
}
