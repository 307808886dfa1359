package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/test/support"
	"github.com/kubestellar/syncer/test/testenv"
)

var (
	gvrConfigMaps   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrNamespaces   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrDeployments  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrCRDs         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrSyncerConfig = schema.GroupVersionResource{Group: "edge.kubestellar.io", Version: "v2alpha1", Resource: "syncerconfigs"}
	gvrWidgets      = schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: "widgets"}
)

const target = "bench" // the syncer's sync target name: its owner label value

// side is one apiserver with unthrottled clients.
type side struct {
	name string
	srv  *testenv.Server
	cfg  *rest.Config
	dyn  dynamic.Interface
	kube kubernetes.Interface
}

func newSide(name string, srv *testenv.Server) (*side, error) {
	cfg, err := srv.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: the bench must not be the bottleneck
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &side{name: name, srv: srv, cfg: cfg, dyn: dyn, kube: kube}, nil
}

type bench struct {
	cfg      config
	env      *testenv.Env
	dir      string
	up, down *side
	results  []result
	syncer   *syncerProc // the running syncer, if any
	// kept are the edge namespaces of the objects the kept syncer (syncer) holds.
	kept []string
	// label prefixes the scenario of each result ("baseline: " while the baseline syncer runs).
	label string
	// idleObjects is how many objects the running syncer holds.
	idleObjects int
}

func newBench(ctx context.Context, c config, env *testenv.Env, dir string) (*bench, error) {
	up, err := newSide("upstream", env.Upstream)
	if err != nil {
		return nil, err
	}
	down, err := newSide("downstream", env.Downstream)
	if err != nil {
		return nil, err
	}
	b := &bench{cfg: c, env: env, dir: dir, up: up, down: down}
	crd, err := os.ReadFile("manifests/crds/edge.kubestellar.io_syncerconfigs.yaml")
	if err != nil {
		return nil, fmt.Errorf("run from the repository root: %w", err)
	}
	if err := applyYAML(ctx, up.dyn, gvrCRDs, crd); err != nil {
		return nil, err
	}
	for _, s := range []*side{up, down} {
		if err := applyYAML(ctx, s.dyn, gvrCRDs, []byte(widgetCRD)); err != nil {
			return nil, err
		}
	}
	return b, waitServed(ctx, up.dyn, gvrSyncerConfig)
}

// ---- results ----

type result struct {
	Scenario string    `json:"scenario"`
	Metric   string    `json:"metric"`
	Unit     string    `json:"unit"`
	Values   []float64 `json:"values"`
	Median   float64   `json:"median"`
	Min      float64   `json:"min"`
	Max      float64   `json:"max"`
	Note     string    `json:"note,omitempty"`
}

func (b *bench) record(scenario, metric, unit string, values []float64, note string) {
	r := result{Scenario: b.label + scenario, Metric: metric, Unit: unit, Values: values, Note: note}
	if len(values) > 0 {
		s := append([]float64(nil), values...)
		sort.Float64s(s)
		r.Min, r.Max = s[0], s[len(s)-1]
		r.Median = median(s)
	}
	b.results = append(b.results, r)
	logf("%s / %s: %s %s %v", r.Scenario, metric, format(r.Median), unit, values)
}

// median is the median of sorted values (the mean of the middle two for an even count).
func median(sorted []float64) float64 {
	switch n := len(sorted); {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return sorted[n/2]
	default:
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
}

func format(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	case math.Abs(v) >= 0.1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func (b *bench) print(w io.Writer) {
	h := header(b.cfg)
	fmt.Fprintf(w, "\nKubeStellar syncer benchmark: %s cores, %s, kube-apiserver %s, client-go %s, repeat %s, %s\n",
		h["cores"], h["go"], h["kubernetes"], h["client-go"], h["repeat"], h["date"])
	if h["syncerArgs"] != "" {
		fmt.Fprintf(w, "syncer flags: %s\n", h["syncerArgs"])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tmetric\tmedian\tmin–max\tunit\tnote")
	for _, r := range b.results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s–%s\t%s\t%s\n", r.Scenario, r.Metric, format(r.Median), format(r.Min), format(r.Max), r.Unit, r.Note)
	}
	tw.Flush()
}

// percentile of sorted values (nearest rank).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

// ---- objects ----

// payload is 1 KiB of content that differs between objects (as real objects' content does: the
// syncer's caches share equal strings, so a payload the same for every object would be held once).
func payload(ns, name string) string {
	sum := sha256.Sum256([]byte(ns + "/" + name))
	return strings.Repeat(hex.EncodeToString(sum[:]), 1024/(2*len(sum)))
}

func configMap(ns, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
		"data": map[string]interface{}{"payload": payload(ns, name), "v": "0"}}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

func deployment(ns, name string, labels map[string]string) *unstructured.Unstructured {
	sel := map[string]interface{}{"app": name}
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment",
		"spec": map[string]interface{}{"replicas": int64(0), "selector": map[string]interface{}{"matchLabels": sel},
			"template": map[string]interface{}{"metadata": map[string]interface{}{"labels": sel},
				"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "app", "image": "registry.invalid/app:1"}}}}}}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// workload is N objects of one resource spread over namespaces.
type workload struct {
	gvr        schema.GroupVersionResource
	namespaces []string
	n          int
	make       func(ns, name string, labels map[string]string) *unstructured.Unstructured
}

func newWorkload(prefix string, gvr schema.GroupVersionResource, n, namespaces int) workload {
	w := workload{gvr: gvr, n: n, make: configMap}
	if gvr == gvrDeployments {
		w.make = deployment
	}
	for i := 0; i < namespaces; i++ {
		w.namespaces = append(w.namespaces, fmt.Sprintf("%s-%03d", prefix, i))
	}
	return w
}

// each calls fn for every object (namespace, name) of the workload.
func (w workload) each(fn func(ns, name string)) {
	for i := 0; i < w.n; i++ {
		fn(w.namespaces[i%len(w.namespaces)], fmt.Sprintf("o-%06d", i))
	}
}

// parallel runs fn over the workload's objects with the given concurrency.
func (w workload) parallel(ctx context.Context, workers int, fn func(ns, name string) error) error {
	type item struct{ ns, name string }
	ch := make(chan item)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if err := fn(it.ns, it.name); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	w.each(func(ns, name string) {
		select {
		case ch <- item{ns, name}:
		case <-ctx.Done():
		}
	})
	close(ch)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}

func ensureNamespaces(ctx context.Context, s *side, namespaces []string) error {
	for _, ns := range namespaces {
		obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
		obj.SetName(ns)
		if _, err := s.dyn.Resource(gvrNamespaces).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// create makes the workload's objects on a side (not timed: setup).
func (w workload) create(ctx context.Context, s *side, labels map[string]string) error {
	if err := ensureNamespaces(ctx, s, w.namespaces); err != nil {
		return err
	}
	return w.parallel(ctx, 32, func(ns, name string) error {
		_, err := s.dyn.Resource(w.gvr).Namespace(ns).Create(ctx, w.make(ns, name, labels), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// deleteNamespaces deletes namespaces on a side and waits until they are gone (the edge runs the
// namespace controller).
func deleteNamespaces(ctx context.Context, s *side, namespaces []string) error {
	for _, ns := range namespaces {
		if err := s.dyn.Resource(gvrNamespaces).Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	remaining := namespaces
	var getErr error // of the last look at remaining[0]; nil while it exists
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		for len(remaining) > 0 {
			_, getErr = s.dyn.Resource(gvrNamespaces).Get(ctx, remaining[0], metav1.GetOptions{})
			if !apierrors.IsNotFound(getErr) {
				return false, nil
			}
			remaining = remaining[1:]
		}
		return true, nil
	})
	if err != nil {
		if getErr != nil {
			err = getErr
		}
		return fmt.Errorf("namespace %s not deleted: %w", remaining[0], err)
	}
	return nil
}

// counter watches a resource on a side and tells when n objects matching a label selector (in the
// given namespaces) exist.
type counter struct {
	mu      sync.Mutex
	seen    map[string]bool
	first   time.Time
	n       int
	done    chan struct{}
	doneAt  time.Time
	stop    context.CancelFunc
	onEvent func(old, obj *unstructured.Unstructured)
}

func watchCount(ctx context.Context, s *side, gvr schema.GroupVersionResource, selector string, namespaces []string, n int,
	onEvent func(old, obj *unstructured.Unstructured)) (*counter, error) {
	nsSet := map[string]bool{}
	for _, ns := range namespaces {
		nsSet[ns] = true
	}
	c := &counter{seen: map[string]bool{}, n: n, done: make(chan struct{}), onEvent: onEvent}
	cctx, cancel := context.WithCancel(ctx)
	c.stop = cancel
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(s.dyn, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) { o.LabelSelector = selector })
	inf := f.ForResource(gvr).Informer()
	add := func(obj interface{}) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || !nsSet[u.GetNamespace()] {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		key := u.GetNamespace() + "/" + u.GetName()
		if c.seen[key] {
			return
		}
		c.seen[key] = true
		if len(c.seen) == 1 {
			c.first = time.Now()
		}
		if len(c.seen) == c.n {
			c.doneAt = time.Now()
			close(c.done)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: add,
		UpdateFunc: func(oldObj, newObj interface{}) {
			add(newObj)
			if c.onEvent != nil {
				o, _ := oldObj.(*unstructured.Unstructured)
				u, _ := newObj.(*unstructured.Unstructured)
				if o != nil && u != nil && nsSet[u.GetNamespace()] {
					c.onEvent(o, u)
				}
			}
		},
	})
	go inf.Run(cctx.Done())
	if !cache.WaitForCacheSync(cctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("watching %s on %s did not sync", gvr.Resource, s.name)
	}
	return c, nil
}

func (c *counter) wait(ctx context.Context, timeout time.Duration) (first, all time.Time, err error) {
	select {
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.first, c.doneAt, nil
	case <-time.After(timeout):
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.first, time.Time{}, fmt.Errorf("only %d of %d objects after %v", len(c.seen), c.n, timeout)
	case <-ctx.Done():
		return time.Time{}, time.Time{}, ctx.Err()
	}
}

// ---- the syncer process ----

type syncerProc struct {
	cmd         *exec.Cmd
	metricsAddr string
	start       time.Time
	done        chan struct{}
	log         string
}

func freeAddr() string {
	addr, err := support.FreeAddr()
	if err != nil {
		panic(err)
	}
	return addr
}

func (b *bench) startSyncer(extra ...string) (*syncerProc, error) {
	return b.startSyncerFrom(b.env.Upstream.Kubeconfig, target, extra...)
}

// startSyncerFrom starts a syncer whose upstream is the kubeconfig from, as sync target name.
func (b *bench) startSyncerFrom(from, name string, extra ...string) (*syncerProc, error) {
	addr := freeAddr()
	args := []string{"--upstream-kubeconfig=" + from, "--downstream-kubeconfig=" + b.env.Downstream.Kubeconfig,
		"--sync-target-name=" + name, "--sync-target-uid=" + name, "--metrics-bind-address=" + addr,
		"--health-probe-bind-address=0", "--profiling", "-v=1"}
	args = append(args, b.cfg.syncerArgs...)
	args = append(args, extra...)
	logFile := filepath.Join(b.dir, fmt.Sprintf("syncer-%d.log", time.Now().UnixNano()))
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.cfg.syncer, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &syncerProc{cmd: cmd, metricsAddr: addr, done: make(chan struct{}), log: logFile}
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, errors.New("the syncer exited")
		default:
		}
		_, err := p.metrics()
		return err == nil, nil
	}); err != nil {
		p.stopProcess()
		return nil, fmt.Errorf("the syncer does not serve metrics (%w); log %s", err, logFile)
	}
	return p, nil
}

// waitSettled waits until the syncer has drained its events (support.WaitSettled).
func (p *syncerProc) waitSettled(ctx context.Context, quiet, timeout time.Duration) error {
	if err := support.WaitSettled(ctx, p.metrics, quiet, timeout); err != nil {
		return fmt.Errorf("%w (syncer log %s)", err, p.log)
	}
	return nil
}

func (p *syncerProc) stopProcess() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// metrics scrapes the syncer: "name{labels}" -> value.
func (p *syncerProc) metrics() (map[string]float64, error) {
	return scrape("http://"+p.metricsAddr+"/metrics", http.DefaultClient)
}

func scrape(url string, client *http.Client) (map[string]float64, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return support.ParseMetrics(resp.Body)
}

// sumMatching sums the samples whose key starts with prefix and contains every part.
func sumMatching(m map[string]float64, prefix string, parts ...string) float64 {
	total := 0.0
outer:
	for k, v := range m {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		for _, p := range parts {
			if strings.HasPrefix(p, "!") {
				if strings.Contains(k, p[1:]) {
					continue outer
				}
			} else if !strings.Contains(k, p) {
				continue outer
			}
		}
		total += v
	}
	return total
}

// apiserverMetrics reads a kube-apiserver's own /metrics.
func apiserverMetrics(ctx context.Context, s *side) (map[string]float64, error) {
	data, err := s.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return support.ParseMetrics(strings.NewReader(string(data)))
}

// syncerConfig creates or replaces the one SyncerConfig the bench uses.
func (b *bench) syncerConfig(ctx context.Context, spec map[string]interface{}) error {
	return b.syncerConfigNamed(ctx, "bench", nil, spec)
}

// syncerConfigNamed creates or replaces the SyncerConfig name, with labels.
func (b *bench) syncerConfigNamed(ctx context.Context, name string, labels map[string]string, spec map[string]interface{}) error {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncerConfig", "spec": spec}}
	obj.SetName(name)
	obj.SetLabels(labels)
	cur, err := b.up.dyn.Resource(gvrSyncerConfig).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = b.up.dyn.Resource(gvrSyncerConfig).Create(ctx, obj, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	_, err = b.up.dyn.Resource(gvrSyncerConfig).Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

var nsScope = support.NSScope

func resourceOf(gvr schema.GroupVersionResource) map[string]interface{} {
	return support.Resource(gvr.Group, gvr.Version, gvr.Resource)
}

var ownedSelector = mapping.OwnerLabel + "=" + target

// asBaseline runs a scenario with the baseline syncer binary, its results labelled so, and leaves the
// edge as it found it: a syncer the scenario kept running (for the idle scenario) is stopped and its
// objects deleted, so that the scenario's own run starts from the same state.
func (b *bench) asBaseline(ctx context.Context, fn func(context.Context) error) error {
	own := b.cfg.syncer
	b.cfg.syncer, b.label = b.cfg.baseline, "baseline: "
	defer func() { b.cfg.syncer, b.label = own, "" }()
	err := fn(ctx)
	if b.syncer != nil {
		b.syncer.stopProcess()
		b.syncer = nil
		if derr := deleteNamespaces(ctx, b.down, b.kept); err == nil {
			err = derr
		}
	}
	return err
}
