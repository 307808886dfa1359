package informermanager

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/framework"
)

// A Signals cache keeps of a Pod its name, owners and container states, not its spec or the rest of
// its metadata and status.
func TestSignalsKeepNamesOwnersAndStates(t *testing.T) {
	var pod unstructured.Unstructured
	if err := json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1-a","namespace":"app","uid":"u1",
		"resourceVersion":"7","labels":{"app":"web"},"annotations":{"note":"x"},
		"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-1","uid":"u0","controller":true}],
		"managedFields":[{"manager":"kube-controller-manager"}]},
		"spec":{"containers":[{"name":"app","image":"nope:1"}],"nodeName":"n1"},
		"status":{"phase":"Pending","conditions":[{"type":"Ready","status":"False"}],
		"containerStatuses":[{"name":"app","restartCount":2,"state":{"waiting":{"reason":"ImagePullBackOff"}}}]}}`), &pod.Object); err != nil {
		t.Fatal(err)
	}
	out, err := transformFor(Spec{Signals: true}, true)(&pod)
	if err != nil {
		t.Fatal(err)
	}
	slim := framework.ObjectOf(out)
	if _, ok := out.(*framework.Compact); !ok || slim == nil {
		t.Fatalf("transformed to %T; want a Compact", out)
	}
	want := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1-a","namespace":"app",` +
		`"ownerReferences":[{"apiVersion":"apps/v1","controller":true,"kind":"ReplicaSet","name":"web-1","uid":"u0"}],"resourceVersion":"7","uid":"u1"},` +
		`"status":{"containerStatuses":[{"name":"app","restartCount":2,"state":{"waiting":{"reason":"ImagePullBackOff"}}}]}}`
	got, _ := json.Marshal(slim.Object)
	if string(got) != want {
		t.Errorf("kept\n%s\nwant\n%s", got, want)
	}
	again, err := transformFor(Spec{Signals: true}, false)(slim)
	if err != nil {
		t.Fatal(err)
	}
	if got2, _ := json.Marshal(again.(*unstructured.Unstructured).Object); string(got2) != want {
		t.Errorf("transformed twice:\n%s\nwant it kept as it was", got2)
	}
}

// realisticPod is a Deployment's running Pod as the apiserver serves it (managedFields, the
// kubelet's status), about 4 KiB of JSON.
const realisticPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d4b9c8f6d-x2k9p","generateName":"web-7d4b9c8f6d-","namespace":"app",
"uid":"0b7c2f5e-8f3a-4c1e-9d2b-3a4f5e6d7c8b","resourceVersion":"123456","creationTimestamp":"2026-11-27T12:00:00Z",
"labels":{"app":"web","pod-template-hash":"7d4b9c8f6d"},
"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9c8f6d","uid":"1c8d3f6a-9a4b-4d2f-8e3c-4b5a6f7e8d9c","controller":true,"blockOwnerDeletion":true}],
"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-11-27T12:00:00Z","fieldsType":"FieldsV1",
"fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"1c8d3f6a\"}":{}}},
"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:command":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},
"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}},
{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-11-27T12:00:05Z","fieldsType":"FieldsV1","subresource":"status",
"fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},
"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},
"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.88.0.12\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}}]},
"spec":{"containers":[{"name":"app","image":"registry.example.com/team/web:1.4.2","command":["httpd","-f","-p","8080"],"resources":{"limits":{"memory":"128Mi"},"requests":{"cpu":"50m","memory":"64Mi"}},
"volumeMounts":[{"name":"kube-api-access-abcde","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],
"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":"edge-node","securityContext":{},
"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],
"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority",
"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},
{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}}]},
"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-27T12:00:00Z"},
{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-27T12:00:05Z"},{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-27T12:00:05Z"},
{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-27T12:00:00Z"}],"hostIP":"10.0.0.5","hostIPs":[{"ip":"10.0.0.5"}],"podIP":"10.88.0.12","podIPs":[{"ip":"10.88.0.12"}],
"startTime":"2026-11-27T12:00:00Z","containerStatuses":[{"name":"app","state":{"running":{"startedAt":"2026-11-27T12:00:04Z"}},"lastState":{},"ready":true,"restartCount":0,
"image":"registry.example.com/team/web:1.4.2","imageID":"registry.example.com/team/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
"containerID":"containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","started":true}],"qosClass":"Burstable"}}`

// BenchmarkSignalsPodMemory prints the heap a Signals cache holds per Pod beside what a decoded Pod
// (as a plain informer holds it, managedFields dropped) holds, measured in the same run.
func BenchmarkSignalsPodMemory(b *testing.B) {
	const pods = 5000
	held := func(transform func(*unstructured.Unstructured) interface{}) float64 {
		keep := make([]interface{}, 0, pods)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < pods; i++ {
			var u unstructured.Unstructured
			if err := json.Unmarshal([]byte(realisticPod), &u.Object); err != nil {
				b.Fatal(err)
			}
			u.SetName(fmt.Sprintf("web-%d", i))
			keep = append(keep, transform(&u))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		return float64(after.HeapAlloc-before.HeapAlloc) / pods
	}
	for i := 0; i < b.N; i++ {
		decoded := held(func(u *unstructured.Unstructured) interface{} { u.SetManagedFields(nil); return u })
		slim := held(func(u *unstructured.Unstructured) interface{} {
			out, err := transformFor(Spec{Signals: true}, true)(u)
			if err != nil {
				b.Fatal(err)
			}
			return out
		})
		b.ReportMetric(decoded, "decoded-B/pod")
		b.ReportMetric(slim, "signals-B/pod")
		b.ReportMetric(slim/decoded, "ratio")
	}
}
