package mapping

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The fuzz tests build their objects from the fuzzer's bytes in a structured way: one of the
// realistic objects below (the user's own content), fuzzed names, labels, annotations and data
// added to it, and then, on a copy, everything the cluster it was read from and the syncer's other
// direction add (server metadata, kcp's and kubectl's annotations, stale or foreign marks, fields
// the apiserver allocates, status). So each property knows what must go, what must stay and what
// must be added. FuzzMappingJSON feeds arbitrary JSON instead.

const (
	lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
	// fuzzUpsyncPrefix starts every annotation upsync writes on an upstream copy: the mark, its
	// digest, and whatever else the mark comes to record (the edge object's UID).
	fuzzUpsyncPrefix = "edge.kubestellar.io/upsync"
)

var fuzzTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// fuzzKinds are the objects the structured fuzz tests start from, as a user would write them.
var fuzzKinds = []struct {
	obj        string
	namespaced bool
	userMap    []string // a string map of the user's that takes fuzzed entries
	number     []string // an integer of the user's that takes a fuzzed value
}{
	{`{"apiVersion":"v1","kind":"ConfigMap","data":{"config.yaml":"a: 1\n"}}`, true, []string{"data"}, nil},
	{`{"apiVersion":"v1","kind":"Secret","type":"Opaque","data":{"password":"c2VjcmV0"}}`, true, []string{"stringData"}, nil},
	{`{"apiVersion":"v1","kind":"Service","spec":{"type":"NodePort","selector":{"app":"web"},
	  "ports":[{"name":"http","port":80,"targetPort":8080,"protocol":"TCP"},{"name":"m","port":9090}]}}`, true, []string{"spec", "selector"}, nil},
	{`{"apiVersion":"v1","kind":"Service","spec":{"type":"ClusterIP","selector":{"app":"api"},"ports":[{"port":443,"targetPort":"https"}]}}`,
		true, []string{"spec", "selector"}, nil},
	{`{"apiVersion":"v1","kind":"Service","spec":{"clusterIP":"None","clusterIPs":["None"],"selector":{"app":"db"},"ports":[{"port":5432}]}}`,
		true, []string{"spec", "selector"}, nil},
	{`{"apiVersion":"v1","kind":"Service","spec":{"type":"LoadBalancer","externalTrafficPolicy":"Local","selector":{"app":"lb"},
	  "ports":[{"port":443}]}}`, true, []string{"spec", "selector"}, nil},
	{`{"apiVersion":"batch/v1","kind":"Job","spec":{"backoffLimit":4,"template":{"metadata":{"labels":{"app":"batch"}},
	  "spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox","command":["sh","-c","true"]}]}}}}`,
		true, []string{"spec", "template", "metadata", "annotations"}, []string{"spec", "backoffLimit"}},
	{`{"apiVersion":"batch/v1","kind":"Job","spec":{"manualSelector":true,"selector":{"matchLabels":{"app":"m"}},
	  "template":{"metadata":{"labels":{"app":"m"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`,
		true, []string{"spec", "selector", "matchLabels"}, nil},
	{`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},
	  "strategy":{"type":"RollingUpdate"},"template":{"metadata":{"labels":{"app":"web"}},
	  "spec":{"containers":[{"name":"web","image":"nginx:1.25","ports":[{"containerPort":8080}],"resources":{}}]}}}}`,
		true, []string{"spec", "template", "metadata", "labels"}, []string{"spec", "replicas"}},
	{`{"apiVersion":"v1","kind":"PersistentVolumeClaim","spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard",
	  "resources":{"requests":{"storage":"1Gi"}}}}`, true, []string{"spec", "resources", "requests"}, nil},
	{`{"apiVersion":"v1","kind":"ServiceAccount","automountServiceAccountToken":false,"imagePullSecrets":[{"name":"registry"}]}`, true, nil, nil},
	{`{"apiVersion":"v1","kind":"Namespace","spec":{}}`, false, nil, nil},
	{`{"apiVersion":"v1","kind":"Pod","spec":{"restartPolicy":"Always","containers":[{"name":"c","image":"busybox","args":["sleep","1d"]}]}}`,
		true, []string{"spec", "nodeSelector"}, nil},
	{`{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":3,"ratio":0.25,"enabled":true,"tags":["a","b"],
	  "nested":{"list":[{"k":"v"},[1,2]],"empty":{},"none":null}}}`, true, []string{"spec", "labels"}, []string{"spec", "size"}},
	// Kinds of other groups named like built-in ones: their fields are the user's, nothing is allocated.
	{`{"apiVersion":"example.com/v1","kind":"Service","spec":{"clusterIP":"10.1.2.3","clusterIPs":["10.1.2.3"],
	  "healthCheckNodePort":31000,"ports":[{"port":80,"nodePort":30080}]}}`, true, []string{"spec", "selector"}, nil},
	{`{"apiVersion":"example.com/v1","kind":"Job","spec":{"selector":{"matchLabels":{"job-name":"x"}},
	  "template":{"metadata":{"labels":{"job-name":"x","controller-uid":"mine"}}}}}`, true, nil, nil},
	{`{"apiVersion":"example.com/v1alpha1","kind":"ClusterPolicy","spec":{"rules":[{"action":"deny","match":{"kinds":["Pod"]}}]}}`,
		false, []string{"spec", "parameters"}, nil},
}

// userKeys are label and annotation keys a user may write, some close to keys the mapping strips.
var userKeys = []string{"app", "app.kubernetes.io/name", "note", OverwriteAnnotation, RecreateAnnotation,
	"edge.kubestellar.io/placement", "kcp.io", "notkcp.io/x", "kcp.io.example.com/x", "example.com/kcp.io",
	"kubectl.kubernetes.io/restartedAt"}

// userAnnotation tells whether an annotation is the user's: not the source cluster's (kcp's,
// kubectl's last-applied) and none of the syncer's marks, of either direction.
func userAnnotation(k string) bool {
	domain, _, found := strings.Cut(k, "/")
	switch {
	case k == lastApplied, found && (domain == "kcp.io" || strings.HasSuffix(domain, ".kcp.io")):
		return false
	case k == DownsyncedAnnotation, k == HashAnnotation, k == ClusterAnnotation, strings.HasPrefix(k, fuzzUpsyncPrefix):
		return false
	}
	return true
}

// userLabel tells whether a label is the user's: not one of the syncer's owner labels.
func userLabel(k string) bool { return k != OwnerLabel && k != UpsyncOwnerLabel }

// choices reads the fuzzer's bytes as a sequence of decisions. Once they run out every decision is
// no, zero or the empty string, so a short input gives a small object.
type choices struct{ b []byte }

func (c *choices) next() byte {
	if len(c.b) == 0 {
		return 0
	}
	v := c.b[0]
	c.b = c.b[1:]
	return v
}

func (c *choices) flag() bool { return c.next()&1 == 1 }

func (c *choices) intn(n int) int { return (int(c.next())<<8 | int(c.next())) % n }

// str is a short valid UTF-8 string: objects come from an apiserver's JSON.
func (c *choices) str() string {
	n := min(c.intn(17), len(c.b))
	s := strings.ToValidUTF8(string(c.b[:n]), "")
	c.b = c.b[n:]
	return s
}

// segment is a str that fits between the slashes of a key.
func (c *choices) segment() string { return strings.ReplaceAll(c.str(), "/", "-") }

// pick is one of known, or a fuzzed string.
func (c *choices) pick(known ...string) string {
	if i := c.intn(len(known) + 1); i < len(known) {
		return known[i]
	}
	return c.str()
}

// fuzzInput is an object built from fuzzed bytes, in two versions, with the options to map it with.
type fuzzInput struct {
	clean *unstructured.Unstructured // the user's content alone
	full  *unstructured.Unstructured // clean, plus what the source cluster and the syncer added
	opts  Options
	c     *choices // the rest of the decisions
}

func newFuzzInput(t *testing.T, kind uint8, name, namespace string, b []byte) fuzzInput {
	t.Helper()
	c := &choices{b: b}
	k := fuzzKinds[int(kind)%len(fuzzKinds)]
	clean := &unstructured.Unstructured{}
	if err := clean.UnmarshalJSON([]byte(k.obj)); err != nil {
		t.Fatalf("fuzzKinds[%d]: %v", int(kind)%len(fuzzKinds), err)
	}
	clean.SetName(strings.ToValidUTF8(name, ""))
	if k.namespaced {
		clean.SetNamespace(strings.ToValidUTF8(namespace, ""))
	}
	labels, annotations := map[string]string{}, map[string]string{}
	for n := c.intn(4); n > 0; n-- {
		if key := c.pick(userKeys...); userLabel(key) {
			labels[key] = c.str()
		}
	}
	for n := c.intn(4); n > 0; n-- {
		if key := c.pick(userKeys...); userAnnotation(key) {
			annotations[key] = c.str()
		}
	}
	if len(labels) > 0 {
		clean.SetLabels(labels)
	}
	if len(annotations) > 0 {
		clean.SetAnnotations(annotations)
	}
	if k.userMap != nil {
		for n := c.intn(4); n > 0; n-- {
			setField(t, clean.Object, c.str(), append(k.userMap, c.pick("key", "config.yaml", "storage", "app"))...)
		}
	}
	if k.number != nil && c.flag() {
		setField(t, clean.Object, int64(int8(c.next())), k.number...)
	}
	opts := Options{OwnerLabelValue: c.pick("edge1", "", OwnerLabelValue("odd/sync target")), Cluster: c.pick("", "root:ws1")}
	full := clean.DeepCopy()
	pollute(t, full, c)
	return fuzzInput{clean: clean, full: full, opts: opts, c: c}
}

func setField(t *testing.T, obj map[string]interface{}, value interface{}, path ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(obj, value, path...); err != nil {
		t.Fatalf("setting %v: %v", path, err)
	}
}

// pollute adds to obj what the cluster it was read from, and the syncer's marks of either direction
// (stale, foreign or copied from another object), may have put on it.
func pollute(t *testing.T, obj *unstructured.Unstructured, c *choices) {
	t.Helper()
	if c.flag() {
		obj.SetUID(types.UID("uid-" + c.str()))
	}
	if c.flag() {
		obj.SetResourceVersion("rv-" + c.str())
	}
	if c.flag() {
		obj.SetGeneration(int64(c.intn(100) + 1))
	}
	if c.flag() {
		obj.SetCreationTimestamp(metav1.NewTime(fuzzTime))
	}
	if c.flag() {
		grace := int64(30)
		obj.SetDeletionTimestamp(&metav1.Time{Time: fuzzTime})
		obj.SetDeletionGracePeriodSeconds(&grace)
	}
	if c.flag() {
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl-" + c.str(), Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: obj.GetAPIVersion(), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}}})
	}
	if c.flag() {
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "owner-" + c.str(), UID: "owner-uid"}})
	}
	if c.flag() {
		obj.SetFinalizers([]string{"example.com/" + c.segment()})
	}
	if c.flag() {
		obj.SetSelfLink("/api/v1/" + c.segment())
	}
	annotations, labels := obj.GetAnnotations(), obj.GetLabels()
	if annotations == nil {
		annotations = map[string]string{}
	}
	if labels == nil {
		labels = map[string]string{}
	}
	for n := c.intn(5); n > 0; n-- {
		switch c.intn(6) {
		case 0:
			annotations["kcp.io/cluster"] = c.pick("root:mailbox")
		case 1:
			annotations["kcp.io/"+c.segment()] = c.str()
		case 2:
			annotations["internal.workload.kcp.io/"+c.segment()] = c.str()
		case 3:
			annotations[c.segment()+".kcp.io/"+c.segment()] = c.str()
		default:
			annotations[lastApplied] = `{"apiVersion":"v1","kind":"` + c.str() + `"}`
		}
	}
	for n := c.intn(6); n > 0; n-- {
		switch c.intn(8) {
		case 0:
			annotations[DownsyncedAnnotation] = c.pick(MarkOf(obj), Mark("Deployment", obj.GetNamespace(), "web"))
		case 1:
			annotations[HashAnnotation] = c.str()
		case 2:
			annotations[ClusterAnnotation] = c.pick("root:other")
		case 3:
			labels[OwnerLabel] = c.pick("other-edge")
		case 4:
			annotations[UpsyncedAnnotation] = c.pick(MarkOf(obj), Mark("PolicyReport", "x", "y"))
		case 5:
			annotations[UpsyncHashAnnotation] = c.str()
		case 6:
			annotations["edge.kubestellar.io/upsynced-from-uid"] = "uid-" + c.str()
		default:
			labels[UpsyncOwnerLabel] = c.pick("other-edge")
		}
	}
	if len(annotations) > 0 {
		obj.SetAnnotations(annotations)
	}
	if len(labels) > 0 {
		obj.SetLabels(labels)
	}
	if c.flag() {
		allocate(t, obj, c)
	}
	if c.flag() {
		obj.Object["status"] = map[string]interface{}{"phase": c.str(), "observedGeneration": int64(c.intn(9)),
			"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": "True"}}}
	}
}

// allocate adds the fields an apiserver or its controllers allocate for an object of a built-in kind.
func allocate(t *testing.T, obj *unstructured.Unstructured, c *choices) {
	t.Helper()
	n := int64(c.intn(200))
	switch obj.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Kind: "Service"}:
		if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip != "None" {
			ip := fmt.Sprintf("10.96.0.%d", n)
			setField(t, obj.Object, ip, "spec", "clusterIP")
			setField(t, obj.Object, []interface{}{ip}, "spec", "clusterIPs")
		}
		typ, _, _ := unstructured.NestedString(obj.Object, "spec", "type")
		if typ == "NodePort" || typ == "LoadBalancer" {
			ports, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ports")
			for i, p := range ports {
				p.(map[string]interface{})["nodePort"] = 30000 + n + int64(i)
			}
			setField(t, obj.Object, ports, "spec", "ports")
		}
		if typ == "LoadBalancer" {
			setField(t, obj.Object, 32000+n, "spec", "healthCheckNodePort")
		}
	case schema.GroupKind{Kind: "PersistentVolumeClaim"}:
		setField(t, obj.Object, fmt.Sprintf("pvc-%d", n), "spec", "volumeName")
	case schema.GroupKind{Kind: "ServiceAccount"}:
		obj.Object["secrets"] = []interface{}{map[string]interface{}{"name": obj.GetName() + "-token-abcde"}}
	case schema.GroupKind{Kind: "Namespace"}:
		setField(t, obj.Object, []interface{}{"kubernetes"}, "spec", "finalizers")
	case schema.GroupKind{Kind: "Pod"}:
		setField(t, obj.Object, fmt.Sprintf("node-%d", n), "spec", "nodeName")
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		if manual, _, _ := unstructured.NestedBool(obj.Object, "spec", "manualSelector"); !manual {
			uid := fmt.Sprintf("job-uid-%d", n)
			setField(t, obj.Object, map[string]interface{}{"batch.kubernetes.io/controller-uid": uid}, "spec", "selector", "matchLabels")
			for l, v := range map[string]string{"controller-uid": uid, "batch.kubernetes.io/controller-uid": uid,
				"job-name": obj.GetName(), "batch.kubernetes.io/job-name": obj.GetName()} {
				setField(t, obj.Object, v, "spec", "template", "metadata", "labels", l)
			}
		}
	}
}

// asApplied is obj as an apiserver returns it after a write: the same content decoded from JSON
// (integers as int64), with the server's metadata, the fields it allocates and a status; with
// edgeAdditions also a label and a defaulted field obj does not have.
func asApplied(t *testing.T, obj *unstructured.Unstructured, c *choices, edgeAdditions bool) *unstructured.Unstructured {
	t.Helper()
	data, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(data); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	out.SetUID(types.UID("edge-uid-" + c.str()))
	out.SetResourceVersion("1")
	out.SetGeneration(1)
	out.SetCreationTimestamp(metav1.NewTime(fuzzTime))
	out.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubestellar-syncer", Operation: metav1.ManagedFieldsOperationUpdate}})
	allocate(t, out, c)
	out.Object["status"] = map[string]interface{}{"observedGeneration": int64(1)}
	if edgeAdditions {
		labels := out.GetLabels()
		if _, ok := labels["added-at-edge"]; !ok {
			labels["added-at-edge"] = "yes"
			out.SetLabels(labels)
		}
		if spec, ok := out.Object["spec"].(map[string]interface{}); ok {
			if _, ok := spec["defaultedAtEdge"]; !ok {
				spec["defaultedAtEdge"] = int64(600)
			}
		}
	}
	return out
}

// leafPaths lists, in a fixed order, the paths (map keys and list indices) of v's scalar values.
func leafPaths(v interface{}, path []interface{}, out [][]interface{}) [][]interface{} {
	switch v := v.(type) {
	case map[string]interface{}:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = leafPaths(v[k], append(path[:len(path):len(path)], k), out)
		}
	case []interface{}:
		for i, e := range v {
			out = leafPaths(e, append(path[:len(path):len(path)], i), out)
		}
	default:
		out = append(out, path)
	}
	return out
}

// pickLeaf is the path of one scalar value of obj, chosen by c.
func pickLeaf(obj map[string]interface{}, c *choices) []interface{} {
	paths := leafPaths(obj, nil, nil)
	return paths[c.intn(len(paths))]
}

// changeAt changes the scalar value at path to another value that is not empty.
func changeAt(t *testing.T, obj map[string]interface{}, path []interface{}) {
	t.Helper()
	var parent interface{} = obj
	for _, p := range path[:len(path)-1] {
		switch p := p.(type) {
		case string:
			parent = parent.(map[string]interface{})[p]
		case int:
			parent = parent.([]interface{})[p]
		}
	}
	changed := func(v interface{}) interface{} {
		switch v := v.(type) {
		case string:
			return v + "~"
		case int64:
			return v + 1
		case float64:
			return v + 1
		case bool:
			return !v
		}
		return "changed"
	}
	switch last := path[len(path)-1].(type) {
	case string:
		m := parent.(map[string]interface{})
		m[last] = changed(m[last])
	case int:
		l := parent.([]interface{})
		l[last] = changed(l[last])
	default:
		t.Fatalf("bad path %v", path)
	}
}

// checkNoSourceLeak fails when out carries anything that belongs to the cluster its input was read
// from: server metadata, kcp's and kubectl's annotations, allocated fields, and (unless keepsStatus)
// the status.
func checkNoSourceLeak(t *testing.T, out *unstructured.Unstructured, keepsStatus bool) {
	t.Helper()
	meta, _ := out.Object["metadata"].(map[string]interface{})
	for _, f := range []string{"uid", "resourceVersion", "generation", "managedFields", "creationTimestamp",
		"deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences", "finalizers", "selfLink"} {
		if _, ok := meta[f]; ok {
			t.Errorf("metadata.%s copied", f)
		}
	}
	for k := range out.GetAnnotations() {
		if domain, _, found := strings.Cut(k, "/"); k == lastApplied || found && (domain == "kcp.io" || strings.HasSuffix(domain, ".kcp.io")) {
			t.Errorf("annotation %q copied", k)
		}
	}
	if _, ok := out.Object["status"]; ok && !keepsStatus {
		t.Error("status copied")
	}
	spec, _ := out.Object["spec"].(map[string]interface{})
	switch out.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Kind: "Service"}:
		if ip, ok := spec["clusterIP"]; ok && ip != "None" {
			t.Errorf("clusterIP %v copied", ip)
		}
		if ips, ok := spec["clusterIPs"]; ok && spec["clusterIP"] != "None" {
			t.Errorf("clusterIPs %v copied", ips)
		}
		if _, ok := spec["healthCheckNodePort"]; ok {
			t.Error("healthCheckNodePort copied")
		}
		ports, _ := spec["ports"].([]interface{})
		for _, p := range ports {
			if p, ok := p.(map[string]interface{}); ok && p["nodePort"] != nil {
				t.Errorf("nodePort %v copied", p["nodePort"])
			}
		}
	case schema.GroupKind{Kind: "PersistentVolumeClaim"}:
		if _, ok := spec["volumeName"]; ok {
			t.Error("volumeName copied")
		}
	case schema.GroupKind{Kind: "ServiceAccount"}:
		if _, ok := out.Object["secrets"]; ok {
			t.Error("ServiceAccount secrets copied")
		}
	case schema.GroupKind{Kind: "Pod"}:
		if _, ok := spec["nodeName"]; ok {
			t.Error("nodeName copied")
		}
	case schema.GroupKind{Kind: "Namespace"}:
		if _, ok := spec["finalizers"]; ok {
			t.Error("Namespace spec.finalizers copied")
		}
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		if spec["manualSelector"] == true {
			break
		}
		if _, ok := spec["selector"]; ok {
			t.Error("generated Job selector copied")
		}
		labels, _, _ := unstructured.NestedFieldNoCopy(out.Object, "spec", "template", "metadata", "labels")
		m, _ := labels.(map[string]interface{})
		for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"} {
			if _, ok := m[l]; ok {
				t.Errorf("generated Job template label %s copied", l)
			}
		}
	}
}

// checkDownstreamMarks fails unless out, mapped downstream from in, carries exactly the downstream
// marks for itself and none of upsync's.
func checkDownstreamMarks(t *testing.T, out, in *unstructured.Unstructured, opts Options) {
	t.Helper()
	ann, labels := out.GetAnnotations(), out.GetLabels()
	if want := Mark(in.GetKind(), in.GetNamespace(), in.GetName()); ann[DownsyncedAnnotation] != want || !OwnedDownstream(out) {
		t.Errorf("downsynced mark %q, want %q (owned %v)", ann[DownsyncedAnnotation], want, OwnedDownstream(out))
	}
	if v, ok := labels[OwnerLabel]; !ok || v != opts.OwnerLabelValue {
		t.Errorf("owner label %q (present %v), want %q", v, ok, opts.OwnerLabelValue)
	}
	if ann[HashAnnotation] == "" {
		t.Error("no downsync digest")
	}
	if v, ok := ann[ClusterAnnotation]; v != opts.Cluster || ok != (opts.Cluster != "") {
		t.Errorf("cluster mark %q (present %v), want %q", v, ok, opts.Cluster)
	}
	for k := range ann {
		if strings.HasPrefix(k, fuzzUpsyncPrefix) {
			t.Errorf("upsync annotation %s=%q copied downstream", k, ann[k])
		}
	}
	if v, ok := labels[UpsyncOwnerLabel]; ok {
		t.Errorf("upsync label %s=%q copied downstream", UpsyncOwnerLabel, v)
	}
}

// checkUpstreamMarks fails unless out, mapped upstream from in, carries the upsync marks for itself
// and none of the downstream ones.
func checkUpstreamMarks(t *testing.T, out, in *unstructured.Unstructured, opts Options) {
	t.Helper()
	ann, labels := out.GetAnnotations(), out.GetLabels()
	if want := Mark(in.GetKind(), in.GetNamespace(), in.GetName()); ann[UpsyncedAnnotation] != want || !OwnedUpstream(out) {
		t.Errorf("upsynced mark %q, want %q (owned %v)", ann[UpsyncedAnnotation], want, OwnedUpstream(out))
	}
	if v, ok := labels[UpsyncOwnerLabel]; !ok || v != opts.OwnerLabelValue {
		t.Errorf("upsync owner label %q (present %v), want %q", v, ok, opts.OwnerLabelValue)
	}
	if ann[UpsyncHashAnnotation] == "" {
		t.Error("no upsync digest")
	}
	for _, k := range []string{DownsyncedAnnotation, HashAnnotation, ClusterAnnotation} {
		if v, ok := ann[k]; ok {
			t.Errorf("downstream annotation %s=%q copied upstream", k, v)
		}
	}
	if v, ok := labels[OwnerLabel]; ok {
		t.Errorf("downstream label %s=%q copied upstream", OwnerLabel, v)
	}
}

// withoutUpsync is obj without its status and what upsync adds (the upsync annotations and label):
// what is left came from the edge object.
func withoutUpsync(t *testing.T, obj *unstructured.Unstructured) map[string]interface{} {
	t.Helper()
	data, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	delete(out.Object, "status")
	annotations := out.GetAnnotations()
	for k := range annotations {
		if strings.HasPrefix(k, fuzzUpsyncPrefix) {
			delete(annotations, k)
		}
	}
	labels := out.GetLabels()
	delete(labels, UpsyncOwnerLabel)
	out.SetAnnotations(nil)
	out.SetLabels(nil)
	if len(annotations) > 0 {
		out.SetAnnotations(annotations)
	}
	if len(labels) > 0 {
		out.SetLabels(labels)
	}
	return out.Object
}

// addStructuredSeeds seeds every kind with no decisions (a bare object), all decisions yes, and
// fixed pseudo-random decisions.
func addStructuredSeeds(f *testing.F) {
	for i := range fuzzKinds {
		random := []byte{}
		for sum := sha256.Sum256([]byte{byte(i)}); len(random) < 512; sum = sha256.Sum256(sum[:]) {
			random = append(random, sum[:]...)
		}
		f.Add(uint8(i), "web", "app", []byte(nil))
		f.Add(uint8(i), "web-1", "team-a", []byte(strings.Repeat("\xff", 128)))
		f.Add(uint8(i), "db", "", random)
	}
	f.Add(uint8(0), "", "app", []byte(strings.Repeat("\xff", 64)))
}

// FuzzDownstream maps structured upstream objects downstream. The result carries nothing of the
// source cluster and no upsync mark, carries the downstream marks for itself, is the same as the
// mapping of the user's content alone (with the upstream generation), has a digest that is stable and changes with that content,
// and is up to date with itself as the edge returns it but not after a field of it changed. The
// input is never modified.
func FuzzDownstream(f *testing.F) {
	addStructuredSeeds(f)
	f.Fuzz(func(t *testing.T, kind uint8, name, namespace string, b []byte) {
		in := newFuzzInput(t, kind, name, namespace, b)
		before := in.full.DeepCopy()
		down, err := ToDownstream(in.full, in.opts)
		if !reflect.DeepEqual(before.Object, in.full.Object) {
			t.Fatalf("ToDownstream modified its input:\n%s", cmp.Diff(before.Object, in.full.Object))
		}
		if in.full.GetName() == "" {
			if err == nil || down != nil {
				t.Fatalf("an object without a name mapped: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		checkNoSourceLeak(t, down, false)
		checkDownstreamMarks(t, down, in.full, in.opts)

		again, err := ToDownstream(in.full, in.opts)
		if err != nil || !reflect.DeepEqual(down.Object, again.Object) {
			t.Fatalf("mapping twice differs (%v):\n%s", err, cmp.Diff(down.Object, again.Object))
		}
		// The upstream generation is the one thing of the source cluster the mapping carries on
		// purpose (UpstreamGenerationAnnotation).
		clean := in.clean.DeepCopy()
		clean.SetGeneration(in.full.GetGeneration())
		fromClean, err := ToDownstream(clean, in.opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(fromClean.Object, down.Object); diff != "" {
			t.Fatalf("what the source cluster added changed the mapping (-user content only +with it):\n%s", diff)
		}

		path := pickLeaf(in.clean.Object, in.c)
		changedUp := in.full.DeepCopy()
		changeAt(t, changedUp.Object, path)
		changed, err := ToDownstream(changedUp, in.opts)
		if err != nil {
			t.Fatal(err)
		}
		if changed.GetAnnotations()[HashAnnotation] == down.GetAnnotations()[HashAnnotation] {
			t.Fatalf("digest unchanged after %v changed upstream", path)
		}

		actual := asApplied(t, down, in.c, true)
		if !UpToDate(down, actual) {
			t.Fatalf("not up to date with itself as applied (-desired +actual):\n%s", cmp.Diff(down.Object, actual.Object))
		}
		if UpToDate(changed, actual) {
			t.Fatalf("up to date though %v changed upstream", path)
		}
		drifted := actual.DeepCopy()
		drift := pickLeaf(down.Object, in.c)
		changeAt(t, drifted.Object, drift)
		if UpToDate(down, drifted) {
			t.Fatalf("up to date though %v changed at the edge", drift)
		}
	})
}

// FuzzUpstream maps structured edge objects upstream, as upsync does. The result carries nothing of
// the edge but its content and status, carries the upsync marks for itself and no downstream mark,
// is the mapping of the user's content alone (apart from status and the upsync marks), has a digest
// that is stable and changes with that content, and is up to date with itself as written upstream
// but not after a field of it changed. The input is never modified.
func FuzzUpstream(f *testing.F) {
	addStructuredSeeds(f)
	f.Fuzz(func(t *testing.T, kind uint8, name, namespace string, b []byte) {
		in := newFuzzInput(t, kind, name, namespace, b)
		before := in.full.DeepCopy()
		up, err := ToUpstream(in.full, in.opts)
		if !reflect.DeepEqual(before.Object, in.full.Object) {
			t.Fatalf("ToUpstream modified its input:\n%s", cmp.Diff(before.Object, in.full.Object))
		}
		if in.full.GetName() == "" {
			if err == nil || up != nil {
				t.Fatalf("an object without a name mapped: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		checkNoSourceLeak(t, up, true)
		if !reflect.DeepEqual(up.Object["status"], in.full.Object["status"]) {
			t.Errorf("status not kept:\n%s", cmp.Diff(in.full.Object["status"], up.Object["status"]))
		}
		checkUpstreamMarks(t, up, in.full, in.opts)

		again, err := ToUpstream(in.full, in.opts)
		if err != nil || !reflect.DeepEqual(up.Object, again.Object) {
			t.Fatalf("mapping twice differs (%v):\n%s", err, cmp.Diff(up.Object, again.Object))
		}
		fromClean, err := ToUpstream(in.clean, in.opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(withoutUpsync(t, fromClean), withoutUpsync(t, up)); diff != "" {
			t.Fatalf("what the edge added changed the mapping (-user content only +with it):\n%s", diff)
		}

		path := pickLeaf(in.clean.Object, in.c)
		changedDown := in.full.DeepCopy()
		changeAt(t, changedDown.Object, path)
		changed, err := ToUpstream(changedDown, in.opts)
		if err != nil {
			t.Fatal(err)
		}
		if changed.GetAnnotations()[UpsyncHashAnnotation] == up.GetAnnotations()[UpsyncHashAnnotation] {
			t.Fatalf("digest unchanged after %v changed at the edge", path)
		}

		actual := asApplied(t, up, in.c, true)
		if !UpsyncedUpToDate(up, actual) {
			t.Fatalf("not up to date with itself as written (-desired +actual):\n%s", cmp.Diff(up.Object, actual.Object))
		}
		if UpsyncedUpToDate(changed, actual) {
			t.Fatalf("up to date though %v changed at the edge", path)
		}
		content := up.DeepCopy()
		delete(content.Object, "status")
		drift := pickLeaf(content.Object, in.c)
		drifted := actual.DeepCopy()
		changeAt(t, drifted.Object, drift)
		if UpsyncedUpToDate(up, drifted) {
			t.Fatalf("up to date though %v changed upstream", drift)
		}
	})
}

// FuzzRoundTrip maps structured upstream objects down, lets the edge apply them, and maps what the
// edge returns back up: the user's content (data, spec, labels, annotations, name, namespace, kind
// and apiVersion) comes back exactly, with nothing else but the upsync marks.
func FuzzRoundTrip(f *testing.F) {
	addStructuredSeeds(f)
	f.Fuzz(func(t *testing.T, kind uint8, name, namespace string, b []byte) {
		in := newFuzzInput(t, kind, name, namespace, b)
		down, err := ToDownstream(in.full, in.opts)
		if err != nil {
			return // no name: FuzzDownstream checks that
		}
		edge := asApplied(t, down, in.c, false)
		up, err := ToUpstream(edge, in.opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(withoutUpsync(t, in.clean), withoutUpsync(t, up)); diff != "" {
			t.Fatalf("round trip (-user content +after down and up):\n%s", diff)
		}
	})
}

// FuzzMappingJSON maps any object the JSON decoder accepts, in both directions. Neither panics; an
// object without apiVersion, kind or name is an error and nothing else is; a mapped object is well
// formed (same identity, string labels and annotations, encodable), carries nothing of the source
// cluster, carries its direction's marks, maps the same way twice and is up to date with itself.
// The input is never modified.
func FuzzMappingJSON(f *testing.F) {
	f.Add(upstreamService)
	f.Add(edgeReport)
	f.Add(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"n"},"spec":{"template":{"metadata":{"labels":{"a":"b"}}}}}`)
	f.Add(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[1,"x",{"nodePort":3}],"clusterIP":7}}`)
	f.Add(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"a":null,"b":1},"annotations":"x"},"status":null}`)
	f.Add(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n","annotations":{"edge.kubestellar.io/upsync-hash":"h",
	 "edge.kubestellar.io/upstream-cluster":"root:x"},"labels":{"edge.kubestellar.io/upsynced-by":"e"}},"spec":"odd"}`)
	f.Add(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}`)
	f.Add(`{"kind":"Service","metadata":{"name":"s"}}`)
	f.Add(`{"apiVersion":"v1","kind":"Pod","metadata":"s"}`)
	for _, k := range fuzzKinds {
		f.Add(strings.Replace(k.obj, `{`, `{"metadata":{"name":"x","namespace":"y","uid":"u"},"status":{"a":1},`, 1))
	}
	opts := Options{OwnerLabelValue: "edge1", Cluster: "root:ws1"}
	f.Fuzz(func(t *testing.T, s string) {
		in := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(s), &in.Object); err != nil || in.Object == nil {
			return
		}
		named := in.GetName() != "" && in.GetKind() != "" && in.GetAPIVersion() != ""
		for _, dir := range []struct {
			name     string
			mapObj   func(*unstructured.Unstructured, Options) (*unstructured.Unstructured, error)
			upstream bool
		}{{"ToDownstream", ToDownstream, false}, {"ToUpstream", ToUpstream, true}} {
			before := in.DeepCopy()
			out, err := dir.mapObj(in, opts)
			if !reflect.DeepEqual(before.Object, in.Object) {
				t.Fatalf("%s modified its input", dir.name)
			}
			if !named {
				if err == nil || out != nil {
					t.Fatalf("%s mapped an object without apiVersion, kind or name", dir.name)
				}
				continue
			}
			if err != nil || out == nil {
				t.Fatalf("%s: %v", dir.name, err)
			}
			if out.GetName() != in.GetName() || out.GetNamespace() != in.GetNamespace() || out.GetKind() != in.GetKind() || out.GetAPIVersion() != in.GetAPIVersion() {
				t.Fatalf("%s changed the identity: %s %s to %s %s", dir.name, in.GetAPIVersion(), MarkOf(in), out.GetAPIVersion(), MarkOf(out))
			}
			for _, field := range []string{"labels", "annotations"} {
				if _, _, err := unstructured.NestedStringMap(out.Object, "metadata", field); err != nil {
					t.Fatalf("%s: malformed %s: %v", dir.name, field, err)
				}
			}
			if _, err := json.Marshal(out.Object); err != nil {
				t.Fatalf("%s: %v", dir.name, err)
			}
			checkNoSourceLeak(t, out, dir.upstream)
			if dir.upstream {
				checkUpstreamMarks(t, out, in, opts)
			} else {
				checkDownstreamMarks(t, out, in, opts)
			}
			if again, _ := dir.mapObj(in, opts); !reflect.DeepEqual(out.Object, again.Object) {
				t.Fatalf("%s twice differs", dir.name)
			}
			if dir.upstream && !UpsyncedUpToDate(out, out) || !dir.upstream && !UpToDate(out, out) {
				t.Fatalf("%s: the mapping is not up to date with itself", dir.name)
			}
		}
	})
}
