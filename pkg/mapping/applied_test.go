package mapping

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const manager = "kubestellar-syncer"

// desiredDeployment is what downsync applies: defaults from the upstream apiserver included.
const desiredDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"app",
 "labels":{"app":"web","edge.kubestellar.io/downsynced-by":"edge1"},
 "annotations":{"edge.kubestellar.io/downsynced":"Deployment/app/web","edge.kubestellar.io/downsync-hash":"h1"}},
 "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
  "template":{"metadata":{"labels":{"app":"web"},"creationTimestamp":null},
   "spec":{"containers":[{"name":"web","image":"nginx:1","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{}},
                         {"name":"side","image":"busybox","args":["sleep","1d"]}],
    "securityContext":{}}}}}`

// actualDeployment is the edge's object after that apply, as the apiserver returns it: identity,
// defaults of its own (imagePullPolicy, strategy), a field of another manager (an annotation the
// deployment controller writes), status, and the managedFields saying who owns what.
const actualDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"app","uid":"u1",
 "resourceVersion":"7","generation":1,"creationTimestamp":"2026-01-01T00:00:00Z",
 "labels":{"app":"web","edge.kubestellar.io/downsynced-by":"edge1"},
 "annotations":{"edge.kubestellar.io/downsynced":"Deployment/app/web","edge.kubestellar.io/downsync-hash":"h1","deployment.kubernetes.io/revision":"1"},
 "managedFields":[
  {"manager":"kubestellar-syncer","operation":"Apply","apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":{
   "f:metadata":{"f:annotations":{"f:edge.kubestellar.io/downsync-hash":{},"f:edge.kubestellar.io/downsynced":{}},
                 "f:labels":{"f:app":{},"f:edge.kubestellar.io/downsynced-by":{}}},
   "f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{
     "f:containers":{
      "k:{\"name\":\"side\"}":{".":{},"f:args":{},"f:image":{},"f:name":{}},
      "k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{}}},
     "f:securityContext":{}}}}}},
  {"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":{
   "f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}}}},
  {"manager":"kube-controller-manager","operation":"Update","subresource":"status","apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":{
   "f:status":{"f:replicas":{}}}}]},
 "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"strategy":{"type":"RollingUpdate"},
  "template":{"metadata":{"labels":{"app":"web"},"creationTimestamp":null},
   "spec":{"containers":[{"name":"web","image":"nginx:1","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{},"imagePullPolicy":"IfNotPresent"},
                         {"name":"side","image":"busybox","args":["sleep","1d"],"imagePullPolicy":"Always"}],
    "restartPolicy":"Always","securityContext":{}}}},
 "status":{"replicas":2}}`

func TestSlimUpToDateAfterApply(t *testing.T) {
	desired, actual := mustObj(t, desiredDeployment), mustObj(t, actualDeployment)
	if !UpToDate(desired, Slim(actual, manager)) {
		t.Errorf("an object just applied is not up to date; its applied fields: %v", AppliedFields(actual, manager))
	}
	if UpToDate(desired, Slim(actual, "someone-else")) {
		t.Error("up to date through a manager that owns nothing")
	}
}

// TestSlimSeesDrift: a field another manager changed leaves the syncer's set, a field removed
// leaves every set, and a value changed in place changes its digest; what others own, what the edge
// defaults and fields applied empty that others fill do not count.
func TestSlimSeesDrift(t *testing.T) {
	desired := mustObj(t, desiredDeployment)
	cases := []struct {
		name    string
		edit    func(actual map[string]interface{}, ours map[string]interface{})
		drifted bool
	}{
		{"another manager's annotation changed", func(a, _ map[string]interface{}) {
			_ = unstructured.SetNestedField(a, "2", "metadata", "annotations", "deployment.kubernetes.io/revision")
		}, false},
		{"an edge default changed", func(a, _ map[string]interface{}) {
			_ = unstructured.SetNestedField(a, "Recreate", "spec", "strategy", "type")
		}, false},
		{"status changed", func(a, _ map[string]interface{}) {
			_ = unstructured.SetNestedField(a, int64(0), "status", "replicas")
		}, false},
		{"a map applied empty filled at the edge (a LimitRange's defaults)", func(a, _ map[string]interface{}) {
			c, _, _ := unstructured.NestedSlice(a, "spec", "template", "spec", "containers")
			c[0].(map[string]interface{})["resources"] = map[string]interface{}{"limits": map[string]interface{}{"cpu": "1"}}
			_ = unstructured.SetNestedSlice(a, c, "spec", "template", "spec", "containers")
		}, false},
		{"replicas taken by another manager (an update)", func(a, ours map[string]interface{}) {
			_ = unstructured.SetNestedField(a, int64(5), "spec", "replicas")
			unstructured.RemoveNestedField(ours, "f:spec", "f:replicas")
		}, true},
		{"a label removed", func(a, ours map[string]interface{}) {
			unstructured.RemoveNestedField(a, "metadata", "labels", "app")
			unstructured.RemoveNestedField(ours, "f:metadata", "f:labels", "f:app")
		}, true},
		{"a container's image taken", func(a, ours map[string]interface{}) {
			c, _, _ := unstructured.NestedSlice(a, "spec", "template", "spec", "containers")
			c[0].(map[string]interface{})["image"] = "nginx:2"
			_ = unstructured.SetNestedSlice(a, c, "spec", "template", "spec", "containers")
			unstructured.RemoveNestedField(ours, "f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"web"}`, "f:image")
		}, true},
		{"a container removed", func(a, ours map[string]interface{}) {
			c, _, _ := unstructured.NestedSlice(a, "spec", "template", "spec", "containers")
			_ = unstructured.SetNestedSlice(a, c[:1], "spec", "template", "spec", "containers")
			unstructured.RemoveNestedField(ours, "f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"side"}`)
		}, true},
		{"an atomic value the edge added defaults to", func(a, _ map[string]interface{}) {
			_ = unstructured.SetNestedField(a, "v1", "spec", "selector", "apiVersion")
		}, false},
		{"an atomic value changed in place (the digest is of values, not only of the set)", func(a, _ map[string]interface{}) {
			_ = unstructured.SetNestedStringMap(a, map[string]string{"app": "other"}, "spec", "selector", "matchLabels")
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			actual := mustObj(t, actualDeployment)
			fields := actual.GetManagedFields()
			var ours map[string]interface{}
			if err := json.Unmarshal(fields[0].FieldsV1.Raw, &ours); err != nil {
				t.Fatal(err)
			}
			tc.edit(actual.Object, ours)
			raw, _ := json.Marshal(ours)
			fields[0].FieldsV1.Raw = raw
			actual.SetManagedFields(fields)
			if got := !UpToDate(desired, Slim(actual, manager)); got != tc.drifted {
				t.Errorf("drift seen = %v, want %v", got, tc.drifted)
			}
		})
	}
}

// TestSlimFieldsAppliedEmpty: a list applied empty only has to stay the syncer's: filled by others
// while it is, it matches; taken by another manager (an edit adding a rule to a Role's empty
// rules), it is drift.
func TestSlimFieldsAppliedEmpty(t *testing.T) {
	desired := mustObj(t, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r","namespace":"app",
	 "annotations":{"edge.kubestellar.io/downsync-hash":"h1"}},"rules":[]}`)
	actual := func(ours string) *unstructured.Unstructured {
		return mustObj(t, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r","namespace":"app",
		 "annotations":{"edge.kubestellar.io/downsync-hash":"h1"},
		 "managedFields":[{"manager":"kubestellar-syncer","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":`+ours+`},
		  {"manager":"kubectl-edit","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:rules":{}}}]},
		 "rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`)
	}
	stillOurs := actual(`{"f:metadata":{"f:annotations":{"f:edge.kubestellar.io/downsync-hash":{}}},"f:rules":{}}`)
	if !UpToDate(desired, Slim(stillOurs, manager)) {
		t.Error("a list applied empty and still owned is not up to date")
	}
	taken := actual(`{"f:metadata":{"f:annotations":{"f:edge.kubestellar.io/downsync-hash":{}}}}`)
	if UpToDate(desired, Slim(taken, manager)) {
		t.Error("a list applied empty, then taken and filled by another manager, is up to date: drift never corrected")
	}
}

func TestProjectSetsAndIndexes(t *testing.T) {
	var v interface{} = []interface{}{"a", "b", "c"}
	set := map[string]interface{}{`v:"c"`: map[string]interface{}{}, "i:0": map[string]interface{}{}}
	got, _ := json.Marshal(project(v, set))
	if want, _ := json.Marshal([]interface{}{valueDigest("a"), valueDigest("c")}); string(got) != string(want) {
		t.Errorf("project = %s, want %s", got, want)
	}
	// A set naming nothing below the value owns it whole (an atomic list or map): its shape, each
	// scalar digested.
	got, _ = json.Marshal(project(map[string]interface{}{"x": int64(1), "l": []interface{}{"a"}, "n": nil}, map[string]interface{}{}))
	if want, _ := json.Marshal(map[string]interface{}{"x": valueDigest(int64(1)), "l": []interface{}{valueDigest("a")}}); string(got) != string(want) {
		t.Errorf("project of a leaf = %s, want %s", got, want)
	}
}

func TestSlim(t *testing.T) {
	actual := mustObj(t, actualDeployment)
	before, _ := json.Marshal(actual.Object)
	s := Slim(actual, manager)
	if after, _ := json.Marshal(actual.Object); string(after) != string(before) {
		t.Fatal("Slim changed its input")
	}
	if _, ok := s.Object["spec"]; ok {
		t.Error("spec kept")
	}
	if s.GetManagedFields() != nil {
		t.Error("managedFields kept")
	}
	if s.GetName() != "web" || s.GetResourceVersion() != "7" || s.GetLabels()["app"] != "web" || s.GetAnnotations()[HashAnnotation] != "h1" {
		t.Errorf("metadata not kept: %v", s.Object["metadata"])
	}
	if r, _, _ := unstructured.NestedFieldNoCopy(s.Object, "status", "replicas"); r != float64(2) {
		t.Error("status not kept")
	}
	desired := mustObj(t, desiredDeployment)
	if !UpToDate(desired, s) {
		t.Error("UpToDate(desired, slim copy of the object just applied) = false")
	}
	changed := desired.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, int64(3), "spec", "replicas")
	if UpToDate(changed, s) {
		t.Error("UpToDate = true for a changed desired object with the same hash annotation")
	}

	svc := mustObj(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"clusterIP":"None","ports":[{"port":80}]}}`)
	if ip, _, _ := unstructured.NestedString(Slim(svc, manager).Object, "spec", "clusterIP"); ip != "None" {
		t.Errorf("a Service's clusterIP not kept (ReplaceOnly reads it): %q", ip)
	}
	// Without an entry of the manager, the slim copy is never up to date: the next process applies.
	if UpToDate(desired, Slim(svc, manager)) {
		t.Error("UpToDate = true for a slim object without the manager's fields")
	}
}

// BenchmarkSlim is the transform's cost per edge event of a Deployment (digest of the owned fields
// included), beside UpToDate's per process.
func BenchmarkSlim(b *testing.B) {
	actual := mustObj(b, actualDeployment)
	b.ReportAllocs()
	for b.Loop() {
		Slim(actual, manager)
	}
}

func BenchmarkUpToDateSlim(b *testing.B) {
	desired, actual := mustObj(b, desiredDeployment), Slim(mustObj(b, actualDeployment), manager)
	b.ReportAllocs()
	for b.Loop() {
		if !UpToDate(desired, actual) {
			b.Fatal("not up to date")
		}
	}
}

// TestSlimAfterPlainCreate: an object the syncer made by a plain create has its fields under the
// manager's update entry, with the defaults the apiserver added (strategy, imagePullPolicy). The slim
// copy keeps that entry (without its fields, with its place in managedFields while the manager has
// no apply entry), and is up to date with the desired object.
func TestSlimAfterPlainCreate(t *testing.T) {
	created := mustObj(t, strings.Replace(actualDeployment, `"operation":"Apply"`, `"operation":"Update"`, 1))
	desired := mustObj(t, desiredDeployment)
	s := Slim(created, manager)
	if !CreatedByUpdate(s, manager) || CreatedByUpdate(s, "someone-else") || CreatedByUpdate(Slim(mustObj(t, actualDeployment), manager), manager) {
		t.Errorf("CreatedByUpdate wrong; the slim copy's managedFields: %v", s.Object["metadata"].(map[string]interface{})["managedFields"])
	}
	if !UpToDate(desired, s) {
		t.Errorf("an object just created is not up to date; its fields: %v", AppliedFields(created, manager))
	}
	if i, ok := CreatedIndex(s, manager); !ok || i != 0 {
		t.Errorf("CreatedIndex of the slim copy = %d, %v; want 0 (the entry's place on the server)", i, ok)
	}
	// Its place survives the cache's JSON, and a second transform.
	data, _ := json.Marshal(s.Object)
	again := &unstructured.Unstructured{}
	if err := again.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	if i, ok := CreatedIndex(Slim(again, manager), manager); !ok || i != 0 {
		t.Errorf("CreatedIndex after the cache's JSON = %d, %v", i, ok)
	}

	// Second in managedFields, and with an apply entry of the manager beside it: the entry is kept,
	// its place only while the manager has no apply entry.
	second := mustObj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","managedFields":[
	 {"manager":"other","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:o":{}}}},
	 {"manager":"kubestellar-syncer","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{}}}}]},"data":{"k":"v","o":"x"}}`)
	if i, ok := CreatedIndex(second, manager); !ok || i != 1 {
		t.Errorf("CreatedIndex = %d, %v; want 1", i, ok)
	}
	if i, ok := CreatedIndex(Slim(second, manager), manager); !ok || i != 1 {
		t.Errorf("CreatedIndex of the slim copy = %d, %v; want 1", i, ok)
	}
	both := mustObj(t, strings.ReplaceAll(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","managedFields":[
	 {"manager":"kubestellar-syncer","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:o":{}}}},
	 {"manager":"kubestellar-syncer","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{}}}}]},"data":{"k":"v","o":"x"}}`, "\n", ""))
	if _, ok := CreatedIndex(both, manager); ok || !CreatedByUpdate(Slim(both, manager), manager) {
		t.Error("with an apply entry beside the update entry: the entry must be kept, without a place (the hand-over merges them)")
	}
	if _, ok := CreatedIndex(Slim(both, manager), manager); ok {
		t.Error("the slim copy of an object with both entries has a place")
	}
}

// TestSlimCreatedEmptyFields: a plain create records no field of an empty optional map (the edge's
// types leave it out), so an object made that way is up to date without owning it; one made by an
// apply, which records what it applied, must own it.
func TestSlimCreatedEmptyFields(t *testing.T) {
	desired := mustObj(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"app","annotations":{"edge.kubestellar.io/downsync-hash":"h1"}},
	 "spec":{"template":{"metadata":{"labels":{}},"spec":{"restartPolicy":"Never"}}}}`)
	actual := func(op string) *unstructured.Unstructured {
		return mustObj(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"app","annotations":{"edge.kubestellar.io/downsync-hash":"h1"},
		 "managedFields":[{"manager":"kubestellar-syncer","operation":"`+op+`","fieldsType":"FieldsV1","fieldsV1":{
		  "f:metadata":{"f:annotations":{"f:edge.kubestellar.io/downsync-hash":{}}},"f:spec":{"f:template":{"f:spec":{"f:restartPolicy":{}}}}}}]},
		 "spec":{"template":{"metadata":{"labels":{"batch.kubernetes.io/job-name":"j"}},"spec":{"restartPolicy":"Never"}}}}`)
	}
	if !UpToDate(desired, Slim(actual("Update"), manager)) {
		t.Error("made by a plain create: an empty map it could not record makes it not up to date")
	}
	if UpToDate(desired, Slim(actual("Apply"), manager)) {
		t.Error("made by an apply: an empty map applied but not owned is up to date")
	}
}
