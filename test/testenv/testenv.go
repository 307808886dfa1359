package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Options say where the binaries are and where the environment keeps its state.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager.
	BinDir string
	// Dir is the state folder: PKI, etcd data, logs, kubeconfigs and the PID file.
	Dir string
	// Detach starts the processes in their own session so that they outlive the caller
	// (`make testenv`); otherwise they are killed when the caller dies.
	Detach bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// KCP also starts a kcp server (Env.KCP) from the binaries in KCPBinDir (`make kcp-bins`); see
	// Env.SetUpKCPMailboxes for the mailbox workspaces.
	KCP       bool
	KCPBinDir string
	// UpstreamControllers also runs a kube-controller-manager against upstream with the namespace
	// controllers every real cluster runs: root-CA publisher, ServiceAccount and ServiceAccount token.
	UpstreamControllers bool
	// Node gives the edge a real node (Env.Node, node.go): containerd, a kubelet and kube-proxy in a
	// network namespace of the bed's own, and a kube-scheduler. The servers then listen on the bed's
	// address (Env.Address) instead of 127.0.0.1, where pods reach them too. It needs root, the node's
	// binaries in BinDir (NodeBinaryNames) and NodeDir (`make node-bins`).
	Node bool
	// NodeDir holds containerd, runc, the CNI plugins and the node's images (DefaultNodeDir).
	NodeDir string
	// NodeImages are more image archives (docker-archive or OCI tarballs) to import into the node's
	// containerd, e.g. the syncer's image of `make image`; PauseImage and TestAppImage always are.
	NodeImages []string
}

// Server is one kube-apiserver of the environment.
type Server struct {
	Name string
	URL  string
	// Kubeconfig is an admin kubeconfig (client certificate, system:masters; for a kcp workspace,
	// kcp's admin token).
	Kubeconfig string
	// BearerToken authenticates as an administrator by token alone.
	BearerToken string
	pki         *pki
}

// RESTConfig returns an admin client config for the server.
func (s *Server) RESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
}

// TokenConfig returns a client config for the server that authenticates with a bearer token only.
func (s *Server) TokenConfig(token string) *rest.Config {
	return &rest.Config{Host: s.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAFile: s.pki.caCert}}
}

// CAFile is the CA that signed the servers' certificates.
func (s *Server) CAFile() string { return s.pki.caCert }

// ServingCert is the environment's serving certificate and key (for 127.0.0.1, localhost, Address and
// the kubernetes Service, signed by the kube-apiservers' CA, Downstream.CAFile), for a test's own
// server in front of an apiserver.
func (e *Env) ServingCert() (certFile, keyFile string) {
	return e.Downstream.pki.servingCert, e.Downstream.pki.servingKey
}

// Env is a running environment.
type Env struct {
	Dir        string
	Upstream   *Server
	Downstream *Server
	KCP        *KCP // the kcp server, with Options.KCP
	// Node is the edge's node, with Options.Node.
	Node *Node
	// Address is where the kube-apiservers and kcp listen, and the host of every URL and kubeconfig
	// the environment writes: 127.0.0.1, or with a node the bed's address (Node.HostIP), which pods
	// reach too. Never every interface.
	Address string
	// EtcdURL is the etcd client URL both kube-apiservers use.
	EtcdURL string
	opts    Options

	mu    sync.Mutex // guards procs: a test may start one (StartEdge) while others run
	procs []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	pid  int
	log  string
}

// BinaryNames are the binaries Start needs in Options.BinDir.
var BinaryNames = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

// MissingBinaries lists the binaries absent from dir.
func MissingBinaries(dir string) []string {
	var missing []string
	for _, b := range BinaryNames {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
			missing = append(missing, b)
		}
	}
	return missing
}

// Start starts etcd, the two apiservers and the controller manager, and returns once both apiservers
// answer /readyz and the controller manager has made the default ServiceAccount downstream. On
// failure it stops what it started and includes the failing process's last log lines in the error.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if missing := MissingBinaries(opts.BinDir); len(missing) > 0 {
		return nil, fmt.Errorf("testenv: %v missing in %s (run `make e2e-bins`)", missing, opts.BinDir)
	}
	if missing := MissingKCPBinaries(opts.KCPBinDir); opts.KCP && len(missing) > 0 {
		return nil, fmt.Errorf("testenv: %v missing in %q (run `make kcp-bins`)", missing, opts.KCPBinDir)
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	env := &Env{Dir: dir, opts: opts, Address: "127.0.0.1"}
	ok := false
	defer func() {
		if !ok {
			if err := env.Stop(); err != nil {
				fmt.Fprintf(opts.Log, "testenv: stopping after a failed start: %v\n", err)
			}
		}
	}()
	start := time.Now()
	nodeName := ""
	if opts.Node {
		if err := env.setUpNode(); err != nil {
			return nil, err
		}
		env.Address, nodeName = env.Node.HostIP, env.Node.Name
	}
	p, err := generatePKI(filepath.Join(dir, "pki"), []string{env.Address}, nodeName)
	if err != nil {
		return nil, fmt.Errorf("testenv: PKI: %w", err)
	}
	var images <-chan error
	if opts.Node { // containerd needs no apiserver: it starts, and imports the images, meanwhile
		if images, err = env.startContainerd(ctx); err != nil {
			return nil, err
		}
	}
	ports, err := freePorts(env.Address, 7)
	if err != nil {
		return nil, err
	}
	if opts.KCP { // first: it takes longest to start
		if err := env.startKCP(ports[4:7], p); err != nil {
			return nil, err
		}
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if err := env.spawn("etcd", filepath.Join(opts.BinDir, "etcd"),
		"--name=testenv", "--data-dir="+filepath.Join(dir, "etcd"), "--log-level=warn",
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testenv="+peerURL, "--unsafe-no-fsync"); err != nil {
		return nil, err
	}
	if err := env.waitHTTP(ctx, "etcd", etcdURL+"/health", nil, 30*time.Second); err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Log, "testenv: etcd ready at %s\n", etcdURL)
	env.EtcdURL = etcdURL

	for i, name := range []string{"upstream", "downstream"} {
		s := &Server{Name: name, URL: fmt.Sprintf("https://%s:%d", env.Address, ports[2+i]), Kubeconfig: filepath.Join(dir, name+".kubeconfig"),
			BearerToken: AdminToken, pki: p}
		args := env.apiserverArgs(name, ports[2+i], p)
		if name == "downstream" && opts.Node {
			// The node's apiserver: the kubernetes Service's endpoint is the bed's address (the lease
			// reconciler keeps it), kubelets are authorized as nodes, and the apiserver reaches the
			// kubelet (logs, exec) with the admin's client certificate.
			args = append(args, "--endpoint-reconciler-type=lease", "--authorization-mode=Node,RBAC",
				"--enable-admission-plugins=NodeRestriction",
				"--kubelet-client-certificate="+p.adminCert, "--kubelet-client-key="+p.adminKey,
				"--kubelet-preferred-address-types=InternalIP") // the node's name resolves nowhere
		} else {
			// No pod reaches this one through a Service: no endpoint to keep (127.0.0.1 may not be one).
			args = append(args, "--endpoint-reconciler-type=none", "--authorization-mode=RBAC")
		}
		if err := env.spawn("kube-apiserver-"+name, filepath.Join(opts.BinDir, "kube-apiserver"), args...); err != nil {
			return nil, err
		}
		if err := writeKubeconfig(s); err != nil {
			return nil, err
		}
		if name == "upstream" {
			env.Upstream = s
		} else {
			env.Downstream = s
		}
	}
	for _, s := range []*Server{env.Upstream, env.Downstream} {
		if err := env.waitReady(ctx, s, 60*time.Second); err != nil {
			return nil, err
		}
		fmt.Fprintf(opts.Log, "testenv: %s kube-apiserver ready at %s\n", s.Name, s.URL)
	}

	if err := env.spawn("kube-controller-manager", filepath.Join(opts.BinDir, "kube-controller-manager"),
		"--kubeconfig="+env.Downstream.Kubeconfig,
		"--authentication-kubeconfig="+env.Downstream.Kubeconfig, "--authorization-kubeconfig="+env.Downstream.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
		"--service-account-private-key-file="+p.saKey, "--root-ca-file="+p.caCert, "--use-service-account-credentials=true",
		// nodelifecycle lifts a new Node's not-ready taint once it is Ready (and marks it NotReady when
		// its kubelet stops); pod CIDRs come from the node's CNI configuration, not nodeipam.
		"--controllers=*,-nodeipam,-persistentvolume-binder,-attachdetach,-persistentvolume-expander,-cloud-node-lifecycle,-ttl"); err != nil {
		return nil, err
	}
	if opts.Node {
		if err := env.startNodeAgents(p); err != nil {
			return nil, err
		}
	}
	if opts.UpstreamControllers {
		if err := env.startUpstreamControllers(p); err != nil {
			return nil, err
		}
	}
	if err := env.waitControllers(ctx, env.Downstream, "kube-controller-manager", 90*time.Second); err != nil {
		return nil, err
	}
	if opts.UpstreamControllers {
		if err := env.waitControllers(ctx, env.Upstream, upstreamControllerManager, 90*time.Second); err != nil {
			return nil, err
		}
		fmt.Fprintf(opts.Log, "testenv: kube-controller-manager active on upstream\n")
	}
	if opts.KCP {
		if err := env.waitKCP(ctx, start); err != nil {
			return nil, err
		}
	}
	if opts.Node {
		if err := env.waitNode(ctx, images, start); err != nil {
			return nil, err
		}
		if err := env.Node.save(dir); err != nil { // with the images
			return nil, err
		}
	}
	fmt.Fprintf(opts.Log, "testenv: kube-controller-manager active on downstream; environment up in %.1fs\n", time.Since(start).Seconds())
	if err := env.writePIDs(); err != nil {
		return nil, err
	}
	ok = true
	return env, nil
}

// apiserverArgs are the flags of a kube-apiserver of the environment: its etcd prefix, address, port,
// PKI and service account keys (the caller adds endpoint reconciliation and authorization).
func (e *Env) apiserverArgs(name string, port int, p *pki) []string {
	return []string{"--etcd-servers=" + e.EtcdURL, "--etcd-prefix=/" + name,
		"--bind-address=" + e.Address, "--advertise-address=" + e.Address, "--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(e.Dir, name, "certs"),
		"--tls-cert-file=" + p.servingCert, "--tls-private-key-file=" + p.servingKey,
		"--client-ca-file=" + p.caCert, "--token-auth-file=" + p.tokensFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.saPub, "--service-account-signing-key-file=" + p.saKey,
		"--service-cluster-ip-range=" + serviceCIDR, "--profiling=false"}
}

// freePorts finds n TCP ports free on addr and on 127.0.0.1, where etcd listens.
func freePorts(addr string, n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("testenv: no port free on both %s and 127.0.0.1", addr)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
		if err != nil {
			return nil, fmt.Errorf("testenv: no free port: %w", err)
		}
		lns = append(lns, l)
		port := l.Addr().(*net.TCPAddr).Port
		if addr != "127.0.0.1" {
			l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				continue
			}
			lns = append(lns, l2)
		}
		ports = append(ports, port)
	}
	return ports, nil
}

func (e *Env) spawn(name, bin string, args ...string) error {
	return e.spawnIn("", nil, name, bin, args...)
}

// spawnIn starts a process of the environment in the named network namespace (through nsenter,
// which execs it: the PID is the process's), with env added to this process's environment.
func (e *Env) spawnIn(netns string, env []string, name, bin string, args ...string) error {
	if netns != "" {
		args = append([]string{"--net=" + filepath.Join("/run/netns", netns), "--", bin}, args...)
		bin = "nsenter"
	}
	logPath := filepath.Join(e.Dir, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = e.Dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if e.opts.Detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, pid: cmd.Process.Pid, log: logPath}
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
	go func() { _ = cmd.Wait() }() // reap; liveness is checked through /proc
	fmt.Fprintf(e.opts.Log, "testenv: started %s (pid %d, log %s)\n", name, p.pid, logPath)
	return nil
}

func (e *Env) procByName(name string) *proc {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

// failure wraps err with the last lines of a process's log.
func (e *Env) failure(name string, err error) error {
	p := e.procByName(name)
	if p == nil {
		return err
	}
	return fmt.Errorf("testenv: %s: %w\n--- last lines of %s ---\n%s", name, err, p.log, tail(p.log, 20))
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// alive tells whether a process has not yet finished exiting. A zombie (state Z) has exited unless
// it is a thread-group leader whose other threads are still on their way out: they still hold its
// files, its listening sockets among them, and a server started again on the same port would find it
// in use.
func alive(pid int) bool {
	fields := procStat(pid)
	if len(fields) == 0 {
		return false
	}
	if fields[0] != "Z" {
		return true
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return err == nil && len(tasks) > 1
}

// procStat is a process's /proc/<pid>/stat after its name: field 3 (the state) first, so field N of
// proc(5) at index N-3; nil if the process is gone.
func procStat(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
}

func (e *Env) waitHTTP(ctx context.Context, name, url string, client *http.Client, timeout time.Duration) error {
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Second}
	}
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if p := e.procByName(name); p != nil && !alive(p.pid) {
			return e.failure(name, errors.New("exited during start-up"))
		}
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return e.failure(name, fmt.Errorf("not ready after %s: %w", timeout, last))
}

func (e *Env) waitReady(ctx context.Context, s *Server, timeout time.Duration) error {
	cfg, err := s.RESTConfig()
	if err != nil {
		return err
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg.Clone()}}
	return e.waitHTTP(ctx, "kube-apiserver-"+s.Name, s.URL+"/readyz", client, timeout)
}

// waitControllers waits until the controller manager proc has made the default ServiceAccount and the
// kube-root-ca.crt ConfigMap on s.
func (e *Env) waitControllers(ctx context.Context, s *Server, proc string, timeout time.Duration) error {
	cfg, err := s.RESTConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p := e.procByName(proc); p != nil && !alive(p.pid) {
			return e.failure(proc, errors.New("exited during start-up"))
		}
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err == nil {
			if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return e.failure(proc, fmt.Errorf("no default ServiceAccount or kube-root-ca.crt on %s after %s", s.Name, timeout))
}

func writeKubeconfig(s *Server) error {
	return writeClientKubeconfig(s.Kubeconfig, s.Name, s.URL, s.pki.caCert, s.pki.adminCert, s.pki.adminKey)
}

// writeClientKubeconfig writes a kubeconfig for the server at url, authenticating with a client
// certificate; cluster and context are called name, the user "admin".
func writeClientKubeconfig(path, name, url, ca, cert, key string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: url, CertificateAuthority: ca}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "admin"}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}

const pidFile = "pids"

// writePIDs records "name pid" lines so that StopDir can stop exactly these processes later.
func (e *Env) writePIDs() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, p := range e.procs {
		fmt.Fprintf(&b, "%s %d\n", p.name, p.pid)
	}
	return os.WriteFile(filepath.Join(e.Dir, pidFile), []byte(b.String()), 0o644)
}

// Stop stops every process the environment started, removes what its node made (Node.teardown)
// and removes its state folder.
func (e *Env) Stop() error {
	if e.Node != nil {
		e.logf("testenv: CPU time the node used: %s", e.cpuReport())
	}
	var pids []int
	var names []string
	e.mu.Lock()
	for i := len(e.procs) - 1; i >= 0; i-- {
		pids = append(pids, e.procs[i].pid)
		names = append(names, e.procs[i].name)
	}
	e.procs = nil
	e.mu.Unlock()
	stopPIDs(pids, names)
	if e.Node != nil {
		start := time.Now()
		if err := e.Node.teardown(); err != nil {
			return fmt.Errorf("testenv: removing the node (state kept in %s): %w", e.Dir, err)
		}
		e.logf("testenv: node removed in %.1fs", time.Since(start).Seconds())
	}
	return os.RemoveAll(e.Dir)
}

// logf writes a progress line to Options.Log.
func (e *Env) logf(format string, args ...any) {
	if e.opts.Log != nil {
		fmt.Fprintf(e.opts.Log, format+"\n", args...)
	}
}

// StopDir stops the processes recorded in a state folder by an earlier Start and removes the folder.
// A recorded PID is only signalled while its command line still names the folder, so a PID reused by
// an unrelated process is left alone.
func StopDir(dir string) ([]string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	node, err := loadNode(dir)
	if err != nil {
		return nil, err
	}
	// A node's start-up records it before its PID file: tear it down after whatever processes ran.
	teardown := func(stopped []string) ([]string, error) {
		if node != nil {
			if err := node.teardown(); err != nil {
				return stopped, fmt.Errorf("testenv: removing the node (state kept in %s): %w", dir, err)
			}
			stopped = append(stopped, fmt.Sprintf("node %s (network namespace %s, pods, mounts, cgroups)", node.Name, node.Netns))
		}
		return stopped, os.RemoveAll(dir)
	}
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if errors.Is(err, os.ErrNotExist) {
		return teardown(nil)
	}
	if err != nil {
		return nil, err
	}
	var pids []int
	var names, stopped []string
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		fields := strings.Fields(lines[i])
		if len(fields) != 2 {
			continue
		}
		pid, err := strconv.Atoi(fields[1])
		if err != nil || !alive(pid) || !cmdlineNames(pid, dir) {
			continue
		}
		pids = append(pids, pid)
		names = append(names, fields[0])
		stopped = append(stopped, fmt.Sprintf("%s (pid %d)", fields[0], pid))
	}
	stopPIDs(pids, names)
	return teardown(stopped)
}

// Running tells whether every process recorded in a state folder is alive.
func Running(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return false
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return false
		}
		pid, err := strconv.Atoi(fields[1])
		if err != nil || !alive(pid) || !cmdlineNames(pid, dir) {
			return false
		}
		n++
	}
	return n >= len(BinaryNames)+1 // and kcp and the upstream controller manager if started
}

func cmdlineNames(pid int, dir string) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(data), dir)
}

// stopPIDs stops the processes in two rounds, etcd last: an apiserver shutting down still writes
// (its endpoint lease) and would wait out its timeout for an etcd already gone.
func stopPIDs(pids []int, names []string) {
	var first, last []int
	for i, pid := range pids {
		if names[i] == "etcd" {
			last = append(last, pid)
		} else {
			first = append(first, pid)
		}
	}
	terminate(first)
	terminate(last)
}

// terminate sends SIGTERM, waits up to 10s, then SIGKILLs what is left.
func terminate(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		left := false
		for _, pid := range pids {
			if alive(pid) {
				left = true
			}
		}
		if !left {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, pid := range pids {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Load returns the environment recorded in a state folder by `make testenv`, for tools that attach to
// it (the demo, benchmarks).
func Load(dir string) (*Env, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if !Running(dir) {
		return nil, fmt.Errorf("no running testenv in %s (run `make testenv`)", dir)
	}
	p := &pki{caCert: filepath.Join(dir, "pki", "ca.crt")}
	env := &Env{Dir: dir}
	for _, name := range []string{"upstream", "downstream"} {
		s := &Server{Name: name, Kubeconfig: filepath.Join(dir, name+".kubeconfig"), BearerToken: AdminToken, pki: p}
		cfg, err := clientcmd.LoadFromFile(s.Kubeconfig)
		if err != nil {
			return nil, err
		}
		s.URL = cfg.Clusters[name].Server
		if name == "upstream" {
			env.Upstream = s
		} else {
			env.Downstream = s
		}
	}
	if env.KCP, err = loadKCP(env); err != nil {
		return nil, err
	}
	if env.Node, err = loadNode(dir); err != nil {
		return nil, err
	}
	env.Address = "127.0.0.1"
	if env.Node != nil {
		env.Address = env.Node.HostIP
	}
	return env, nil
}
