package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/syncer/test/support"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/syncer/test/testenv"
)

// TestNode: the edge is a real node (testenv's Options.Node). It is Ready and untainted with the
// bed's images; a Deployment of the testapp image runs and becomes available, its pods answering on
// the pod network (from the host, and through a Service from another pod); a pod reaches the edge
// apiserver through the kubernetes Service and each upstream at the URL of the bed's kubeconfigs,
// whose serving certificates name what pods dial; and a pod whose image cannot be pulled is in
// ErrImagePull or ImagePullBackOff at once. The parts run side by side.
func TestNode(t *testing.T) {
	n := env.Node
	if n == nil {
		support.Skip(t, "the bed has no node (E2E_NODE=0)")
	}
	f := newFixture(t)
	cs := f.down.kube
	ns := f.name
	if _, err := cs.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	// Pods need the namespace's default ServiceAccount, which the controller manager makes.
	eventually(t, 30*time.Second, "the default ServiceAccount", func() (bool, string) {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(f.ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})

	t.Run("Ready", func(t *testing.T) {
		t.Parallel()
		node, err := cs.CoreV1().Nodes().Get(f.ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ready := false
		for _, c := range node.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !ready || len(node.Spec.Taints) > 0 || node.Spec.Unschedulable {
			t.Errorf("node %s: Ready %v, taints %v, unschedulable %v; want Ready, untainted", n.Name, ready, node.Spec.Taints, node.Spec.Unschedulable)
		}
		var ip string
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		if ip != n.IP {
			t.Errorf("node InternalIP %q, want the bed's node address %s", ip, n.IP)
		}
		var images []string
		for _, img := range node.Status.Images {
			images = append(images, img.Names...)
		}
		for _, want := range []string{testenv.PauseImage, testenv.TestAppImage} {
			if !strings.Contains(strings.Join(images, " "), want) {
				t.Errorf("node images %v lack %s", images, want)
			}
		}
		t.Logf("node %s Ready at %s, pods on %s, kubelet %s, %s", n.Name, ip, n.PodCIDR, node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.ContainerRuntimeVersion)
	})

	t.Run("Deployment", func(t *testing.T) {
		t.Parallel()
		labels := map[string]string{"app": "web"}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						TerminationGracePeriodSeconds: ptr.To[int64](1),
						Containers: []corev1.Container{{
							Name: "httpd", Image: testenv.TestAppImage, Command: []string{"httpd", "-f", "-p", "8080", "-h", "/www"},
							Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
							ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
						}},
					},
				},
			},
		}
		start := time.Now()
		if _, err := cs.AppsV1().Deployments(ns).Create(f.ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: corev1.ServiceSpec{
			Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		}}
		svc, err := cs.CoreV1().Services(ns).Create(f.ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 90*time.Second, "the Deployment's 2 replicas ready and available", func() (bool, string) {
			d, err := cs.AppsV1().Deployments(ns).Get(f.ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return d.Status.ReadyReplicas == 2 && d.Status.AvailableReplicas == 2, fmt.Sprintf("status %+v; pods: %s", d.Status, podStates(f.ctx, ns, "app=web"))
		})
		t.Logf("Deployment web: 2 replicas ready %.1fs after its creation", time.Since(start).Seconds())
		pods, err := cs.CoreV1().Pods(ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != n.Name || p.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s: node %q phase %s; want Running on %s", p.Name, p.Spec.NodeName, p.Status.Phase, n.Name)
			}
			// The host routes the pod network to the node.
			body, err := httpGet(fmt.Sprintf("http://%s/", net.JoinHostPort(p.Status.PodIP, "8080")))
			if err != nil || body != "kubestellar-syncer-testapp\n" {
				t.Errorf("GET pod %s at %s:8080 from the host: %q %v", p.Name, p.Status.PodIP, body, err)
			}
		}
		// Another pod reaches them through their Service (kube-proxy's rules, which kube-proxy writes
		// once it sees the Service's endpoints: a few tries, a second apart; busybox's own wget -T
		// crashes, so timeout bounds each, and the shell reports a try timeout ended as "Terminated").
		// The body is the log's last line.
		out := runPod(f.ctx, t, ns, "svc-client", "for i in 1 2 3 4 5 6 7 8 9 10; do timeout 3 wget -q -O - http://"+svc.Spec.ClusterIP+"/ && exit 0; echo \"try $i failed\"; sleep 1; done; exit 1", 60*time.Second)
		if !strings.HasSuffix(out, "\nkubestellar-syncer-testapp\n") && out != "kubestellar-syncer-testapp\n" {
			t.Errorf("wget of Service web (%s) from a pod: %q", svc.Spec.ClusterIP, out)
		} else if out != "kubestellar-syncer-testapp\n" {
			t.Logf("Service web reached from a pod after failed tries: %q", out)
		}
	})

	t.Run("ReachesAPIServers", func(t *testing.T) {
		t.Parallel()
		// Every server a pod dials, by the name or address it dials: the edge apiserver through the
		// kubernetes Service (in-cluster config), each upstream at its kubeconfig's URL.
		targets := map[string]string{"edge (kubernetes Service)": "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"}
		for name, s := range map[string]string{"upstream kube-apiserver": env.Upstream.URL, "upstream under test": upstream.URL} {
			u, err := url.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			targets[name] = u.Host
		}
		if env.KCP != nil {
			u, _ := url.Parse(env.KCP.URL)
			targets["kcp"] = u.Host
		}
		// busybox's own TLS (1.35) offers only SHA-1 signatures, which Go's TLS refuses: the pod
		// connects (TCP), and the certificates are checked below from the host, by the names pods use.
		var script strings.Builder
		script.WriteString("set -e; test -s /var/run/secrets/kubernetes.io/serviceaccount/token; test -s /var/run/secrets/kubernetes.io/serviceaccount/ca.crt\n")
		for name, hostPort := range targets {
			host, port, _ := strings.Cut(hostPort, ":")
			fmt.Fprintf(&script, "nc -w 5 %s %s </dev/null && echo \"reached %s at %s:%s\"\n", host, port, name, host, port)
		}
		out := runPod(f.ctx, t, ns, "reach", script.String(), 60*time.Second)
		for name := range targets {
			if !strings.Contains(out, "reached "+name+" at ") {
				t.Errorf("the pod did not reach the %s: its log:\n%s", name, out)
			}
		}
		t.Logf("from a pod:\n%s", strings.TrimSpace(out))

		// The certificates name what pods dial: the kubernetes Service's IP and names, the URLs' hosts.
		edge, _ := url.Parse(env.Downstream.URL)
		for _, serverName := range []string{n.ServiceIP, "kubernetes", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", edge.Hostname()} {
			checkTLS(t, edge.Host, serverName, env.Downstream.CAFile())
		}
		for _, s := range []*testenv.Server{env.Upstream, upstream} {
			u, _ := url.Parse(s.URL)
			checkTLS(t, u.Host, u.Hostname(), s.CAFile())
		}
	})

	t.Run("Unpullable", func(t *testing.T) {
		t.Parallel()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unpullable", Namespace: ns}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "c", Image: testenv.UnpullableImage}},
		}}
		start := time.Now()
		if _, err := cs.CoreV1().Pods(ns).Create(f.ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var reason string
		eventually(t, 30*time.Second, "ErrImagePull or ImagePullBackOff", func() (bool, string) {
			p, err := cs.CoreV1().Pods(ns).Get(f.ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range p.Status.ContainerStatuses {
				if w := c.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
					reason = w.Reason + ": " + w.Message
					return true, ""
				}
			}
			return false, fmt.Sprintf("phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
		})
		t.Logf("%s %.1fs after the pod's creation", reason, time.Since(start).Seconds())
	})
}

// checkTLS checks that the server at addr presents a certificate for serverName signed by the CA in
// caFile.
func checkTLS(t *testing.T, addr, serverName, caFile string) {
	t.Helper()
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: serverName, RootCAs: pool})
	if err != nil {
		t.Errorf("the certificate of %s for %s: %v", addr, serverName, err)
		return
	}
	conn.Close()
}

// runPod runs script in a testapp pod on the node, waits for it to end and returns its log (read
// through the apiserver from the kubelet); a pod that fails fails the test.
func runPod(ctx context.Context, t *testing.T, ns, name, script string, timeout time.Duration) string {
	t.Helper()
	cs := mustClients(env.Downstream).kube
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers:                    []corev1.Container{{Name: "c", Image: testenv.TestAppImage, Command: []string{"sh", "-c", script}}},
	}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, logErr := podLog(ctx, ns, name)
	if err != nil || phase != corev1.PodSucceeded {
		t.Fatalf("pod %s: phase %s, %v; log (%v):\n%s\npods: %s", name, phase, err, logErr, logs, podStates(ctx, ns, ""))
	}
	if logErr != nil {
		t.Fatalf("pod %s's log: %v", name, logErr)
	}
	return logs
}

func podLog(ctx context.Context, ns, name string) (string, error) {
	rc, err := mustClients(env.Downstream).kube.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	return string(data), err
}

// podStates sums up the pods of a namespace (matching selector) for a failure message.
func podStates(ctx context.Context, ns, selector string) string {
	pods, err := mustClients(env.Downstream).kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "%s %s node=%q", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil {
				fmt.Fprintf(&b, " %s: %s %s", c.Name, w.Reason, w.Message)
			}
		}
		b.WriteString("; ")
	}
	return b.String()
}
