package e2e

import (
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/syncer/test/support"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/test/testenv"
)

var gvrDaemonSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}

// podTimeout bounds what waits for pods to run on the edge's node (node_test.go waits as long).
const podTimeout = 90 * time.Second

// TestWorkloads: workloads the syncer delivers run on the edge's node, and what the edge's
// controllers say of them comes back upstream. One SyncerConfig selects a namespace per scenario and
// one syncer serves them all; the scenarios run side by side:
//   - Deployment: 2 replicas of the testapp's HTTP server Running on the node; upstream
//     readyReplicas and availableReplicas 2, Available True.
//   - Service: at the edge, with the ClusterIP the edge allocated, an EndpointSlice whose ready
//     addresses are the Deployment's pods, which answer from the host; a pod reaches them through it.
//   - Job: runs to completion at the edge under a selector the edge generated; upstream succeeded
//     1, Complete True.
//   - DaemonSet: its one pod on the one node; upstream desiredNumberScheduled and numberReady 1.
//   - Unpullable: a Deployment whose image cannot be pulled is unavailable upstream, a ConfigMap
//     created meanwhile still reaches the edge at once, and with its image fixed upstream it becomes
//     available.
//
// The upstream runs no workload controller (kube: the namespace ones only; kcp: none), so a status
// there was returned by the syncer; each scenario also checks that it equals the edge's own (whose
// conditions carry the edge's transition times). Once they are done the syncer settles without
// having rewritten at the edge what the edge's controllers wrote there.
func TestWorkloads(t *testing.T) {
	if env.Node == nil {
		support.Skip(t, "the bed has no node (E2E_NODE=0)")
	}
	f := newFixture(t)
	web, job, ds, broken := f.namespace("web"), f.namespace("job"), f.namespace("ds"), f.namespace("broken")
	httpd := testAppContainer(testenv.TestAppImage, "httpd", "-f", "-p", "8080", "-h", "/www")
	httpd["ports"] = []interface{}{map[string]interface{}{"containerPort": int64(8080)}}
	httpd["readinessProbe"] = map[string]interface{}{"periodSeconds": int64(1),
		"httpGet": map[string]interface{}{"path": "/", "port": int64(8080)}}
	f.create(f.up, gvrDeployments, workload("Deployment", web, "web", 2, "", httpd))
	f.create(f.up, gvrServices, obj("v1", "Service", web, "web", map[string]interface{}{"spec": map[string]interface{}{
		"selector": map[string]interface{}{"app": "web"},
		"ports":    []interface{}{map[string]interface{}{"port": int64(80), "targetPort": int64(8080)}},
	}}))
	f.create(f.up, gvrJobs, workload("Job", job, "once", 0, "Never", testAppContainer(testenv.TestAppImage, "sh", "-c", "echo done")))
	f.create(f.up, gvrDaemonSets, workload("DaemonSet", ds, "agent", 0, "", testAppContainer(testenv.TestAppImage, "sleep", "3600")))
	f.create(f.up, gvrDeployments, workload("Deployment", broken, "app", 1, "", testAppContainer(testenv.UnpullableImage)))
	f.syncerConfig(f.name, nsScope([]string{web, job, ds, broken},
		resource("apps", "v1", "deployments"), resource("apps", "v1", "daemonsets"), resource("", "v1", "services"),
		resource("batch", "v1", "jobs"), resource("", "v1", "configmaps")))
	p := f.startSyncer()
	start := time.Now()
	took := func(t *testing.T, what string) {
		t.Logf("%s %.1fs after the syncer started", what, time.Since(start).Seconds())
	}

	t.Run("scenarios", func(t *testing.T) {
		t.Run("Deployment", func(t *testing.T) {
			t.Parallel()
			f := f.in(t)
			up := f.waitForWithin(podTimeout, f.up, gvrDeployments, web, "web", func(o *unstructured.Unstructured) (bool, string) {
				ready, _, _ := unstructured.NestedInt64(o.Object, "status", "readyReplicas")
				available, _, _ := unstructured.NestedInt64(o.Object, "status", "availableReplicas")
				cond, _, _ := conditionOf(o, "Available")
				return ready == 2 && available == 2 && cond == "True", fmt.Sprintf("upstream status %v; edge pods: %s", o.Object["status"], podStates(f.ctx, web, "app=web"))
			})
			took(t, "Deployment web available upstream")
			f.sameStatus(gvrDeployments, web, "web")
			if g, og := up.GetGeneration(), statusInt(up, "observedGeneration"); og != g {
				t.Errorf("upstream generation %d, status.observedGeneration %d", g, og)
			}
			f.runningPods(web, "app=web", 2)
		})

		t.Run("Service", func(t *testing.T) {
			t.Parallel()
			f := f.in(t)
			svc := f.waitFor(f.down, gvrServices, web, "web", hasMark)
			ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP")
			if _, cidr, err := net.ParseCIDR(env.Node.ServiceCIDR); err != nil || !cidr.Contains(net.ParseIP(ip)) {
				t.Fatalf("edge Service clusterIP %q: want one the edge allocated in %s (%v)", ip, env.Node.ServiceCIDR, err)
			}
			var ready []string
			eventually(t, podTimeout, "the edge Service's ready endpoints to be the Deployment's pods", func() (bool, string) {
				var err error
				if ready, err = f.readyEndpoints(web, "web"); err != nil {
					return false, err.Error()
				}
				pods := podIPs(f.runningPodsNow(web, "app=web"))
				return len(ready) == 2 && slices.Equal(ready, pods), fmt.Sprintf("ready endpoints %v, running pods' IPs %v", ready, pods)
			})
			took(t, "the edge Service's 2 endpoints ready")
			// The host routes the pod network to the node.
			for _, addr := range ready {
				body, err := httpGet(fmt.Sprintf("http://%s/", net.JoinHostPort(addr, "8080")))
				if err != nil || body != "kubestellar-syncer-testapp\n" {
					t.Errorf("GET endpoint %s:8080 from the host: %q %v", addr, body, err)
				}
			}
			// kube-proxy's rules for the edge's ClusterIP lead to them.
			if out := runPod(f.ctx, t, web, "client", "wget -q -O - http://"+ip+"/", podTimeout); out != "kubestellar-syncer-testapp\n" {
				t.Errorf("wget of the edge Service web (%s) from a pod: %q", ip, out)
			}
		})

		t.Run("Job", func(t *testing.T) {
			t.Parallel()
			f := f.in(t)
			f.waitForWithin(podTimeout, f.up, gvrJobs, job, "once", func(o *unstructured.Unstructured) (bool, string) {
				cond, _, _ := conditionOf(o, "Complete")
				return statusInt(o, "succeeded") == 1 && cond == "True", fmt.Sprintf("upstream status %v; edge pods: %s", o.Object["status"], podStates(f.ctx, job, "batch.kubernetes.io/job-name=once"))
			})
			took(t, "Job once complete upstream")
			down := f.sameStatus(gvrJobs, job, "once")
			// The edge generated the selector from its own Job's UID (the upstream's names another).
			if uid, _, _ := unstructured.NestedString(down.Object, "spec", "selector", "matchLabels", "batch.kubernetes.io/controller-uid"); uid != string(down.GetUID()) {
				t.Errorf("edge Job selector's controller-uid %q, want the edge Job's UID %s", uid, down.GetUID())
			}
			pods := f.pods(job, "batch.kubernetes.io/job-name=once")
			if len(pods) != 1 || pods[0].Status.Phase != corev1.PodSucceeded || pods[0].Spec.NodeName != env.Node.Name {
				t.Fatalf("edge pods of Job once: %s; want one Succeeded on %s", podStates(f.ctx, job, "batch.kubernetes.io/job-name=once"), env.Node.Name)
			}
			if out, err := podLog(f.ctx, job, pods[0].Name); err != nil || out != "done\n" {
				t.Errorf("log of the Job's pod %s: %q %v; want \"done\\n\"", pods[0].Name, out, err)
			}
		})

		t.Run("DaemonSet", func(t *testing.T) {
			t.Parallel()
			f := f.in(t)
			f.waitForWithin(podTimeout, f.up, gvrDaemonSets, ds, "agent", func(o *unstructured.Unstructured) (bool, string) {
				return statusInt(o, "desiredNumberScheduled") == 1 && statusInt(o, "numberReady") == 1 && statusInt(o, "numberAvailable") == 1,
					fmt.Sprintf("upstream status %v; edge pods: %s", o.Object["status"], podStates(f.ctx, ds, "app=agent"))
			})
			took(t, "DaemonSet agent ready upstream")
			down := f.sameStatus(gvrDaemonSets, ds, "agent")
			pods := f.runningPods(ds, "app=agent", 1)
			if refs := pods[0].OwnerReferences; len(refs) != 1 || refs[0].UID != down.GetUID() {
				t.Errorf("edge pod %s owned by %v, want the edge DaemonSet %s", pods[0].Name, refs, down.GetUID())
			}
		})

		t.Run("Unpullable", func(t *testing.T) {
			t.Parallel()
			f := f.in(t)
			f.waitForWithin(podTimeout, f.up, gvrDeployments, broken, "app", func(o *unstructured.Unstructured) (bool, string) {
				cond, reason, _ := conditionOf(o, "Available")
				_, hasReady, _ := unstructured.NestedFieldNoCopy(o.Object, "status", "readyReplicas")
				return cond == "False" && reason == "MinimumReplicasUnavailable" && statusInt(o, "unavailableReplicas") == 1 && !hasReady,
					fmt.Sprintf("upstream status %v", o.Object["status"])
			})
			took(t, "Deployment app unavailable upstream")
			f.sameStatus(gvrDeployments, broken, "app")
			// The edge says why: its pod cannot pull the image.
			eventually(t, 30*time.Second, "the edge pod failing to pull its image", func() (bool, string) {
				states := podStates(f.ctx, broken, "app=app")
				return strings.Contains(states, "ErrImagePull") || strings.Contains(states, "ImagePullBackOff"), states
			})

			// Meanwhile the rest flows.
			created := time.Now()
			f.create(f.up, gvrConfigMaps, configMap(broken, "later", map[string]interface{}{"k": "v"}))
			f.waitFor(f.down, gvrConfigMaps, broken, "later", dataEquals("k", "v"))
			if d := time.Since(created); d > 10*time.Second {
				t.Errorf("a ConfigMap beside the unavailable Deployment took %.1fs to reach the edge", d.Seconds())
			}

			// Fixed upstream, it becomes available: the edge's status follows, and so does upstream's.
			f.update(f.up, gvrDeployments, broken, "app", func(o *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(o.Object, []interface{}{testAppContainer(testenv.TestAppImage, "sleep", "3600")},
					"spec", "template", "spec", "containers")
			})
			f.waitForWithin(podTimeout, f.up, gvrDeployments, broken, "app", func(o *unstructured.Unstructured) (bool, string) {
				cond, _, _ := conditionOf(o, "Available")
				_, hasUnavailable, _ := unstructured.NestedFieldNoCopy(o.Object, "status", "unavailableReplicas")
				return cond == "True" && statusInt(o, "readyReplicas") == 1 && statusInt(o, "updatedReplicas") == 1 && !hasUnavailable,
					fmt.Sprintf("upstream status %v; edge pods: %s", o.Object["status"], podStates(f.ctx, broken, "app=app"))
			})
			took(t, "Deployment app available upstream once fixed")
			f.sameStatus(gvrDeployments, broken, "app")
		})
	})

	// Nobody fights over the running workloads: what the edge's controllers write (revisions,
	// generated selectors and labels, status) makes downsync write nothing back, and the only update
	// downsync made is the fix of the unpullable Deployment.
	p.waitSettled()
	m := p.metrics()
	for r, want := range map[string]float64{"deployments.apps": 1, "daemonsets.apps": 0, "jobs.batch": 0, "services": 0} {
		if n := m[fmt.Sprintf(`kubestellar_syncer_writes_total{direction="downsync",resource=%q,result="updated"}`, r)]; n != want {
			t.Errorf("downsync updated %s %v times, want %v", r, n, want)
		}
	}
	for k, v := range m {
		if strings.HasPrefix(k, "kubestellar_syncer_writes_total{") && strings.Contains(k, `result="loop"`) && v != 0 {
			t.Errorf("%s = %v", k, v)
		}
	}
}

// workload is a Deployment, DaemonSet or Job of one container, its pods labelled app=name; replicas
// (Deployments) and restartPolicy only when set. Nothing is left for defaulting to fill that the
// edge would not: a kcp upstream serves these kinds from CRDs, which do not default.
func workload(kind, namespace, name string, replicas int64, restartPolicy string, container map[string]interface{}) *unstructured.Unstructured {
	labels := map[string]interface{}{"app": name}
	pod := map[string]interface{}{"terminationGracePeriodSeconds": int64(1), "containers": []interface{}{container}}
	if restartPolicy != "" {
		pod["restartPolicy"] = restartPolicy
	}
	spec := map[string]interface{}{"template": map[string]interface{}{"metadata": map[string]interface{}{"labels": labels}, "spec": pod}}
	apiVersion := "apps/v1"
	switch kind {
	case "Job":
		apiVersion = "batch/v1" // the apiserver generates a Job's selector
	default:
		spec["selector"] = map[string]interface{}{"matchLabels": labels}
	}
	if replicas > 0 {
		spec["replicas"] = replicas
	}
	return obj(apiVersion, kind, namespace, name, map[string]interface{}{"spec": spec})
}

// testAppContainer is a container of image running command (none: the image's).
func testAppContainer(image string, command ...string) map[string]interface{} {
	c := map[string]interface{}{"name": "app", "image": image}
	if len(command) > 0 {
		cmd := make([]interface{}, len(command))
		for i, s := range command {
			cmd[i] = s
		}
		c["command"] = cmd
	}
	return c
}

func statusInt(o *unstructured.Unstructured, field string) int64 {
	n, _, _ := unstructured.NestedInt64(o.Object, "status", field)
	return n
}

// sameStatus waits until the upstream object's status is the edge object's (as it stands once the
// edge's controllers are done with it) but for the generations in it, which are returned in upstream
// terms (TestStatusGenerations), and returns the edge object.
func (f *fixture) sameStatus(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	f.t.Helper()
	var down *unstructured.Unstructured
	eventually(f.t, 30*time.Second, fmt.Sprintf("the upstream status of %s %s/%s to be the edge's", gvr.Resource, namespace, name), func() (bool, string) {
		var err error
		if down, err = f.get(f.down, gvr, namespace, name); err != nil {
			return false, err.Error()
		}
		up, err := f.get(f.up, gvr, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		us, ds := withoutGenerations(up.Object["status"]), withoutGenerations(down.Object["status"])
		return reflect.DeepEqual(us, ds), fmt.Sprintf("upstream %v, edge %v", up.Object["status"], down.Object["status"])
	})
	return down
}

// withoutGenerations is a copy of a status without its observedGeneration fields (its own and its
// conditions').
func withoutGenerations(status interface{}) interface{} {
	s, ok := runtime.DeepCopyJSONValue(status).(map[string]interface{})
	if !ok {
		return status
	}
	delete(s, "observedGeneration")
	conds, _ := s["conditions"].([]interface{})
	for _, c := range conds {
		if m, ok := c.(map[string]interface{}); ok {
			delete(m, "observedGeneration")
		}
	}
	return s
}

// pods lists the edge's pods of a namespace matching selector.
func (f *fixture) pods(namespace, selector string) []corev1.Pod {
	f.t.Helper()
	list, err := f.down.kube.CoreV1().Pods(namespace).List(f.ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// runningPodsNow are the edge's pods matching selector that run, ready, on the node and are not
// being deleted.
func (f *fixture) runningPodsNow(namespace, selector string) []corev1.Pod {
	f.t.Helper()
	var out []corev1.Pod
	for _, p := range f.pods(namespace, selector) {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if ready && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == env.Node.Name && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// runningPods waits until n of the edge's pods matching selector run (runningPodsNow), and no other
// matches, and returns them.
func (f *fixture) runningPods(namespace, selector string, n int) []corev1.Pod {
	f.t.Helper()
	var pods []corev1.Pod
	eventually(f.t, podTimeout, fmt.Sprintf("%d pods %s Running in %s on %s", n, selector, namespace, env.Node.Name), func() (bool, string) {
		pods = f.runningPodsNow(namespace, selector)
		return len(pods) == n && len(f.pods(namespace, selector)) == n, podStates(f.ctx, namespace, selector)
	})
	return pods
}

func podIPs(pods []corev1.Pod) []string {
	var ips []string
	for _, p := range pods {
		ips = append(ips, p.Status.PodIP)
	}
	slices.Sort(ips)
	return ips
}

// readyEndpoints are the sorted addresses of the ready endpoints of the edge's EndpointSlices for a
// Service.
func (f *fixture) readyEndpoints(namespace, service string) ([]string, error) {
	list, err := f.down.kube.DiscoveryV1().EndpointSlices(namespace).List(f.ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + service})
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				addrs = append(addrs, e.Addresses...)
			}
		}
	}
	slices.Sort(addrs)
	return addrs, nil
}
