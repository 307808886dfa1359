package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/test/testenv"
)

// The edges scenario runs N syncer processes against one upstream kube-apiserver, one mailbox each
// (a namespace of ConfigMaps and a SyncerConfig named after the syncer's sync target), all writing
// to one shared edge kube-apiserver (their sync target names keep their objects apart), and
// measures what they cost the upstream: its CPU (from /proc), RSS, requests per minute and open
// watches, idle and under change (one update per second per edge).
//
// Each syncer reads only its own SyncerConfig (labelled with its sync target's name, and
// --syncer-config-selector on that label), and its ConfigMap informer watches only its mailbox's
// namespace (the syncer scopes an upstream informer to the namespaces its configs name), so a
// change in a mailbox is sent to that mailbox's syncer only. Each syncer reaches the upstream
// directly, with the apiserver's administrator's kubeconfig.
//
// Each syncer reaches the shared edge through a proxy, which shows it only its own Namespace. It
// was added when syncers deleted each other's namespaces on a shared edge (fixed since: downsync no
// longer deletes a marked object labelled for another sync target), and kept so that the figures
// stay comparable: the edge is not what this scenario measures.
//
// Until the syncer scoped its informers and had --syncer-config-selector, an upstream proxy did
// both for it (rewriting the SyncerConfig LIST and WATCH to the config of its name and, with
// -edges-scoped, the cluster-wide ConfigMap LIST and WATCH to its namespace); the cluster-wide
// figures of docs/performance.md were measured so.

// mailboxLabel labels each mailbox's SyncerConfig with its sync target's name: its syncer's
// --syncer-config-selector.
const mailboxLabel = "bench.kubestellar.io/mailbox"

// mailbox is one edge's share of the shared upstream.
type mailbox struct {
	target    string // the sync target: also the name of its SyncerConfig
	namespace string
	// downProxy is how its syncer reaches the shared edge.
	downProxy *mailboxProxy
	syncer    *syncerProc
}

func newMailbox(i int) *mailbox {
	return &mailbox{target: fmt.Sprintf("edge-%04d", i), namespace: fmt.Sprintf("mailbox-%04d", i)}
}

func (b *bench) edges(ctx context.Context) error {
	counts := b.cfg.edges
	if len(counts) == 0 {
		counts = []int{10, 50}
		if b.cfg.quick {
			counts = []int{3, 6}
		}
	}
	counts = slices.Clone(counts)
	sort.Ints(counts)
	perBox := b.cfg.edgeObjects
	pid, ok := b.env.PID(testenv.APIServerProcess(b.env.Upstream))
	if !ok {
		return fmt.Errorf("no upstream kube-apiserver process")
	}
	logf("edges: emptying the upstream of ConfigMaps (it holds only the mailboxes)")
	if err := clearConfigMaps(ctx, b.up); err != nil {
		return err
	}
	var boxes []*mailbox
	for _, n := range counts {
		for len(boxes) < n {
			box := newMailbox(len(boxes))
			w := workload{gvr: gvrConfigMaps, namespaces: []string{box.namespace}, n: perBox, make: configMap}
			if err := w.create(ctx, b.up, nil); err != nil {
				return err
			}
			if err := b.syncerConfigNamed(ctx, box.target, map[string]string{mailboxLabel: box.target}, nsScope(w.namespaces, resourceOf(gvrConfigMaps))); err != nil {
				return err
			}
			boxes = append(boxes, box)
		}
		if err := b.measureEdges(ctx, pid, boxes[:n], perBox); err != nil {
			return err
		}
	}
	return nil
}

// measureEdges measures the upstream without syncers, then starts one syncer per mailbox, waits
// until every edge has its objects and the syncers have settled, and measures the idle and the
// change windows; it stops the syncers and deletes their objects at the edge.
func (b *bench) measureEdges(ctx context.Context, pid int, boxes []*mailbox, perBox int) (err error) {
	n := len(boxes)
	label := fmt.Sprintf("edges: %d syncers, one upstream, %d ConfigMaps each, namespace-scoped upstream informers (the syncer as it is)", n, perBox)
	window := b.idleWindow()
	var namespaces []string
	for _, box := range boxes {
		namespaces = append(namespaces, box.namespace)
	}
	defer func() {
		b.stopEdges(boxes)
		if err == nil {
			err = deleteNamespaces(ctx, b.down, namespaces)
		}
	}()

	logf("%s: the upstream without syncers for %v", label, window/2)
	base0, err := b.sampleEdges(ctx, pid, nil)
	if err != nil {
		return err
	}
	time.Sleep(window / 2)
	base1, err := b.sampleEdges(ctx, pid, nil)
	if err != nil {
		return err
	}
	base := costOf(base0, base1, 0)

	c, err := watchCount(ctx, b.down, gvrConfigMaps, mapping.OwnerLabel, namespaces, n*perBox, nil)
	if err != nil {
		return err
	}
	defer c.stop()
	logf("%s: starting the syncers", label)
	start := time.Now()
	for _, box := range boxes {
		if box.downProxy, err = startMailboxProxy(b.down.cfg, filepath.Join(b.dir, box.target+"-down.kubeconfig"),
			func(u *url.URL) { rewriteDownstream(u, box.namespace) }); err != nil {
			return err
		}
		if box.syncer, err = b.startSyncer("--downstream-kubeconfig="+box.downProxy.kubeconfig,
			"--sync-target-name="+box.target, "--sync-target-uid="+box.target,
			"--syncer-config-selector="+mailboxLabel+"="+box.target); err != nil {
			return fmt.Errorf("syncer %s: %w", box.target, err)
		}
	}
	started := time.Since(start)
	if _, _, err := c.wait(ctx, 3*time.Minute+time.Duration(n)*time.Second); err != nil {
		return fmt.Errorf("%w (syncer logs in %s)", err, b.dir)
	}
	filled := time.Since(start)
	settled := make(chan error, n)
	for _, box := range boxes {
		go func() {
			if err := box.syncer.waitSettled(ctx, 2*time.Second, 5*time.Minute); err != nil {
				settled <- fmt.Errorf("syncer %s: %w", box.target, err)
				return
			}
			settled <- nil
		}()
	}
	for range boxes {
		if err := <-settled; err != nil {
			return err
		}
	}
	logf("%s: %d syncers started in %.1fs, every edge filled after %.1fs", label, n, started.Seconds(), filled.Seconds())

	var idle, change []edgeCost
	for rep := 0; rep < b.cfg.repeat; rep++ {
		logf("%s: idle for %v", label, window)
		s0, err := b.sampleEdges(ctx, pid, boxes)
		if err != nil {
			return err
		}
		time.Sleep(window)
		s1, err := b.sampleEdges(ctx, pid, boxes)
		if err != nil {
			return err
		}
		idle = append(idle, costOf(s0, s1, 0))

		logf("%s: one update per second per edge for %v", label, window)
		s0, err = b.sampleEdges(ctx, pid, boxes)
		if err != nil {
			return err
		}
		sent, err := b.churnMailboxes(ctx, boxes, perBox, window)
		if err != nil {
			return err
		}
		s1, err = b.sampleEdges(ctx, pid, boxes)
		if err != nil {
			return err
		}
		cost := costOf(s0, s1, sent)
		cost.sent = float64(sent) / s1.at.Sub(s0.at).Seconds()
		change = append(change, cost)
	}
	b.recordEdges(label, n, base, idle, change, started, filled)
	return nil
}

// churnMailboxes sends one merge patch per second per edge for window, round-robin over the
// mailboxes and, within each, over its ConfigMaps; it returns how many were sent.
func (b *bench) churnMailboxes(ctx context.Context, boxes []*mailbox, perBox int, window time.Duration) (int, error) {
	type job struct{ ns, name string }
	jobs := make(chan job, 2*len(boxes))
	var sent atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := 0; w < limitWorkers; w++ {
		wg.Go(func() {
			for j := range jobs {
				patch := fmt.Sprintf(`{"data":{"v":%q}}`, strconv.FormatInt(time.Now().UnixNano(), 10))
				if _, err := b.up.dyn.Resource(gvrConfigMaps).Namespace(j.ns).Patch(ctx, j.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				sent.Add(1)
			}
		})
	}
	ticker := time.NewTicker(time.Second / time.Duration(len(boxes)))
	deadline := time.Now().Add(window)
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		<-ticker.C
		box := boxes[i%len(boxes)]
		jobs <- job{box.namespace, fmt.Sprintf("o-%06d", (i/len(boxes))%perBox)}
	}
	ticker.Stop()
	close(jobs)
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return int(sent.Load()), *p
	}
	return int(sent.Load()), ctx.Err()
}

func (b *bench) stopEdges(boxes []*mailbox) {
	var wg sync.WaitGroup
	for _, box := range boxes {
		if box.syncer != nil {
			p := box.syncer
			wg.Go(p.stopProcess)
			box.syncer = nil
		}
	}
	wg.Wait()
	for _, box := range boxes {
		if box.downProxy != nil {
			_ = box.downProxy.srv.Close()
			box.downProxy = nil
		}
	}
}

// ---- measuring ----

// userHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const userHZ = 100

// procUsage reads a process's CPU seconds (user and system) and resident memory from /proc.
func procUsage(pid int) (cpu, rss float64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command name in parentheses: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: times %q %q", pid, f[11], f[12])
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/%d/status: VmRSS %q", pid, v)
			}
			return (utime + stime) / userHZ, kb * 1024, nil
		}
	}
	return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// edgeSample is the upstream apiserver and the syncers at one moment.
type edgeSample struct {
	at       time.Time
	cpu, rss float64
	api      map[string]float64
	syncers  []map[string]float64
}

func (b *bench) sampleEdges(ctx context.Context, pid int, boxes []*mailbox) (edgeSample, error) {
	var s edgeSample
	for _, box := range boxes {
		m, err := box.syncer.metrics()
		if err != nil {
			return s, fmt.Errorf("syncer %s: %w", box.target, err)
		}
		s.syncers = append(s.syncers, m)
	}
	var err error
	if s.api, err = apiserverMetrics(ctx, b.up); err != nil {
		return s, err
	}
	s.at = time.Now()
	s.cpu, s.rss, err = procUsage(pid)
	return s, err
}

// edgeCost is what one window cost.
type edgeCost struct {
	cpu      float64 // upstream apiserver, cores (CPU seconds per second)
	rss      float64 // upstream apiserver, bytes at the end
	requests float64 // upstream apiserver, non-WATCH requests per minute, all clients but the bench
	watches  float64 // upstream apiserver, open WATCH requests at the end
	// watchesBy is the open WATCH requests at the end by resource.
	watchesBy map[string]float64
	// syncerUp is the syncers' own non-WATCH requests to the upstream per minute, summed.
	syncerUp float64
	// syncerWrites is the syncers' writes per minute (writes_total, all directions), summed.
	syncerWrites float64
	syncerCPU    float64 // cores, summed
	syncerRSS    float64 // bytes, mean
	sent         float64 // updates the bench sent per second
}

// costOf is the cost between two samples; sent is how many requests the bench itself sent upstream
// in between besides its one scrape of /metrics.
func costOf(s0, s1 edgeSample, sent int) edgeCost {
	secs := s1.at.Sub(s0.at).Seconds()
	perMin := func(d float64) float64 { return d * 60 / secs }
	c := edgeCost{
		cpu: (s1.cpu - s0.cpu) / secs,
		rss: s1.rss,
		requests: perMin(sumMatching(s1.api, "apiserver_request_total{", `!verb="WATCH"`) -
			sumMatching(s0.api, "apiserver_request_total{", `!verb="WATCH"`) - 1 - float64(sent)),
		watches:   sumMatching(s1.api, "apiserver_longrunning_requests{", `verb="WATCH"`),
		watchesBy: map[string]float64{},
	}
	for k, v := range s1.api {
		if strings.HasPrefix(k, "apiserver_longrunning_requests{") && strings.Contains(k, `verb="WATCH"`) {
			c.watchesBy[labelValue(k, "resource")] += v
		}
	}
	for i := range s1.syncers {
		delta := func(prefix string, parts ...string) float64 {
			return sumMatching(s1.syncers[i], prefix, parts...) - sumMatching(s0.syncers[i], prefix, parts...)
		}
		c.syncerUp += perMin(delta("kubestellar_syncer_api_requests_total{", `side="upstream"`, `!verb="WATCH"`))
		c.syncerWrites += perMin(delta("kubestellar_syncer_writes_total{"))
		c.syncerCPU += delta("process_cpu_seconds_total{") / secs
		c.syncerRSS += sumMatching(s1.syncers[i], "process_resident_memory_bytes{") / float64(len(s1.syncers))
	}
	return c
}

// labelValue is the value of label name in a "metric{a="x",b="y"}" key.
func labelValue(key, name string) string {
	_, rest, ok := strings.Cut(key, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

func (b *bench) recordEdges(label string, n int, base edgeCost, idle, change []edgeCost, started, filled time.Duration) {
	each := func(costs []edgeCost, f func(edgeCost) float64) []float64 {
		out := make([]float64, len(costs))
		for i, c := range costs {
			out[i] = f(c)
		}
		return out
	}
	perEdge := func(v float64) float64 { return v / float64(n) }
	const mib = 1 << 20
	b.record(label, "syncers started", "s", []float64{started.Seconds()}, "one after another, each serving /metrics")
	b.record(label, "every edge filled", "s", []float64{filled.Seconds()}, "from the first start to the last object at the edge")
	b.record(label, "upstream apiserver without syncers: CPU", "millicores", []float64{1000 * base.cpu}, "/proc/<pid>/stat, the mailboxes in its watch cache")
	b.record(label, "upstream apiserver without syncers: RSS", "MiB", []float64{base.rss / mib}, "")
	b.record(label, "upstream apiserver without syncers: open watches", "watches", []float64{base.watches}, "apiserver_longrunning_requests, verb WATCH")
	for _, w := range []struct {
		name  string
		costs []edgeCost
	}{{"idle", idle}, {"1 update/s per edge", change}} {
		b.record(label, w.name+": upstream apiserver CPU", "millicores", each(w.costs, func(c edgeCost) float64 { return 1000 * c.cpu }), "")
		b.record(label, w.name+": upstream apiserver CPU per edge", "millicores", each(w.costs, func(c edgeCost) float64 { return 1000 * perEdge(c.cpu-base.cpu) }), "above the apiserver without syncers")
		b.record(label, w.name+": upstream apiserver RSS", "MiB", each(w.costs, func(c edgeCost) float64 { return c.rss / mib }), "")
		b.record(label, w.name+": upstream apiserver RSS per edge", "KiB", each(w.costs, func(c edgeCost) float64 { return perEdge(c.rss-base.rss) / 1024 }), "above the apiserver without syncers")
		b.record(label, w.name+": upstream requests", "requests/min", each(w.costs, func(c edgeCost) float64 { return c.requests }), "apiserver_request_total, non-WATCH, all clients but the bench")
		b.record(label, w.name+": upstream requests per edge", "requests/min", each(w.costs, func(c edgeCost) float64 { return perEdge(c.requests - base.requests) }), "above the apiserver without syncers")
		b.record(label, w.name+": syncers' own upstream requests per edge", "requests/min", each(w.costs, func(c edgeCost) float64 { return perEdge(c.syncerUp) }), "kubestellar_syncer_api_requests_total, non-WATCH")
		b.record(label, w.name+": open watches per edge", "watches", each(w.costs, func(c edgeCost) float64 { return perEdge(c.watches - base.watches) }), watchNote(w.costs, base, n))
		b.record(label, w.name+": syncer writes per edge", "writes/min", each(w.costs, func(c edgeCost) float64 { return perEdge(c.syncerWrites) }), "writes_total, all directions")
		b.record(label, w.name+": syncer CPU per edge", "millicores", each(w.costs, func(c edgeCost) float64 { return 1000 * perEdge(c.syncerCPU) }), "process_cpu_seconds_total")
		b.record(label, w.name+": syncer RSS", "MiB", each(w.costs, func(c edgeCost) float64 { return c.syncerRSS / mib }), "mean over the syncers")
	}
	b.record(label, "1 update/s per edge: updates sent", "updates/s", each(change, func(c edgeCost) float64 { return c.sent }), fmt.Sprintf("goal %d", n))
}

// watchNote breaks the syncers' open watches down by resource, per edge (last window).
func watchNote(costs []edgeCost, base edgeCost, n int) string {
	if len(costs) == 0 {
		return ""
	}
	last := costs[len(costs)-1]
	var parts []string
	for r, v := range last.watchesBy {
		if d := (v - base.watchesBy[r]) / float64(n); d != 0 {
			parts = append(parts, fmt.Sprintf("%s %s", r, format(d)))
		}
	}
	sort.Strings(parts)
	return "apiserver_longrunning_requests: " + strings.Join(parts, ", ")
}

// ---- the mailbox proxy ----

// mailboxProxy is an HTTP proxy in front of an apiserver for one syncer: it authenticates as the
// apiserver's administrator over its own connection (HTTP/2, as a syncer's client would), streams
// watches as they come, and rewrites the syncer's requests with rewrite.
type mailboxProxy struct {
	srv        *http.Server
	kubeconfig string
}

func startMailboxProxy(cfg *rest.Config, kubeconfig string, rewrite func(*url.URL)) (*mailboxProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			rewrite(r.Out.URL)
		},
		Transport:     rt,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0), // watches cut at shutdown
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &mailboxProxy{srv: &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}, kubeconfig: kubeconfig}
	go func() { _ = p.srv.Serve(ln) }()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: "http://" + ln.Addr().String()}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		_ = p.srv.Close()
		return nil, err
	}
	return p, nil
}

// rewriteDownstream narrows a syncer's Namespace LIST and WATCH at the shared edge to its own
// namespace. Other requests pass unchanged.
func rewriteDownstream(u *url.URL, namespace string) {
	if u.Path == "/api/v1/namespaces" {
		setFieldSelector(u, "metadata.name="+namespace)
	}
}

func setFieldSelector(u *url.URL, selector string) {
	q := u.Query()
	q.Set("fieldSelector", selector)
	u.RawQuery = q.Encode()
}
