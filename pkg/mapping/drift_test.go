package mapping

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Drifts names each field that differs (named list elements by name), the edge's value and the
// manager whose entry names the field; defaults the edge added are no drift.
func TestDrifts(t *testing.T) {
	up := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web", "namespace": "demo", "labels": map[string]interface{}{"app": "web"}},
		"spec": map[string]interface{}{"replicas": int64(2), "template": map[string]interface{}{"spec": map[string]interface{}{
			"containers": []interface{}{
				map[string]interface{}{"name": "app", "image": "app:1"},
				map[string]interface{}{"name": "side", "image": "side:1"},
			}}}},
	}}
	desired, err := ToDownstream(up, Options{OwnerLabelValue: "t"})
	if err != nil {
		t.Fatal(err)
	}
	live := desired.DeepCopy()
	_ = unstructured.SetNestedField(live.Object, int64(5), "spec", "replicas")
	_ = unstructured.SetNestedField(live.Object, "Always", "spec", "template", "spec", "restartPolicy") // a default
	_ = unstructured.SetNestedSlice(live.Object, []interface{}{
		map[string]interface{}{"name": "side", "image": "side:1", "imagePullPolicy": "IfNotPresent"},
		map[string]interface{}{"name": "app", "image": "app:hotfix"},
	}, "spec", "template", "spec", "containers")
	unstructured.RemoveNestedField(live.Object, "metadata", "labels", "app")
	_ = unstructured.SetNestedField(live.Object, "other", "metadata", "annotations", HashAnnotation) // a mark: not content
	at := metav1.NewTime(time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC))
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kubestellar-syncer", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
		{Manager: "kubectl-scale", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at, Subresource: "scale",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
		{Manager: "kubectl-set", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}}}`)}},
	})
	got := map[string]Drift{}
	for _, d := range Drifts(desired, live, "kubestellar-syncer") {
		got[d.Path] = d
	}
	want := map[string]Drift{
		"metadata.labels.app": {Path: "metadata.labels.app", Edge: "(absent)"},
		"spec.replicas":       {Path: "spec.replicas", Edge: "5", Manager: "kubectl-scale", Since: "2026-11-27T21:00:00Z"},
		"spec.template.spec.containers[name=app].image": {Path: "spec.template.spec.containers[name=app].image", Edge: `"app:hotfix"`,
			Manager: "kubectl-set", Since: "2026-11-27T21:00:00Z"},
	}
	if len(got) != len(want) {
		t.Fatalf("drifts %+v, want %+v", got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %+v, want %+v", p, got[p], w)
		}
	}

	// Acknowledged: a drift found at or after every change; not a change made since.
	ack := up.DeepCopy()
	ack.SetAnnotations(map[string]string{AcknowledgeDriftAnnotation: "other=20261127T230000Z, t=" + DriftID(at.Add(time.Minute))})
	var drifts []Drift
	for _, d := range Drifts(desired, live, "kubestellar-syncer") {
		if d.Since != "" {
			drifts = append(drifts, d)
		}
	}
	if !AcknowledgedAll(ack, "t", drifts) || AcknowledgedAll(ack, "t2", drifts) || !Acknowledged(ack, "t", DriftID(at.Add(time.Minute))) {
		t.Error("acknowledgement not read")
	}
	if AcknowledgedAll(ack, "t", Drifts(desired, live, "kubestellar-syncer")) {
		t.Error("a change nobody is known to have made when (a removed label) counts as acknowledged")
	}
	ack.SetAnnotations(map[string]string{AcknowledgeDriftAnnotation: "t=" + DriftID(at.Add(-time.Minute))})
	if AcknowledgedAll(ack, "t", drifts) {
		t.Error("an acknowledgement older than the change acknowledges it")
	}
	// A dotted key is named in brackets; an element renamed at the edge is absent.
	dotted := up.DeepCopy()
	dotted.SetLabels(map[string]string{"app.kubernetes.io/version": "1"})
	_ = unstructured.SetNestedSlice(dotted.Object, []interface{}{map[string]interface{}{"name": "app", "image": "app:1"}}, "spec", "template", "spec", "containers")
	want2, _ := ToDownstream(dotted, Options{OwnerLabelValue: "t"})
	edge2 := want2.DeepCopy()
	_ = unstructured.SetNestedField(edge2.Object, "2", "metadata", "labels", "app.kubernetes.io/version")
	_ = unstructured.SetNestedSlice(edge2.Object, []interface{}{map[string]interface{}{"name": "renamed", "image": "app:1"}}, "spec", "template", "spec", "containers")
	paths := map[string]string{}
	for _, d := range Drifts(want2, edge2, "kubestellar-syncer") {
		paths[d.Path] = d.Edge
	}
	if paths["metadata.labels[app.kubernetes.io/version]"] != `"2"` || paths["spec.template.spec.containers[name=app]"] != "(absent)" || len(paths) != 2 {
		t.Errorf("drifts %v", paths)
	}
	if _, err := ParseDriftPolicy("Sometimes"); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Error("a bad policy parsed")
	}
}

// A hold's put-back note names each drifted field with what downsync wrote there; the hold may end
// only when every one holds that value again (defaults the edge adds aside), whatever else changed.
func TestPutBack(t *testing.T) {
	up := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web", "namespace": "demo", "labels": map[string]interface{}{"app": "web"}},
		"spec": map[string]interface{}{"replicas": int64(1), "template": map[string]interface{}{"spec": map[string]interface{}{
			"containers":   []interface{}{map[string]interface{}{"name": "app", "image": "app:1", "command": []interface{}{"sleep", "3600"}}},
			"nodeSelector": map[string]interface{}{"site": "a"},
		}}},
	}}
	written, err := ToDownstream(up, Options{OwnerLabelValue: "t"})
	if err != nil {
		t.Fatal(err)
	}
	edge := written.DeepCopy()
	containers, _, _ := unstructured.NestedSlice(edge.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]interface{})["imagePullPolicy"] = "IfNotPresent" // a default
	_ = unstructured.SetNestedSlice(edge.Object, containers, "spec", "template", "spec", "containers")
	hotfix := edge.DeepCopy()
	_ = unstructured.SetNestedField(hotfix.Object, int64(3), "spec", "replicas")
	c := hotfix.Object["spec"].(map[string]interface{})["template"].(map[string]interface{})["spec"].(map[string]interface{})["containers"].([]interface{})[0].(map[string]interface{})
	c["command"] = []interface{}{"sleep", "3601"}
	unstructured.RemoveNestedField(hotfix.Object, "spec", "template", "spec", "nodeSelector")

	note := PutBackNote(written, hotfix)
	for _, want := range []string{`{"field":["spec","replicas"],"value":1}`, `"field":["spec","template","spec","containers","[name=app]","command"],"value":["sleep","3600"]`,
		`"field":["spec","template","spec","nodeSelector"],"value":{"site":"a"}`} {
		if !strings.Contains(note, want) {
			t.Errorf("put-back note %s: want %s", note, want)
		}
	}
	if PutBackNote(written, edge) != "" {
		t.Error("a note for a copy with no drift")
	}
	held := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		o = o.DeepCopy()
		a := o.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[DriftPutBackAnnotation] = note
		o.SetAnnotations(a)
		return o
	}
	if PutBack(held(hotfix)) {
		t.Error("the hotfix counts as put back")
	}
	// Put back one field at a time: only the last makes it put back.
	partly := held(hotfix)
	_ = unstructured.SetNestedField(partly.Object, int64(1), "spec", "replicas")
	_ = unstructured.SetNestedStringMap(partly.Object, map[string]string{"site": "a", "zone": "z"}, "spec", "template", "spec", "nodeSelector")
	if PutBack(partly) {
		t.Error("put back while the command is still the hotfix's")
	}
	undone := held(edge)
	undone.SetLabels(map[string]string{"app": "web", "edge-only": "x"}) // another change at the edge: not the hold's
	_ = unstructured.SetNestedStringMap(undone.Object, map[string]string{"site": "a", "zone": "z"}, "spec", "template", "spec", "nodeSelector")
	if !PutBack(undone) {
		t.Errorf("not put back: %s against %v", note, undone.Object["spec"])
	}
	if PutBack(edge) {
		t.Error("put back without a note")
	}
	bad := held(edge)
	bad.SetAnnotations(map[string]string{DriftPutBackAnnotation: "{"})
	if PutBack(bad) {
		t.Error("an unreadable note counts as put back")
	}
	// Too large to note: no note (such a hold ends by acknowledgement).
	big := hotfix.DeepCopy()
	_ = unstructured.SetNestedField(big.Object, strings.Repeat("x", maxPutBackBytes), "spec", "template", "spec", "hostname")
	wbig := written.DeepCopy()
	_ = unstructured.SetNestedField(wbig.Object, strings.Repeat("y", maxPutBackBytes), "spec", "template", "spec", "hostname")
	if n := PutBackNote(wbig, big); n != "" {
		t.Errorf("a note of %d bytes", len(n))
	}
	// A mailbox cannot write the note through the object it sends: never copied to the edge.
	forged := up.DeepCopy()
	forged.SetAnnotations(map[string]string{DriftPutBackAnnotation: `[{"field":["spec","replicas"],"value":3}]`, DriftHeldAnnotation: "x y"})
	copied, err := ToDownstream(forged, Options{OwnerLabelValue: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if a := copied.GetAnnotations(); a[DriftPutBackAnnotation] != "" || a[DriftHeldAnnotation] != "" {
		t.Errorf("the hold's notes copied from upstream: %v", a)
	}
}
