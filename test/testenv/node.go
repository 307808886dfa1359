package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The edge's node (Options.Node): containerd, a kubelet and kube-proxy in the network namespace of
// the bed's slot (nodenet.go), and a kube-scheduler, so that Pods really run at the edge.

const (
	// NodeName is the node's name: its Node object's and the kubelet's --hostname-override.
	NodeName = "edge-node"
	// TestAppImage is a workload image for tests and the demo, imported into the node: Debian's
	// static busybox with its applets in /bin (sh, sleep, httpd, wget, nc, ...), entrypoint none,
	// command sh; /www/index.html for `httpd -f -p 8080 -h /www`.
	TestAppImage = "kubestellar-syncer-testapp:dev"
	// PauseImage is the pod sandbox image (containerd's sandbox_image), built here from source.
	PauseImage = "kubestellar-syncer-pause:dev"
	// UnpullableImage names a registry on the node's loopback where nothing listens: its pull fails at
	// once (ErrImagePull, then ImagePullBackOff) and nothing leaves the machine. Any image not imported
	// fails too (the node has no route off the machine), but not always as fast.
	UnpullableImage = "127.0.0.1:9/none:1"

	kubeletPort       = 10250
	kubeletHealthPort = 10248
	proxyHealthPort   = 10256
	proxyMetricsPort  = 10249
)

// NodeBinaryNames are the binaries Options.Node needs in Options.BinDir (`make e2e-bins`).
var NodeBinaryNames = []string{"kubelet", "kube-scheduler", "kube-proxy"}

// nodeDirFiles are what Options.Node needs in Options.NodeDir (`make node-bins`).
var nodeDirFiles = []string{
	"bin/containerd", "bin/containerd-shim-runc-v2", "bin/ctr", "bin/runc",
	"cni/bridge", "cni/host-local", "cni/loopback", "cni/portmap",
	"images/pause.docker.tar", "images/testapp.docker.tar",
}

// nodeCommands are what the node runs from PATH: iproute2 and util-linux (the network namespace),
// iptables (kube-proxy, the CNI plugins, the kubelet), conntrack (kube-proxy).
var nodeCommands = []string{"ip", "nsenter", "iptables", "iptables-save", "iptables-restore", "conntrack", "mount", "umount"}

// MissingNodeFiles lists what Options.Node lacks: binaries in binDir, packages and images in
// nodeDir, commands on PATH.
func MissingNodeFiles(binDir, nodeDir string) []string {
	var missing []string
	for _, b := range NodeBinaryNames {
		if fi, err := os.Stat(filepath.Join(binDir, b)); err != nil || fi.IsDir() {
			missing = append(missing, b)
		}
	}
	for _, f := range nodeDirFiles {
		if fi, err := os.Stat(filepath.Join(nodeDir, f)); err != nil || fi.IsDir() {
			missing = append(missing, f)
		}
	}
	for _, c := range nodeCommands {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	return missing
}

// DefaultNodeDir is where `make node-bins` puts the node's packages and images by default:
// <user cache>/kubestellar-syncer/node ($XDG_CACHE_HOME or ~/.cache).
func DefaultNodeDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "kubestellar-syncer", "node")
}

// Node is the edge's node. Its addresses exist only on this machine; see nodenet.go.
type Node struct {
	// Name is the Node's name (NodeName).
	Name string `json:"name"`
	// HostIP is the bed's address on the host side of the node's veth pair (Env.Address): the
	// apiservers and kcp listen there, and pods reach them there.
	HostIP string `json:"hostIP"`
	// IP is the node's address (its InternalIP, where the kubelet listens), inside Netns.
	IP string `json:"ip"`
	// PodCIDR is the pods' network, on a bridge inside Netns, routed by the host via IP.
	PodCIDR string `json:"podCIDR"`
	// ServiceCIDR is the Services' ClusterIP range; ServiceIP the kubernetes Service's address.
	ServiceCIDR string `json:"serviceCIDR"`
	ServiceIP   string `json:"serviceIP"`
	// Netns is the node's network namespace (`ip netns exec <Netns> ...`).
	Netns string `json:"netns"`
	// ContainerdAddress is the socket of the node's containerd (`ctr --address <it> -n k8s.io ...`).
	ContainerdAddress string `json:"containerdAddress"`
	// Images are the images imported into the node's containerd, as containerd names them.
	Images []string `json:"images"`
	// Slot is the bed's slot on this machine (nodenet.go).
	Slot int `json:"slot"`
	// Dir is the node's state folder: containerd's, the kubelet's, the pods' logs.
	Dir string `json:"dir"`
	rec *slotRecord
	// imported is how long the images took to import, from containerd's start.
	imported time.Duration
}

const nodeFile = "node.json"

// node paths under Node.Dir.
func (n *Node) path(parts ...string) string {
	return filepath.Join(append([]string{n.Dir}, parts...)...)
}

// setUpNode takes a slot, records the node in the state folder (so that Stop and StopDir find it
// even if the start fails half-way) and makes its network; the servers then listen on HostIP.
func (e *Env) setUpNode() error {
	if os.Geteuid() != 0 {
		return errors.New("testenv: Options.Node needs root (network namespaces, mounts, cgroups)")
	}
	if missing := MissingNodeFiles(e.opts.BinDir, e.opts.NodeDir); len(missing) > 0 {
		return fmt.Errorf("testenv: the node lacks %v (in %s, %s or on PATH: run `make node-bins`)", missing, e.opts.BinDir, e.opts.NodeDir)
	}
	for _, img := range e.opts.NodeImages {
		if _, err := os.Stat(img); err != nil {
			return fmt.Errorf("testenv: node image: %w", err)
		}
	}
	start := time.Now()
	rec, err := takeSlot(e.Dir, e.logf)
	if err != nil {
		return err
	}
	n := &Node{Name: NodeName, HostIP: rec.hostIP(), IP: rec.nodeIP(), PodCIDR: rec.podCIDR(), ServiceCIDR: serviceCIDR,
		ServiceIP: serviceIP, Netns: rec.netns(), Slot: rec.Slot, Dir: filepath.Join(e.Dir, "node"), rec: rec}
	n.ContainerdAddress = n.path("containerd.sock")
	e.Node = n
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return err
	}
	if err := n.save(e.Dir); err != nil {
		return err
	}
	if err := setUpNetwork(rec); err != nil {
		return err
	}
	e.logf("testenv: node network %s: host %s, node %s, pods %s (%.1fs)", n.Netns, n.HostIP, n.IP, n.PodCIDR, time.Since(start).Seconds())
	return nil
}

func (n *Node) save(envDir string) error {
	data, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(envDir, nodeFile), data, 0o644)
}

// loadNode reads the node recorded in a state folder (nil, nil if it has none).
func loadNode(envDir string) (*Node, error) {
	data, err := os.ReadFile(filepath.Join(envDir, nodeFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n := &Node{}
	if err := json.Unmarshal(data, n); err != nil {
		return nil, fmt.Errorf("testenv: %s: %w", filepath.Join(envDir, nodeFile), err)
	}
	n.rec = &slotRecord{Slot: n.Slot, Dir: envDir}
	return n, nil
}

// cpuReport sums up the CPU time the node's processes and its pods (the slot's cgroups) have used,
// for the log line at Stop: what the node cost the machine while it ran.
func (e *Env) cpuReport() string {
	var parts []string
	for _, name := range []string{"kubelet", "containerd", "kube-proxy", "kube-scheduler"} {
		if p := e.procByName(name); p != nil {
			parts = append(parts, fmt.Sprintf("%s %.1fs", name, processCPU(p.pid).Seconds()))
		}
	}
	if data, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuacct", e.Node.Netns, "cpuacct.usage")); err == nil {
		if ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil {
			parts = append(parts, fmt.Sprintf("pods %.1fs", time.Duration(ns).Seconds()))
		}
	}
	return strings.Join(parts, ", ")
}

// processCPU is the CPU time (user and system) a live process has used, from /proc/<pid>/stat
// (clock ticks of 1/100 s, as on every Linux this runs on).
func processCPU(pid int) time.Duration {
	fields := procStat(pid)
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// teardown removes everything the node made (teardownSlot) once the bed's processes are stopped.
func (n *Node) teardown() error {
	unlock, err := lockSlots()
	if err != nil {
		return err
	}
	defer unlock()
	if r, err := readSlot(n.Slot); err == nil && r.Dir != n.rec.Dir {
		// The slot was swept (this bed was taken for dead) and taken again: not ours any more.
		return nil
	}
	return teardownSlot(n.rec)
}

// startContainerd writes the node's containerd and CNI configurations, starts containerd in the
// node's network namespace and, in the background, imports the images once it answers; the returned
// channel yields the import's outcome.
func (e *Env) startContainerd(ctx context.Context) (<-chan error, error) {
	n := e.Node
	cniConf := n.path("cni", "net.d")
	for _, d := range []string{cniConf, n.path("cni", "ipam"), n.path("pod-logs"), n.path("volume-plugins")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(cniConf, "10-testenv.conflist"), []byte(cniConfig(n)), 0o644); err != nil {
		return nil, err
	}
	cfg := n.path("containerd.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(n, e.opts.NodeDir)), 0o644); err != nil {
		return nil, err
	}
	bin := filepath.Join(e.opts.NodeDir, "bin")
	// containerd finds its shim on PATH; the shim runs runc by the configured path.
	if err := e.spawnIn(n.Netns, []string{"PATH=" + bin + ":" + os.Getenv("PATH")}, "containerd", filepath.Join(bin, "containerd"),
		"--config", cfg, "--log-level", "warn"); err != nil {
		return nil, err
	}
	images := append([]string{filepath.Join(e.opts.NodeDir, "images", "pause.docker.tar"), filepath.Join(e.opts.NodeDir, "images", "testapp.docker.tar")},
		e.opts.NodeImages...)
	done := make(chan error, 1)
	go func() { done <- n.importImages(ctx, filepath.Join(bin, "ctr"), images) }()
	return done, nil
}

// importImages waits for containerd's socket and imports each image archive into namespace k8s.io
// (the CRI's), unpacked for the overlayfs snapshotter.
func (n *Node) importImages(ctx context.Context, ctr string, archives []string) error {
	start := time.Now()
	defer func() { n.imported = time.Since(start) }()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		c, err := net.Dial("unix", n.ContainerdAddress)
		if err == nil {
			c.Close()
		}
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("containerd does not answer on %s: %w", n.ContainerdAddress, err)
	}
	for _, a := range archives {
		out, err := exec.CommandContext(ctx, ctr, "--address", n.ContainerdAddress, "--namespace", "k8s.io", "images", "import", a).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ctr images import %s: %w: %s", a, err, strings.TrimSpace(string(out)))
		}
		// "unpacking docker.io/library/kubestellar-syncer-testapp:dev (sha256:...)...done"
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "unpacking" {
				n.Images = append(n.Images, f[1])
			}
		}
	}
	return nil
}

// startNodeAgents starts the kubelet and kube-proxy in the node's network namespace and the
// kube-scheduler on the host, against the downstream apiserver.
func (e *Env) startNodeAgents(p *pki) error {
	n := e.Node
	kubeconfigs := map[string][2]string{
		"kubelet": {p.kubeletCert, p.kubeletKey}, "kube-proxy": {p.proxyCert, p.proxyKey}, "kube-scheduler": {p.schedulerCert, p.schedulerKey},
	}
	for name, cred := range kubeconfigs {
		if err := writeClientKubeconfig(n.path(name+".kubeconfig"), "edge", e.Downstream.URL, p.caCert, cred[0], cred[1]); err != nil {
			return err
		}
	}
	if err := os.WriteFile(n.path("kubelet.yaml"), []byte(kubeletConfig(n, p)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(n.path("kube-proxy.yaml"), []byte(kubeProxyConfig(n)), 0o644); err != nil {
		return err
	}
	if err := e.spawnIn(n.Netns, nil, "kubelet", filepath.Join(e.opts.BinDir, "kubelet"),
		"--config="+n.path("kubelet.yaml"), "--kubeconfig="+n.path("kubelet.kubeconfig"), "--root-dir="+n.path("kubelet"),
		"--hostname-override="+n.Name, "--node-ip="+n.IP, "--v=1"); err != nil {
		return err
	}
	if err := e.spawnIn(n.Netns, nil, "kube-proxy", filepath.Join(e.opts.BinDir, "kube-proxy"),
		"--config="+n.path("kube-proxy.yaml"), "--v=1"); err != nil {
		return err
	}
	kc := n.path("kube-scheduler.kubeconfig")
	return e.spawn("kube-scheduler", filepath.Join(e.opts.BinDir, "kube-scheduler"),
		"--kubeconfig="+kc, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0", "--v=1")
}

// waitNode waits for the images, the Node Ready and without its not-ready taint (lifted by the
// controller manager's nodelifecycle), and kube-proxy's first sync of its rules.
func (e *Env) waitNode(ctx context.Context, images <-chan error, started time.Time) error {
	n := e.Node
	select {
	case err := <-images:
		if err != nil {
			return e.failure("containerd", err)
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	e.logf("testenv: node images imported in %.1fs: %s", n.imported.Seconds(), strings.Join(n.Images, ", "))
	cfg, err := e.Downstream.RESTConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	proxyHealth := fmt.Sprintf("http://%s:%d/healthz", n.IP, proxyHealthPort)
	client := &http.Client{Timeout: 2 * time.Second}
	// ready says why the node is not ready yet (nil: it is).
	ready := func(ctx context.Context) error {
		node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ok, why := nodeReady(node); !ok {
			return errors.New(why)
		}
		resp, err := client.Get(proxyHealth)
		if err != nil {
			return fmt.Errorf("kube-proxy: %w", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("kube-proxy %s: %d", proxyHealth, resp.StatusCode)
		}
		return nil
	}
	last := errors.New("not checked yet")
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"containerd", "kubelet", "kube-proxy", "kube-scheduler"} {
			if p := e.procByName(name); p != nil && !alive(p.pid) {
				return false, e.failure(name, errors.New("exited during start-up"))
			}
		}
		last = ready(ctx)
		return last == nil, nil
	})
	if err != nil {
		if ctx.Err() == nil && wait.Interrupted(err) {
			return e.failure("kubelet", fmt.Errorf("node %s not ready: %w", n.Name, last))
		}
		return err
	}
	e.logf("testenv: node %s Ready at %s (pods %s), %.1fs after its start", n.Name, n.IP, n.PodCIDR, time.Since(started).Seconds())
	return nil
}

// nodeReady tells whether a Node is Ready and schedulable for ordinary pods.
func nodeReady(node *corev1.Node) (bool, string) {
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status != corev1.ConditionTrue {
				return false, fmt.Sprintf("Ready=%s: %s", c.Status, c.Message)
			}
			ready = true
		}
	}
	if !ready {
		return false, "no Ready condition yet"
	}
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false, "tainted " + t.ToString()
		}
	}
	return true, ""
}

// containerdConfig is the node's containerd configuration: everything under Node.Dir, the CRI
// plugin's pod sandbox image built here, and the settings this kind of machine needs.
func containerdConfig(n *Node, nodeDir string) string {
	return fmt.Sprintf(`# Written by test/testenv (node.go) for the test bed's node.
version = 2
root = %[1]q
state = %[2]q
# Snapshotters this machine cannot run, and tracing: fewer warnings at start.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  # Built here from source and imported (hack/build-node-images.sh): no image comes from outside.
  sandbox_image = "docker.io/library/%[5]s"
  # Required on this kind of machine: it denies a negative oom_score_adj, and runc would fail every
  # pod sandbox ("can't get final child's PID from pipe: EOF") asked for the kubelet's -998.
  restrict_oom_score_adj = true
  # The pods' network namespaces are mounted under the state folder, not /run/netns: a teardown finds
  # them with every other mount of the bed.
  netns_mounts_under_state_dir = true
  # The exec/attach/port-forward streams the kubelet proxies, on the node's own loopback.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %[6]q
        Root = %[7]q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[8]q
    conf_dir = %[9]q
    max_conf_num = 1
`, n.path("containerd", "root"), n.path("containerd", "state"), n.ContainerdAddress, n.path("containerd", "opt"), PauseImage,
		filepath.Join(nodeDir, "bin", "runc"), n.path("containerd", "runc"), filepath.Join(nodeDir, "cni"), n.path("cni", "net.d"))
}

// cniConfig is the pods' network: a bridge inside the node's namespace, the node the pods' gateway,
// addresses from PodCIDR kept under Node.Dir, hostPort through portmap. No masquerading: the host
// routes PodCIDR to the node, and nothing else is reachable.
func cniConfig(n *Node) string {
	gw := strings.TrimSuffix(n.PodCIDR, "0/24") + "1"
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": "kst0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, n.rec.cniNetwork(), n.PodCIDR, gw, n.path("cni", "ipam"))
}

// kubeletConfig is the kubelet's configuration: what this kind of machine needs (cgroup v1, no
// systemd, a busy shared disk), its own cgroup root and folders, and listening on the node's address.
func kubeletConfig(n *Node, p *pki) string {
	return fmt.Sprintf(`# Written by test/testenv (node.go) for the test bed's node.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The machine's hierarchies are cgroup v1 (Kubernetes 1.35 refuses them unless told), no systemd runs.
failCgroupV1: false
cgroupDriver: cgroupfs
# The node's pods under /sys/fs/cgroup/<hierarchy>/%[1]s/kubepods: apart from any other bed's.
cgroupRoot: %[2]q
containerRuntimeEndpoint: unix://%[3]s
failSwapOn: false
# On the node's address (in its network namespace) only, never on every interface.
address: %[4]q
port: %[5]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[6]d
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[7]q
authorization:
  mode: Webhook
# A shared developer disk may be nearly full: evict only when it really is, never collect images.
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
  imagefs.inodesFree: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podLogsDir: %[8]q
volumePluginDir: %[9]q
# No cluster DNS: pods resolve nothing but /etc/hosts, and fail at once otherwise.
resolvConf: ""
clusterDomain: cluster.local
serializeImagePulls: false
`, n.Netns, n.rec.cgroupRoot(), n.ContainerdAddress, n.IP, kubeletPort, kubeletHealthPort, p.caCert, n.path("pod-logs"), n.path("volume-plugins"))
}

// kubeProxyConfig is kube-proxy's configuration: iptables mode inside the node's network namespace,
// health and metrics there too, and the conntrack limits left as the kernel has them (they are not
// all per namespace).
func kubeProxyConfig(n *Node) string {
	return fmt.Sprintf(`# Written by test/testenv (node.go) for the test bed's node.
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[1]q
hostnameOverride: %[2]q
mode: iptables
clusterCIDR: %[3]q
healthzBindAddress: %[4]s:%[5]d
metricsBindAddress: 127.0.0.1:%[6]d
nodePortAddresses: ["%[4]s/32"]
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, n.path("kube-proxy.kubeconfig"), n.Name, n.PodCIDR, n.IP, proxyHealthPort, proxyMetricsPort)
}
