package mapping

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func mustObj(t testing.TB, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const upstreamService = `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"app","uid":"u1",
 "resourceVersion":"42","generation":3,"creationTimestamp":"2024-01-01T00:00:00Z","managedFields":[{"manager":"kubectl"}],
 "ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o","uid":"u0"}],"finalizers":["f"],
 "labels":{"app":"web","executing.edge.kubestellar.io/edge2":"true"},"annotations":{"kcp.io/cluster":"root:mb","internal.workload.kcp.io/x":"y",
 "kubectl.kubernetes.io/last-applied-configuration":"{}","note":"kept","executing.edge.kubestellar.io/edge2":"t",
 "note.kubestellar.io/x":"kept too"}},
 "spec":{"clusterIP":"10.0.0.5","clusterIPs":["10.0.0.5"],"type":"NodePort","ports":[{"port":80,"nodePort":30080}],"healthCheckNodePort":31000},
 "status":{"loadBalancer":{}}}`

func TestToDownstreamStripsSourceFields(t *testing.T) {
	up := mustObj(t, upstreamService)
	before, _ := json.Marshal(up.Object)
	down, err := ToDownstream(up, Options{OwnerLabelValue: "edge1"})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(up.Object)
	if string(before) != string(after) {
		t.Fatal("ToDownstream modified its input")
	}
	meta := down.Object["metadata"].(map[string]interface{})
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "ownerReferences", "finalizers"} {
		if _, ok := meta[f]; ok {
			t.Errorf("metadata.%s copied", f)
		}
	}
	if _, ok := down.Object["status"]; ok {
		t.Error("status copied")
	}
	for _, path := range [][]string{{"spec", "clusterIP"}, {"spec", "clusterIPs"}, {"spec", "healthCheckNodePort"}} {
		if _, ok, _ := unstructured.NestedFieldNoCopy(down.Object, path...); ok {
			t.Errorf("%v copied", path)
		}
	}
	ports, _, _ := unstructured.NestedSlice(down.Object, "spec", "ports")
	if _, ok := ports[0].(map[string]interface{})["nodePort"]; ok {
		t.Error("nodePort copied")
	}
	ann := down.GetAnnotations()
	if ann["note"] != "kept" || ann["note.kubestellar.io/x"] != "kept too" || ann[DownsyncedAnnotation] != "Service/app/web" || ann[HashAnnotation] == "" {
		t.Errorf("annotations = %v", ann)
	}
	for _, k := range []string{"kcp.io/cluster", "internal.workload.kcp.io/x", "kubectl.kubernetes.io/last-applied-configuration", "executing.edge.kubestellar.io/edge2"} {
		if _, ok := ann[k]; ok {
			t.Errorf("annotation %s copied", k)
		}
	}
	if _, ok := down.GetLabels()["executing.edge.kubestellar.io/edge2"]; ok {
		t.Error("per-target signal label copied")
	}
	if down.GetLabels()[OwnerLabel] != "edge1" || down.GetLabels()["app"] != "web" {
		t.Errorf("labels = %v", down.GetLabels())
	}
	if !OwnedDownstream(down) {
		t.Error("the mapped object is not owned")
	}
}

func TestHeadlessServiceKeepsClusterIPNone(t *testing.T) {
	up := mustObj(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"h","namespace":"a"},"spec":{"clusterIP":"None","clusterIPs":["None"]}}`)
	down, _ := ToDownstream(up, Options{})
	if ip, _, _ := unstructured.NestedString(down.Object, "spec", "clusterIP"); ip != "None" {
		t.Errorf("clusterIP = %q, want None", ip)
	}
}

func TestJobSelectorIsTheDestinationsToGenerate(t *testing.T) {
	up := mustObj(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"a"},
	 "spec":{"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"u1"}},
	 "template":{"metadata":{"labels":{"batch.kubernetes.io/controller-uid":"u1","controller-uid":"u1","job-name":"j","app":"x"}},"spec":{}}}}`)
	down, _ := ToDownstream(up, Options{})
	if _, ok, _ := unstructured.NestedFieldNoCopy(down.Object, "spec", "selector"); ok {
		t.Error("generated selector copied")
	}
	labels, _, _ := unstructured.NestedStringMap(down.Object, "spec", "template", "metadata", "labels")
	if len(labels) != 1 || labels["app"] != "x" {
		t.Errorf("template labels = %v", labels)
	}
	manual := mustObj(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"a"},"spec":{"manualSelector":true,"selector":{"matchLabels":{"a":"b"}}}}`)
	down, _ = ToDownstream(manual, Options{})
	if _, ok, _ := unstructured.NestedFieldNoCopy(down.Object, "spec", "selector"); !ok {
		t.Error("a manual selector was dropped")
	}
}

func TestOwnedMarkIsArmored(t *testing.T) {
	rs := mustObj(t, `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web-123","namespace":"a",
	 "annotations":{"edge.kubestellar.io/downsynced":"Deployment/a/web"}}}`)
	if OwnedDownstream(rs) {
		t.Error("a ReplicaSet carrying its Deployment's mark counts as owned")
	}
}

func TestUpToDate(t *testing.T) {
	up := mustObj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"a","labels":{"x":"1"}},
	 "spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"i:1","resources":{}}]}}}}`)
	desired, _ := ToDownstream(up, Options{OwnerLabelValue: "e"})
	actual := desired.DeepCopy()
	// What the edge adds (defaults, other labels, status, bookkeeping) is no difference.
	actual.SetResourceVersion("7")
	actual.SetUID("u")
	labels := actual.GetLabels()
	labels["added-at-edge"] = "yes"
	actual.SetLabels(labels)
	_ = unstructured.SetNestedField(actual.Object, int64(600), "spec", "progressDeadlineSeconds")
	containers, _, _ := unstructured.NestedSlice(actual.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]interface{})
	c["terminationMessagePath"] = "/dev/termination-log"
	delete(c, "resources") // an empty value the server may drop
	_ = unstructured.SetNestedSlice(actual.Object, containers, "spec", "template", "spec", "containers")
	_ = unstructured.SetNestedField(actual.Object, int64(2), "status", "replicas")
	if !UpToDate(desired, actual) {
		t.Fatal("an object with only edge additions is not up to date")
	}
	// JSON numbers decode as float64 in some paths; they are the same number.
	_ = unstructured.SetNestedField(actual.Object, float64(2), "spec", "replicas")
	if !UpToDate(desired, actual) {
		t.Fatal("2 and 2.0 differ")
	}

	drifted := actual.DeepCopy()
	_ = unstructured.SetNestedField(drifted.Object, int64(5), "spec", "replicas")
	if UpToDate(desired, drifted) {
		t.Error("a changed owned field is up to date")
	}
	unlabelled := actual.DeepCopy()
	unlabelled.SetLabels(map[string]string{"x": "1"})
	if UpToDate(desired, unlabelled) {
		t.Error("a removed owner label is up to date")
	}
	extraContainer := actual.DeepCopy()
	containers = append(containers, map[string]interface{}{"name": "sidecar"})
	_ = unstructured.SetNestedSlice(extraContainer.Object, containers, "spec", "template", "spec", "containers")
	if UpToDate(desired, extraContainer) {
		t.Error("a list of another length is up to date")
	}
	// A field removed upstream changes the digest, though the downstream object still has the field.
	up2 := up.DeepCopy()
	up2.SetLabels(nil)
	desired2, _ := ToDownstream(up2, Options{OwnerLabelValue: "e"})
	if UpToDate(desired2, actual) {
		t.Error("a field removed upstream goes unnoticed")
	}
	if UpToDate(desired, nil) {
		t.Error("a missing object is up to date")
	}
}

func TestEqualApartFromStatus(t *testing.T) {
	a := mustObj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","resourceVersion":"1","managedFields":[]},"data":{"k":"v"},"status":{"x":1}}`)
	b := a.DeepCopy()
	b.SetResourceVersion("2")
	_ = unstructured.SetNestedField(b.Object, int64(2), "status", "x")
	if !EqualApartFromStatus(a, b) {
		t.Error("status and resourceVersion changes count")
	}
	_ = unstructured.SetNestedField(b.Object, "w", "data", "k")
	if EqualApartFromStatus(a, b) {
		t.Error("a data change does not count")
	}
}

func TestOwnerLabelValue(t *testing.T) {
	for in, want := range map[string]string{"": "syncer", "edge-1": "edge-1", "florin.example": "florin.example"} {
		if got := OwnerLabelValue(in); got != want {
			t.Errorf("OwnerLabelValue(%q) = %q, want %q", in, got, want)
		}
	}
	long := OwnerLabelValue("a-very-long-sync-target-name-that-goes-on-and-on-well-beyond-sixty-three")
	if len(long) > 63 || long == OwnerLabelValue("a-very-long-sync-target-name-that-goes-on-and-on-well-beyond-sixty-four") {
		t.Errorf("long names: %q", long)
	}
	if v := OwnerLabelValue("odd/name with spaces"); v == "odd/name with spaces" || len(v) > 63 {
		t.Errorf("odd name: %q", v)
	}
}

const edgeReport = `{"apiVersion":"wgpolicyk8s.io/v1alpha2","kind":"PolicyReport","metadata":{"name":"r","namespace":"policy","uid":"u1",
 "resourceVersion":"7","generation":2,"creationTimestamp":"2024-01-01T00:00:00Z","managedFields":[{"manager":"kyverno"}],
 "ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"edge-uid"}],
 "labels":{"app":"kyverno","edge.kubestellar.io/downsynced-by":"someone"},"annotations":{"note":"kept","edge.kubestellar.io/downsync-hash":"x"}},
 "summary":{"fail":1},"status":{"phase":"Done"}}`

func TestToUpstream(t *testing.T) {
	down := mustObj(t, edgeReport)
	before, _ := json.Marshal(down.Object)
	up, err := ToUpstream(down, Options{OwnerLabelValue: "edge1"})
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(down.Object); string(after) != string(before) {
		t.Error("ToUpstream modified its input")
	}
	if !OwnedUpstream(up) || up.GetAnnotations()[UpsyncedAnnotation] != "PolicyReport/policy/r" {
		t.Errorf("mark: %v", up.GetAnnotations())
	}
	if up.GetLabels()[UpsyncOwnerLabel] != "edge1" || up.GetLabels()[OwnerLabel] != "" || up.GetLabels()["app"] != "kyverno" {
		t.Errorf("labels: %v", up.GetLabels())
	}
	if up.GetAnnotations()["note"] != "kept" || up.GetAnnotations()[HashAnnotation] != "" || up.GetAnnotations()[UpsyncHashAnnotation] == "" {
		t.Errorf("annotations: %v", up.GetAnnotations())
	}
	if up.GetUID() != "" || up.GetResourceVersion() != "" || len(up.GetOwnerReferences()) != 0 || up.GetManagedFields() != nil || up.GetGeneration() != 0 {
		t.Errorf("edge metadata kept: %v", up.Object["metadata"])
	}
	if s, _, _ := unstructured.NestedString(up.Object, "status", "phase"); s != "Done" {
		t.Error("status dropped")
	}
	if !UpsyncedUpToDate(up, up) || !StatusEqual(up, up) {
		t.Error("a copy is not up to date with itself")
	}
	// A server-populated copy (uid, resourceVersion) is still up to date.
	server := up.DeepCopy()
	server.SetUID("up-uid")
	server.SetResourceVersion("99")
	if !UpsyncedUpToDate(up, server) {
		t.Error("server fields made the copy look stale")
	}
	// A content change changes the digest; a status change does not, but StatusEqual sees it.
	changed := down.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, int64(2), "summary", "fail")
	up2, _ := ToUpstream(changed, Options{OwnerLabelValue: "edge1"})
	if UpsyncedUpToDate(up2, server) {
		t.Error("content change not seen")
	}
	restatus := down.DeepCopy()
	_ = unstructured.SetNestedField(restatus.Object, "Failed", "status", "phase")
	up3, _ := ToUpstream(restatus, Options{OwnerLabelValue: "edge1"})
	if !UpsyncedUpToDate(up3, server) || StatusEqual(up3, server) {
		t.Error("a status change must leave the content up to date and the status different")
	}
	noStatus := mustObj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`)
	emptyStatus := mustObj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"status":{}}`)
	if !StatusEqual(noStatus, emptyStatus) || StatusEqual(noStatus, up) {
		t.Error("StatusEqual on absent/empty status")
	}
}

// TestClusterRecorded: a logical cluster, when given, is recorded in the marks and survives the
// digest; without one nothing is added, so single-workspace objects keep their marks unchanged.
func TestClusterRecorded(t *testing.T) {
	up := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "x", "namespace": "a"}}}
	one, err := ToDownstream(up, Options{OwnerLabelValue: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := one.GetAnnotations()[ClusterAnnotation]; ok || ClusterOf(one) != "" {
		t.Errorf("single workspace got a cluster mark: %v", one.GetAnnotations())
	}
	many, err := ToDownstream(up, Options{OwnerLabelValue: "t", Cluster: "root:ws1"})
	if err != nil {
		t.Fatal(err)
	}
	if ClusterOf(many) != "root:ws1" || !OwnedDownstream(many) {
		t.Errorf("cluster mark %q, owned %v", ClusterOf(many), OwnedDownstream(many))
	}
	if many.GetAnnotations()[HashAnnotation] == one.GetAnnotations()[HashAnnotation] {
		t.Error("the digest does not cover the cluster mark")
	}
}

func TestSystemObject(t *testing.T) {
	obj := func(kind, name string, fields map[string]interface{}) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": kind}}
		for k, v := range fields {
			o.Object[k] = v
		}
		o.SetName(name)
		o.SetNamespace("demo")
		return o
	}
	cms := schema.GroupResource{Resource: "configmaps"}
	sas := schema.GroupResource{Resource: "serviceaccounts"}
	secrets := schema.GroupResource{Resource: "secrets"}
	for _, tc := range []struct {
		gr   schema.GroupResource
		obj  *unstructured.Unstructured
		want bool
	}{
		{cms, obj("ConfigMap", "kube-root-ca.crt", nil), true},
		{cms, obj("ConfigMap", "openshift-service-ca.crt", nil), true},
		{cms, obj("ConfigMap", "app-config", nil), false},
		{sas, obj("ServiceAccount", "default", nil), true},
		{sas, obj("ServiceAccount", "builder", nil), false},
		{secrets, obj("Secret", "builder-token", map[string]interface{}{"type": "kubernetes.io/service-account-token"}), true},
		{secrets, obj("Secret", "tls", map[string]interface{}{"type": "kubernetes.io/tls"}), false},
		{schema.GroupResource{Group: "example.com", Resource: "configmaps"}, obj("ConfigMap", "kube-root-ca.crt", nil), false},
	} {
		if got := SystemObject(tc.gr, tc.obj); got != tc.want {
			t.Errorf("SystemObject(%s %s) = %v, want %v", tc.gr, tc.obj.GetName(), got, tc.want)
		}
	}
}
