package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/utils/ptr"

	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/test/support"
	"github.com/kubestellar/syncer/test/testenv"
)

// syncerImage is the syncer's image as the edge's node holds it: `make image` builds it (IMAGE,
// kubestellar-syncer:dev by default) and the suite imports it into the node's containerd. The test
// fails when the node lacks it.
func syncerImage(t *testing.T) string {
	t.Helper()
	want := os.Getenv("IMAGE")
	if want == "" {
		want = "kubestellar-syncer:dev"
	}
	if env.Node == nil {
		t.Fatal("the syncer runs as a Pod on the edge's node, and this bed has none (E2E_NODE=0)")
	}
	for _, img := range env.Node.Images {
		if img == want || strings.HasSuffix(img, "/"+want) {
			return want
		}
	}
	t.Fatalf("the edge's node does not hold the syncer's image %s (it holds %v): run `make image` before the e2e tests (`make test-e2e` does)",
		want, env.Node.Images)
	return ""
}

// syncerDeployment is a syncer run as its users run it: the Deployment of syncer-gen's manifest or
// of the Helm chart at the edge, its Pods on the edge's node.
type syncerDeployment struct {
	f               *fixture
	namespace, name string
	// lease is the name of the Lease its replicas elect a leader with, in namespace.
	lease string
	// metricsReader is the ClusterRole its install makes for scrapers (--metrics-secure).
	metricsReader string
	// manifest is syncer-gen's manifest it was applied from ("" for the chart).
	manifest string

	scraper string // a token of a ServiceAccount bound to metricsReader, made on first use
}

// waitAvailable waits until the Deployment's rollout is complete: every replica of its current
// template Ready (the kubelet has probed /readyz) and no old one left.
func (d *syncerDeployment) waitAvailable(timeout time.Duration) {
	d.f.t.Helper()
	out, err := kubectlCommand(d.f.ctx, env.Downstream.Kubeconfig, "rollout", "status", "deployment/"+d.name, "-n", d.namespace,
		"--timeout="+timeout.String())
	if err != nil {
		d.f.t.Fatalf("the syncer's Deployment %s/%s did not roll out within %v: %v\n%s\n%s", d.namespace, d.name, timeout, err, out, d.describe())
	}
}

// describe is what a user would look at when a rollout stalls: the pods, their events, the last
// log lines of each.
func (d *syncerDeployment) describe() string {
	out, _ := kubectlCommand(d.f.ctx, env.Downstream.Kubeconfig, "describe", "pods", "-n", d.namespace)
	var b strings.Builder
	b.WriteString(out)
	for _, p := range d.pods() {
		fmt.Fprintf(&b, "\n--- log of %s (last 30 lines):\n%s\n", p.Name, d.tail(p.Name, 30))
	}
	return b.String()
}

// pods are the Deployment's pods not being deleted, by name.
func (d *syncerDeployment) pods() []corev1.Pod {
	d.f.t.Helper()
	dep, err := d.f.down.kube.AppsV1().Deployments(d.namespace).Get(d.f.ctx, d.name, metav1.GetOptions{})
	if err != nil {
		d.f.t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range d.f.pods(d.namespace, labels.SelectorFromSet(dep.Spec.Selector.MatchLabels).String()) {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// pod is the Deployment's only pod (the test fails if there are several).
func (d *syncerDeployment) pod() corev1.Pod {
	d.f.t.Helper()
	pods := d.pods()
	if len(pods) != 1 {
		d.f.t.Fatalf("%d pods of %s/%s, want 1", len(pods), d.namespace, d.name)
	}
	return pods[0]
}

// leader is the name of the pod holding the Lease ("" when none does): the syncer's identity is
// its host name, the pod's name, and a UID.
func (d *syncerDeployment) leader() string {
	l, err := d.f.down.kube.CoordinationV1().Leases(d.namespace).Get(d.f.ctx, d.lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	name, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return name
}

// logs are a pod's container log as `kubectl logs` shows it (previous: the container's last run).
func (d *syncerDeployment) logs(pod string, previous bool) string {
	args := []string{"logs", "-n", d.namespace, pod, "-c", bootstrap.ContainerName}
	if previous {
		args = append(args, "--previous")
	}
	out, _ := kubectlCommand(d.f.ctx, env.Downstream.Kubeconfig, args...)
	return out
}

func (d *syncerDeployment) tail(pod string, n int) string {
	lines := strings.Split(strings.TrimRight(d.logs(pod, false), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// get GETs a path of a pod's port from the host (the host routes the pod network): the metrics port
// over HTTPS with a scraper's token (--metrics-secure), the probes' port as the kubelet does.
func (d *syncerDeployment) get(pod corev1.Pod, port int, path string) (int, string, error) {
	token := ""
	if port == bootstrap.MetricsPort {
		token = d.scraperToken()
	}
	return d.getAs(pod, port, path, token)
}

// getAs GETs a path of a pod's port with a bearer token (over HTTPS) or without one (plain HTTP on
// the probes' port, HTTPS on the metrics port).
func (d *syncerDeployment) getAs(pod corev1.Pod, port int, path, token string) (int, string, error) {
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, // one client per call: leave no connection open
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the syncer's self-signed certificate
	scheme := "http"
	if port == bootstrap.MetricsPort {
		scheme = "https"
	}
	req, err := http.NewRequest(http.MethodGet, scheme+"://"+net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port))+path, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// scraperToken is a token of the ServiceAccount "scraper" in the syncer's namespace, bound to the
// install's metrics-reader ClusterRole: what a Prometheus is given.
func (d *syncerDeployment) scraperToken() string {
	d.f.t.Helper()
	if d.scraper != "" {
		return d.scraper
	}
	d.scraper = d.token("scraper", d.metricsReader)
	return d.scraper
}

// token makes a ServiceAccount in the syncer's namespace, binds it to clusterRole unless empty, and
// returns a token of it.
func (d *syncerDeployment) token(sa, clusterRole string) string {
	t, kube := d.f.t, d.f.down.kube
	t.Helper()
	if _, err := kube.CoreV1().ServiceAccounts(d.namespace).Create(d.f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if clusterRole != "" {
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: d.namespace + "-" + sa},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: d.namespace}}}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(d.f.ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		})
	}
	tr, err := kube.CoreV1().ServiceAccounts(d.namespace).CreateToken(d.f.ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// scrape reads a pod's /metrics.
func (d *syncerDeployment) scrape(pod corev1.Pod) (map[string]float64, error) {
	code, body, err := d.get(pod, bootstrap.MetricsPort, "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("/metrics of %s: %d", pod.Name, code)
	}
	return support.ParseMetrics(strings.NewReader(body))
}

// restarts is how many times the kubelet restarted a pod's syncer container.
func (d *syncerDeployment) restarts(name string) int32 {
	p, err := d.f.down.kube.CoreV1().Pods(d.namespace).Get(d.f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return -1
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == bootstrap.ContainerName {
			return s.RestartCount
		}
	}
	return -1
}

// process is the host PID of a pod's syncer process: the process whose cgroup is the pod's
// (its UID in the path) and whose command is the image's /syncer.
func (d *syncerDeployment) process(pod corev1.Pod) int {
	d.f.t.Helper()
	uid := string(pod.UID)
	dirs, _ := os.ReadDir("/proc")
	for _, e := range dirs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmdline), "/syncer\x00") {
			continue
		}
		cgroup, err := os.Open(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil {
			continue
		}
		found := false
		sc := bufio.NewScanner(cgroup)
		for sc.Scan() {
			line := sc.Text()
			found = found || strings.Contains(line, uid) || strings.Contains(line, strings.ReplaceAll(uid, "-", "_"))
		}
		cgroup.Close()
		if found {
			return pid
		}
	}
	d.f.t.Fatalf("no syncer process of pod %s (uid %s) on this machine", pod.Name, uid)
	return 0
}

// signal sends a signal to a pod's syncer process, as the kernel or an operator would.
func (d *syncerDeployment) signal(pod corev1.Pod, sig syscall.Signal) {
	d.f.t.Helper()
	if err := syscall.Kill(d.process(pod), sig); err != nil {
		d.f.t.Fatalf("%v to the syncer of %s: %v", sig, pod.Name, err)
	}
}

// expectServing checks a syncer Deployment with an installed identity (syncer-gen's or the chart's):
// a replica leads through the Lease, its pod is Ready (the kubelet's probe of /readyz), its log shows
// klog lines at the manifest's verbosity, and it never met a permission error.
func (d *syncerDeployment) expectServing() {
	t := d.f.t
	t.Helper()
	var leader string
	eventually(t, 60*time.Second, "a replica leads", func() (bool, string) {
		leader = d.leader()
		return leader != "", "no holder of Lease " + d.namespace + "/" + d.lease
	})
	var pod corev1.Pod
	for _, p := range d.pods() {
		if p.Name == leader {
			pod = p
		}
	}
	if pod.Name == "" {
		t.Fatalf("the Lease's holder %q is not a pod of %s/%s", leader, d.namespace, d.name)
	}
	ready := false
	for _, c := range pod.Status.Conditions {
		ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
	}
	if !ready {
		t.Errorf("the leader's pod %s is not Ready: %+v", pod.Name, pod.Status.Conditions)
	}
	if code, body, err := d.get(pod, bootstrap.HealthPort, "/readyz"); err != nil || code != http.StatusOK {
		t.Errorf("/readyz of %s from the host: %d %s %v", pod.Name, code, body, err)
	}
	// The metrics port serves only tokens allowed to get /metrics at the edge (--metrics-secure).
	for _, c := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a forged token", "forged", http.StatusUnauthorized},
		{"a ServiceAccount not bound to " + d.metricsReader, d.token("stranger", ""), http.StatusForbidden},
		{"the scraper", d.scraperToken(), http.StatusOK},
	} {
		if code, body, err := d.getAs(pod, bootstrap.MetricsPort, "/metrics", c.token); err != nil || code != c.want {
			t.Errorf("/metrics of %s over HTTPS with %s: %d %.200s %v, want %d", pod.Name, c.who, code, body, err, c.want)
		}
	}
	// Its metrics say who leads, as Prometheus scrapes them from the pod network (the leader's gauge
	// is set once it has started leading, just after it took the Lease).
	for _, p := range d.pods() {
		want := 0.0
		if p.Name == leader {
			want = 1
		}
		eventually(t, 10*time.Second, "kubestellar_syncer_leader of "+p.Name, func() (bool, string) {
			m, err := d.scrape(p)
			return err == nil && m["kubestellar_syncer_leader{}"] == want, fmt.Sprintf("%v (%v), want %v", m["kubestellar_syncer_leader{}"], err, want)
		})
	}
	log := d.logs(pod.Name, false)
	// Level 0 and level 2 lines (-v=2 in the manifest), in klog's text format.
	for _, want := range []string{`"Leading: starting the engine"`, `"Syncer started"`, `"Created downstream object"`} {
		if !strings.Contains(log, want) {
			t.Errorf("kubectl logs %s lacks %s:\n%s", pod.Name, want, d.tail(pod.Name, 30))
		}
	}
	if !klogLine.MatchString(log) {
		t.Errorf("kubectl logs %s shows no klog line:\n%s", pod.Name, d.tail(pod.Name, 10))
	}
	if strings.Contains(log, "forbidden") {
		t.Errorf("the syncer met a permission error with its installed RBAC:\n%s", d.tail(pod.Name, 30))
	}
}

// klogLine is a line in klog's text format: "I1127 12:00:00.000000       1 file.go:42] ...".
var klogLine = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{6}\s+\d+ [^ :]+:\d+\] `)

// podWriter creates ConfigMaps upstream, one every 50 ms, and changes the one before each, until
// stopped; it returns how many it made. The syncer must deliver each, at its last content, whatever
// happens to its pods meanwhile.
func (f *fixture) podWriter(ns, prefix string) (stop func() int) {
	done, finished := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		defer func() { finished <- n }()
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			cm := configMap(ns, fmt.Sprintf("%s-%03d", prefix, n), map[string]interface{}{"v": "1"})
			if _, err := f.up.dyn.Resource(gvrConfigMaps).Namespace(ns).Create(f.ctx, cm, metav1.CreateOptions{}); err != nil {
				f.t.Errorf("writer: %v", err)
				return
			}
			if n > 0 {
				patch := []byte(`{"data":{"v":"2"}}`)
				if _, err := f.up.dyn.Resource(gvrConfigMaps).Namespace(ns).Patch(f.ctx, fmt.Sprintf("%s-%03d", prefix, n-1),
					types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					f.t.Errorf("writer: %v", err)
					return
				}
			}
			n++
		}
	}()
	return func() int { close(done); return <-finished }
}

// expectAllDelivered waits until the edge holds exactly the n ConfigMaps the writer made, each at its
// last content (the last one unchanged, the others changed once).
func (f *fixture) expectAllDelivered(ns, prefix string, n int) {
	f.t.Helper()
	eventually(f.t, 60*time.Second, fmt.Sprintf("the %d ConfigMaps of %s at the edge, up to date", n, prefix), func() (bool, string) {
		list, err := f.down.dyn.Resource(gvrConfigMaps).Namespace(ns).List(f.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		got, stale := 0, []string{}
		for _, o := range list.Items {
			if !strings.HasPrefix(o.GetName(), prefix+"-") {
				continue
			}
			got++
			want := "2"
			if o.GetName() == fmt.Sprintf("%s-%03d", prefix, n-1) {
				want = "1"
			}
			if v, _, _ := unstructured.NestedString(o.Object, "data", "v"); v != want {
				stale = append(stale, o.GetName())
			}
		}
		return got == n && len(stale) == 0, fmt.Sprintf("%d of %d there, stale: %v", got, n, stale)
	})
}

// TestSyncerPodHandover: two replicas of syncer-gen's Deployment, with leader election (the
// manifest's). Deleting the leader's pod hands over to the standby; rolling a new image out (a
// rolling update of the two replicas) hands over again. A writer upstream creates and changes
// ConfigMaps all along, and an edge object is upsynced meanwhile: everything arrives, at its last
// content, once.
func TestSyncerPodHandover(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("app")
	spec := nsScope([]string{ns}, resource("", "v1", "configmaps"))
	spec["upsync"] = []interface{}{map[string]interface{}{"apiGroup": "", "resources": []interface{}{"configmaps"},
		"namespaces": []interface{}{ns}, "names": []interface{}{"edge-a", "edge-b"}}}
	f.syncerConfig(f.name, spec)
	_, _, d := bootstrapPod(t, f, f.name, bootstrap.RBACBroad, "--replicas=2")
	if n := len(d.pods()); n != 2 {
		t.Fatalf("%d pods, want 2", n)
	}

	// The leader's pod deleted while the writer writes.
	stop := f.podWriter(ns, "a")
	first := d.leader()
	time.Sleep(time.Second) // a few objects written by the first leader
	kubectl(t, env.Downstream.Kubeconfig, "delete", "pod", "-n", d.namespace, first, "--wait=false")
	eventually(t, 60*time.Second, "the standby leads", func() (bool, string) {
		l := d.leader()
		return l != "" && l != first, "leader " + l
	})
	f.create(f.down, gvrConfigMaps, configMap(ns, "edge-a", map[string]interface{}{"k": "v"}))
	time.Sleep(time.Second)
	f.expectAllDelivered(ns, "a", stop())
	f.waitFor(f.up, gvrConfigMaps, ns, "edge-a", upsynced)

	// An in-place upgrade: the same image under a new name, rolled out replica by replica.
	next := strings.TrimSuffix(syncerImage(t), ":dev") + ":next"
	ctr := filepath.Join(nodeDir(), "bin", "ctr")
	if out, err := exec.Command(ctr, "--address", env.Node.ContainerdAddress, "-n", "k8s.io", "images", "tag", "--force",
		"docker.io/library/"+syncerImage(t), "docker.io/library/"+next).CombinedOutput(); err != nil {
		t.Fatalf("ctr images tag: %v\n%s", err, out)
	}
	d.waitAvailable(2 * time.Minute)
	stop = f.podWriter(ns, "b")
	before := d.leader()
	kubectl(t, env.Downstream.Kubeconfig, "set", "image", "-n", d.namespace, "deployment/"+d.name, bootstrap.ContainerName+"="+next)
	f.create(f.down, gvrConfigMaps, configMap(ns, "edge-b", map[string]interface{}{"k": "v"}))
	d.waitAvailable(2 * time.Minute)
	eventually(t, 60*time.Second, "a pod of the new image leads", func() (bool, string) {
		l := d.leader()
		for _, p := range d.pods() {
			if p.Name == l && p.Spec.Containers[0].Image == next {
				return true, ""
			}
		}
		return false, fmt.Sprintf("leader %s (before the rollout: %s)", l, before)
	})
	f.expectAllDelivered(ns, "a", countPrefix(f, ns, "a"))
	f.expectAllDelivered(ns, "b", stop())
	f.waitFor(f.up, gvrConfigMaps, ns, "edge-b", upsynced)
	// Each edge object upsynced once, and nothing else upstream marked as upsynced.
	list, err := f.up.dyn.Resource(gvrConfigMaps).Namespace(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var upsyncedNames []string
	for _, o := range list.Items {
		if ok, _ := upsynced(&o); ok {
			upsyncedNames = append(upsyncedNames, o.GetName())
		}
	}
	if strings.Join(upsyncedNames, ",") != "edge-a,edge-b" {
		t.Errorf("upsynced upstream: %v, want edge-a and edge-b", upsyncedNames)
	}
	d.expectServing()
}

// countPrefix is how many ConfigMaps upstream are named prefix-NNN.
func countPrefix(f *fixture, ns, prefix string) int {
	f.t.Helper()
	list, err := f.up.dyn.Resource(gvrConfigMaps).Namespace(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, o := range list.Items {
		if strings.HasPrefix(o.GetName(), prefix+"-") {
			n++
		}
	}
	return n
}

// nodeDir is where `make node-bins` put the node's files (as TestMain finds them).
func nodeDir() string {
	if d := os.Getenv("NODE_DIR"); d != "" {
		return d
	}
	return testenv.DefaultNodeDir()
}

// TestSyncerPodRestarts: a syncer container killed (SIGKILL) is restarted by the kubelet and
// converges; one whose process stops answering (SIGSTOP) fails its liveness probe and is restarted
// too. Objects created upstream while it is down arrive once it is back.
func TestSyncerPodRestarts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("app")
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	_, _, d := bootstrapPod(t, f, f.name, bootstrap.RBACBroad)
	f.create(f.up, gvrConfigMaps, configMap(ns, "before", map[string]interface{}{"k": "v"}))
	f.waitFor(f.down, gvrConfigMaps, ns, "before", hasMark)

	for i, c := range []struct {
		sig    syscall.Signal
		reason string
	}{{syscall.SIGKILL, "killed"}, {syscall.SIGSTOP, "stopped: its liveness probe fails"}} {
		pod := d.pod()
		restarts := d.restarts(pod.Name)
		start := time.Now()
		d.signal(pod, c.sig)
		name := fmt.Sprintf("while-%d", i)
		f.create(f.up, gvrConfigMaps, configMap(ns, name, map[string]interface{}{"k": "v"}))
		eventually(t, 3*time.Minute, "the kubelet restarts the syncer ("+c.reason+")", func() (bool, string) {
			n := d.restarts(pod.Name)
			return n > restarts, fmt.Sprintf("restarts %d", n)
		})
		t.Logf("%s: restarted after %v", c.reason, time.Since(start).Round(time.Second))
		f.waitFor(f.down, gvrConfigMaps, ns, name, hasMark)
	}
	d.waitAvailable(2 * time.Minute)
	d.expectServing()
	if log := d.logs(d.pod().Name, true); !strings.Contains(log, `"Syncer started"`) {
		t.Errorf("kubectl logs --previous shows no earlier run:\n%s", log)
	}
}
