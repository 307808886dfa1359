package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/syncer/test/support"
	"github.com/kubestellar/syncer/test/testenv"
)

var (
	env *testenv.Env
	// upstream is the mailbox under test: the plain kube-apiserver (E2E_UPSTREAM=kube, the default) or
	// a KubeStellar-style kcp mailbox workspace, whose Deployments, DaemonSets, Services and Jobs come
	// from an APIBinding (E2E_UPSTREAM=kcp). Both run the controllers a real one runs.
	upstream  *testenv.Server
	mailboxes *testenv.KCPMailboxes // with E2E_UPSTREAM=kcp: the provider and mailbox workspaces
	syncerBin string
	pluginBin string // kubectl-kubestellar-syncer_gen
	repoRoot  string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	bin := os.Getenv("E2E_BIN")
	if missing := testenv.MissingBinaries(bin); bin == "" || len(missing) > 0 {
		msg := fmt.Sprintf("e2e: control-plane binaries %v missing in E2E_BIN=%q (run `make e2e-bins`)", missing, bin)
		if os.Getenv("E2E") == "1" {
			fmt.Fprintln(os.Stderr, msg)
			return 1
		}
		fmt.Println(msg + "; skipping")
		return 0
	}
	wd, _ := os.Getwd()
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	dir, err := os.MkdirTemp("", "syncer-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	syncerBin = filepath.Join(dir, "syncer")
	pluginBin = filepath.Join(dir, "kubectl-kubestellar-syncer_gen")
	build := exec.Command("go", "build", "-race", "-o", dir+"/", "./cmd/syncer", "./cmd/kubectl-kubestellar-syncer_gen")
	build.Dir, build.Stdout, build.Stderr = repoRoot, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the syncer and the plugin:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := testenv.Options{BinDir: bin, Dir: filepath.Join(dir, "env"), Log: os.Stderr}
	// The edge has a real node (node_test.go) unless E2E_NODE=0: root, `make node-bins`.
	if os.Getenv("E2E_NODE") != "0" {
		opts.Node, opts.NodeDir = true, os.Getenv("NODE_DIR")
		if opts.NodeDir == "" {
			opts.NodeDir = testenv.DefaultNodeDir()
		}
		if missing := testenv.MissingNodeFiles(bin, opts.NodeDir); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "e2e: the edge node lacks %v (E2E_BIN=%q, NODE_DIR=%q: run `make node-bins`, or E2E_NODE=0 for no node)\n", missing, bin, opts.NodeDir)
			return 1
		}
		// The syncer's image, when `make image` built it, for tests that run the syncer as a Pod.
		if img := filepath.Join(repoRoot, "_output", "image", "syncer-image.docker.tar"); fileExists(img) {
			opts.NodeImages = append(opts.NodeImages, img)
		}
	}
	kind := os.Getenv("E2E_UPSTREAM")
	switch kind {
	case "", "kube":
		opts.UpstreamControllers = true // root-CA publisher, ServiceAccount and token controllers, as in any cluster
	case "kcp":
		opts.KCP, opts.KCPBinDir = true, os.Getenv("KCP_BIN")
		if missing := testenv.MissingKCPBinaries(opts.KCPBinDir); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "e2e: kcp binaries %v missing in KCP_BIN=%q (run `make kcp-bins`)\n", missing, opts.KCPBinDir)
			return 1
		}
	default:
		fmt.Fprintf(os.Stderr, "e2e: E2E_UPSTREAM=%q: want kube or kcp\n", kind)
		return 1
	}
	env, err = testenv.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping the control plane:", err)
		}
	}()
	upstream = env.Upstream
	if opts.KCP {
		mailboxes, err = env.SetUpKCPMailboxes(ctx, testenv.KCPMailboxOptions{})
		if err == nil {
			upstream, err = mailboxes.Mailbox.Server()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: setting up the kcp mailbox:", err)
			return 1
		}
	}
	fmt.Fprintf(os.Stderr, "e2e: upstream is %s (%s)\n", upstream.Name, upstream.URL)
	if err := applyFile(ctx, mustClients(upstream), filepath.Join(repoRoot, "manifests", "crds", "edge.kubestellar.io_syncerconfigs.yaml")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: installing the SyncerConfig CRD:", err)
		return 1
	}
	up := mustClients(upstream)
	var listErr error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, listErr = up.dyn.Resource(gvrSyncerConfig).List(ctx, metav1.ListOptions{})
		return listErr == nil, nil
	}); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: the SyncerConfig CRD is not served:", listErr)
		return 1
	}
	return m.Run()
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// refreshUpstream reads the kcp mailbox's kubeconfig again, after a restart of kcp changed its admin
// token (testenv.Env.RestartKCPAfter writes it anew); clients made from then on use the new token.
func refreshUpstream(t *testing.T) {
	t.Helper()
	s, err := mailboxes.Mailbox.Server()
	if err != nil {
		t.Fatal(err)
	}
	upstream = s
}

// clients of one side.
type clients struct {
	cfg  *rest.Config
	dyn  dynamic.Interface
	kube kubernetes.Interface
}

func mustClients(s *testenv.Server) clients {
	cfg, err := s.RESTConfig()
	if err != nil {
		panic(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	return clients{cfg: cfg, dyn: dynamic.NewForConfigOrDie(cfg), kube: kubernetes.NewForConfigOrDie(cfg)}
}

var (
	gvrConfigMaps   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrNamespaces   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrServices     = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	gvrDeployments  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrCRDs         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrClusterRoles = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	gvrSyncerConfig = schema.GroupVersionResource{Group: "edge.kubestellar.io", Version: "v2alpha1", Resource: "syncerconfigs"}
)

// fixture is one test's view: both sides' clients and a unique name to build its objects' names from.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	name     string
	up, down clients
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// fixtureRuns counts the fixtures made under each name: a test run again (go test -count=N) gets
// names of its own, as the upstream has no namespace controller to finish deleting the last run's.
var fixtureRuns = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(strings.TrimPrefix(t.Name(), "Test")), "-"), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	fixtureRuns.Lock()
	fixtureRuns.n[name]++
	if run := fixtureRuns.n[name]; run > 1 {
		name = fmt.Sprintf("%s-r%d", name, run)
	}
	fixtureRuns.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &fixture{t: t, ctx: ctx, name: name, up: mustClients(upstream), down: mustClients(env.Downstream)}
}

// in is f for a subtest of f's test (t.Run): the same names and clients, failing t. A parallel
// subtest must not fail its parent from its own goroutine.
func (f *fixture) in(t *testing.T) *fixture {
	sub := *f
	sub.t = t
	return &sub
}

// syncerProc is a running syncer process.
type syncerProc struct {
	t           *testing.T
	cmd         *exec.Cmd
	log         string
	metricsAddr string
	healthAddr  string
	done        chan struct{}
}

type syncerOption func(*[]string)

func withArgs(args ...string) syncerOption {
	return func(a *[]string) { *a = append(*a, args...) }
}

// ownConfigs makes the syncer read only the configs of its own test (testLabel): a test that runs
// side by side with others (t.Parallel) must not sync their namespaces.
func (f *fixture) ownConfigs() syncerOption {
	return withArgs("--syncer-config-selector=" + testLabel + "=" + f.name)
}

// startSyncer runs the syncer as a process with admin kubeconfigs for both sides; it is stopped
// (SIGTERM) when the test ends, and its log is printed when the test failed.
func (f *fixture) startSyncer(opts ...syncerOption) *syncerProc {
	f.t.Helper()
	addr, healthAddr := freeAddr(f.t), freeAddr(f.t)
	args := []string{
		"--upstream-kubeconfig=" + upstream.Kubeconfig, "--downstream-kubeconfig=" + env.Downstream.Kubeconfig,
		"--sync-target-name=" + f.name, "--sync-target-uid=uid-" + f.name,
		"--metrics-bind-address=" + addr, "--health-probe-bind-address=" + healthAddr, "-v=4",
	}
	for _, o := range opts {
		o(&args)
	}
	p := startProcess(f.t, syncerBin, args, addr)
	p.healthAddr = healthAddr
	return p
}

// probe GETs a health endpoint of the syncer: its status code and body ("" and 0 when unreachable).
func (p *syncerProc) probe(path string) (int, string) {
	resp, err := http.Get("http://" + p.healthAddr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func startProcess(t *testing.T, bin string, args []string, metricsAddr string) *syncerProc {
	t.Helper()
	logFile, err := os.CreateTemp("", "syncer-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &syncerProc{t: t, cmd: cmd, log: logFile.Name(), metricsAddr: metricsAddr, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logFile.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		switch {
		case t.Failed():
			t.Logf("syncer log (%s), last lines:\n%s", p.log, p.tail(60))
		case os.Getenv("E2E_KEEP_LOGS") != "":
			t.Logf("syncer log kept (E2E_KEEP_LOGS): %s", p.log)
		default:
			os.Remove(p.log)
		}
	})
	return p
}

// stop sends SIGTERM and waits for the process to exit (SIGKILL after 20s).
func (p *syncerProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.t.Errorf("syncer did not exit within 20s of SIGTERM")
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *syncerProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *syncerProc) logText() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}

func (p *syncerProc) tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.logText(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// metrics scrapes the syncer's /metrics and returns every sample as "name{l1="v1",...}" -> value,
// labels sorted by name.
func (p *syncerProc) metrics() map[string]float64 {
	p.t.Helper()
	out, err := p.scrape()
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

func (p *syncerProc) scrape() (map[string]float64, error) {
	resp, err := http.Get("http://" + p.metricsAddr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scraping metrics: %w", err)
	}
	defer resp.Body.Close()
	out, err := support.ParseMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return out, nil
}

// waitSettled waits until the syncer has drained its events: its workqueues empty and idle, and
// its activity (queue adds, requests, writes) unchanged for a second (support.WaitSettled).
func (p *syncerProc) waitSettled() {
	p.t.Helper()
	if err := support.WaitSettled(context.Background(), p.scrape, time.Second, 30*time.Second); err != nil {
		p.t.Fatal(err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := support.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// eventually polls cond every 100ms until it returns true or timeout passes; the last message
// explains the failure.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var msg string
	for {
		var ok bool
		ok, msg = cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// consistently checks cond every 100ms for the whole duration.
func consistently(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, msg := cond(); !ok {
			t.Fatalf("%s stopped holding: %s", what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func obj(apiVersion, kind, namespace, name string, fields map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func (f *fixture) create(c clients, gvr schema.GroupVersionResource, o *unstructured.Unstructured) *unstructured.Unstructured {
	f.t.Helper()
	out, err := c.dyn.Resource(gvr).Namespace(o.GetNamespace()).Create(f.ctx, o, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("creating %s %s/%s: %v", gvr.Resource, o.GetNamespace(), o.GetName(), err)
	}
	return out
}

func (f *fixture) get(c clients, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return c.dyn.Resource(gvr).Namespace(namespace).Get(f.ctx, name, metav1.GetOptions{})
}

func (f *fixture) update(c clients, gvr schema.GroupVersionResource, namespace, name string, mutate func(*unstructured.Unstructured)) {
	f.t.Helper()
	for i := 0; ; i++ {
		o, err := f.get(c, gvr, namespace, name)
		if err != nil {
			f.t.Fatalf("getting %s %s/%s: %v", gvr.Resource, namespace, name, err)
		}
		mutate(o)
		_, err = c.dyn.Resource(gvr).Namespace(namespace).Update(f.ctx, o, metav1.UpdateOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i > 5 {
			f.t.Fatalf("updating %s %s/%s: %v", gvr.Resource, namespace, name, err)
		}
	}
}

func (f *fixture) delete(c clients, gvr schema.GroupVersionResource, namespace, name string) {
	f.t.Helper()
	err := c.dyn.Resource(gvr).Namespace(namespace).Delete(f.ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatalf("deleting %s %s/%s: %v", gvr.Resource, namespace, name, err)
	}
}

// namespace creates a namespace upstream (and removes it from both sides when the test ends).
func (f *fixture) namespace(suffix string) string {
	f.t.Helper()
	ns := f.name + "-" + suffix
	f.create(f.up, gvrNamespaces, obj("v1", "Namespace", "", ns, nil))
	f.t.Cleanup(func() {
		ctx := context.Background()
		_ = f.up.dyn.Resource(gvrNamespaces).Delete(ctx, ns, metav1.DeleteOptions{})
		_ = f.down.dyn.Resource(gvrNamespaces).Delete(ctx, ns, metav1.DeleteOptions{})
	})
	return ns
}

// syncerConfig creates or replaces a SyncerConfig upstream (deleted when the test ends).
func (f *fixture) syncerConfig(name string, spec map[string]interface{}) {
	f.t.Helper()
	f.config(gvrSyncerConfig, "SyncerConfig", name, spec)
}

// testLabel labels each test's configs with the test's name: a syncer Pod reads only its own test's
// (syncer-gen's --syncer-config-selector), so that tests running side by side on one upstream do not
// sync each other's namespaces. Syncers run as processes read every config, unless ownConfigs.
const testLabel = "e2e.kubestellar.io/test"

// config creates or replaces a config of a kind upstream (deleted when the test ends), labelled
// with testLabel.
func (f *fixture) config(gvr schema.GroupVersionResource, kind, name string, spec map[string]interface{}) {
	f.t.Helper()
	o := obj("edge.kubestellar.io/v2alpha1", kind, "", name, map[string]interface{}{"spec": spec})
	o.SetLabels(map[string]string{testLabel: f.name})
	if _, err := f.get(f.up, gvr, "", name); apierrors.IsNotFound(err) {
		f.create(f.up, gvr, o)
		f.t.Cleanup(func() {
			_ = f.up.dyn.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		return
	}
	// The syncer's heartbeat writes the status meanwhile: read again and retry on a conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := f.get(f.up, gvr, "", name)
		if err != nil {
			return err
		}
		o.SetResourceVersion(existing.GetResourceVersion())
		_, err = f.up.dyn.Resource(gvr).Update(f.ctx, o, metav1.UpdateOptions{})
		return err
	}); err != nil {
		f.t.Fatal(err)
	}
}

// waitFor waits until the object exists on a side and satisfies check (nil: just exists).
func (f *fixture) waitFor(c clients, gvr schema.GroupVersionResource, namespace, name string, check func(*unstructured.Unstructured) (bool, string)) *unstructured.Unstructured {
	f.t.Helper()
	return f.waitForWithin(30*time.Second, c, gvr, namespace, name, check)
}

// waitForWithin is waitFor with a timeout of its own: for what a node must run first.
func (f *fixture) waitForWithin(timeout time.Duration, c clients, gvr schema.GroupVersionResource, namespace, name string, check func(*unstructured.Unstructured) (bool, string)) *unstructured.Unstructured {
	f.t.Helper()
	var got *unstructured.Unstructured
	eventually(f.t, timeout, fmt.Sprintf("%s %s/%s", gvr.Resource, namespace, name), func() (bool, string) {
		o, err := f.get(c, gvr, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		got = o
		if check == nil {
			return true, ""
		}
		return check(o)
	})
	return got
}

// waitGone waits until the object no longer exists on a side.
func (f *fixture) waitGone(c clients, gvr schema.GroupVersionResource, namespace, name string) {
	f.t.Helper()
	eventually(f.t, 30*time.Second, fmt.Sprintf("%s %s/%s to be gone", gvr.Resource, namespace, name), func() (bool, string) {
		o, err := f.get(c, gvr, namespace, name)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		// The finalizers and conditions say what holds a deletion (a CRD's, its Terminating one).
		conditions, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		return false, fmt.Sprintf("still there (deletionTimestamp %v, finalizers %v, conditions %v)", o.GetDeletionTimestamp(), o.GetFinalizers(), conditions)
	})
}

func dataEquals(key, want string) func(*unstructured.Unstructured) (bool, string) {
	return func(o *unstructured.Unstructured) (bool, string) {
		got, _, _ := unstructured.NestedString(o.Object, "data", key)
		return got == want, fmt.Sprintf("data.%s = %q, want %q", key, got, want)
	}
}

func configMap(namespace, name string, data map[string]interface{}) *unstructured.Unstructured {
	return obj("v1", "ConfigMap", namespace, name, map[string]interface{}{"data": data})
}

// applyFile server-side applies every object of a multi-document YAML file, mapping kinds to
// resources through the side's discovery (read again for each object, so a CRD applied earlier in
// the file is found once served).
// dropNulls removes the fields whose value is null.
func dropNulls(m map[string]interface{}) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]interface{}:
			dropNulls(v)
		case []interface{}:
			for _, item := range v {
				if im, ok := item.(map[string]interface{}); ok {
					dropNulls(im)
				}
			}
		}
	}
}

// upstreamIsKCP tells whether the suite runs against a kcp workspace, whose Services, Deployments and
// Jobs are served from CRDs: no defaulting, no ClusterIPs.
func upstreamIsKCP() bool { return os.Getenv("E2E_UPSTREAM") == "kcp" }

func applyFile(ctx context.Context, c clients, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return applyYAML(ctx, c, data)
}

// applyYAML server-side applies every object of a YAML (or JSON) stream.
func applyYAML(ctx context.Context, c clients, data []byte) error {
	dec := yaml.NewYAMLOrJSONDecoder(bufio.NewReader(bytes.NewReader(data)), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(u.Object) == 0 {
			continue
		}
		// A field rendered empty ("replicas: ") means unset: kube's built-in types default it, but
		// kcp's CRD-served ones reject a null, as any CRD does.
		dropNulls(u.Object)
		gvk := u.GroupVersionKind()
		resources, err := c.kube.Discovery().ServerResourcesForGroupVersion(gvk.GroupVersion().String())
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk, u.GetName(), err)
		}
		var gvr schema.GroupVersionResource
		for _, r := range resources.APIResources {
			if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
				gvr = gvk.GroupVersion().WithResource(r.Name)
			}
		}
		if gvr.Empty() {
			return fmt.Errorf("%s is not served", gvk)
		}
		data, _ := u.MarshalJSON()
		if _, err := c.dyn.Resource(gvr).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: "e2e", Force: ptr.To(true)}); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
		}
	}
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// denyAtEdge makes the edge refuse creates and updates of the resources of group (version v1) for
// which the CEL expression over object is false, with the message "refused by the edge's policy":
// a ValidatingAdmissionPolicy and its binding named policy, removed when the test ends. It waits
// until probe (of resource probeGVR) is refused by a dry-run create, and returns lift, which removes
// the policy at once and waits until probe is taken.
func (f *fixture) denyAtEdge(policy, group string, resources []string, expression string, probeGVR schema.GroupVersionResource,
	probe *unstructured.Unstructured) (lift func()) {
	f.t.Helper()
	res := make([]interface{}, len(resources))
	for i, r := range resources {
		res[i] = r
	}
	f.create(f.down, gvrVAPs, obj("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", policy, map[string]interface{}{"spec": map[string]interface{}{
		"failurePolicy": "Fail",
		"matchConstraints": map[string]interface{}{"resourceRules": []interface{}{map[string]interface{}{
			"apiGroups": []interface{}{group}, "apiVersions": []interface{}{"v1"}, "operations": []interface{}{"CREATE", "UPDATE"},
			"resources": res}}},
		"validations": []interface{}{map[string]interface{}{"expression": expression, "message": "refused by the edge's policy"}},
	}}))
	f.create(f.down, gvrVAPBindings, obj("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "", policy, map[string]interface{}{
		"spec": map[string]interface{}{"policyName": policy, "validationActions": []interface{}{"Deny"}}}))
	remove := func() {
		f.delete(f.down, gvrVAPBindings, "", policy)
		f.delete(f.down, gvrVAPs, "", policy)
	}
	f.t.Cleanup(remove)
	refused := func(want bool) func() (bool, string) {
		return func() (bool, string) {
			_, err := f.down.dyn.Resource(probeGVR).Namespace(probe.GetNamespace()).Create(f.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return (err != nil && strings.Contains(err.Error(), "refused by the edge's policy")) == want, fmt.Sprint(err)
		}
	}
	eventually(f.t, 30*time.Second, "the edge's admission policy "+policy+" in force", refused(true))
	return func() {
		f.t.Helper()
		remove()
		eventually(f.t, 30*time.Second, "the edge's admission policy "+policy+" lifted", refused(false))
	}
}
