package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// concurrency of the bare client and the relay: the syncer's default --workers.
const limitWorkers = 8

// initialSync measures how fast a fresh syncer fills an empty edge, against the bare client and the
// bare relay on the same objects, repeated; each repetition measures all three back to back.
func (b *bench) initialSync(ctx context.Context) error {
	type size struct {
		label      string
		w          workload
		keepSyncer bool
	}
	scale := 1
	if b.cfg.quick {
		scale = 10
	}
	sizes := []size{
		{fmt.Sprintf("%d ConfigMaps / 10 ns", 1000/scale), newWorkload("s1k", gvrConfigMaps, 1000/scale, 10), false},
		{fmt.Sprintf("%d Deployments / 10 ns", 1000/scale), newWorkload("d1k", gvrDeployments, 1000/scale, 10), false},
		{fmt.Sprintf("%d ConfigMaps / 100 ns", 10000/scale), newWorkload("s10k", gvrConfigMaps, 10000/scale, 100), true},
	}
	if len(b.cfg.sizes) > 0 {
		sizes = nil
		for i, n := range b.cfg.sizes {
			ns := max(10, n/100)
			sizes = append(sizes, size{fmt.Sprintf("%d ConfigMaps / %d ns", n, ns), newWorkload(fmt.Sprintf("s%d", n), gvrConfigMaps, n, ns), i == len(b.cfg.sizes)-1})
		}
	}
	for _, sz := range sizes {
		logf("initial sync: %s: creating the objects upstream", sz.label)
		if err := sz.w.create(ctx, b.up, nil); err != nil {
			return err
		}
		if err := b.syncerConfig(ctx, nsScope(sz.w.namespaces, resourceOf(sz.w.gvr))); err != nil {
			return err
		}
		var ours, oursFill, limit, limitApply, relay, ratioLimit, ratioApply, ratioRelay, cpu, first, reqs, gets, resolved []float64
		var thereFill, ratioThere []float64
		for rep := 0; rep < b.cfg.repeat; rep++ {
			l, err := b.measureLimit(ctx, sz.w, false)
			if err != nil {
				return err
			}
			la, err := b.measureLimit(ctx, sz.w, true)
			if err != nil {
				return err
			}
			r, err := b.measureRelay(ctx, sz.w)
			if err != nil {
				return err
			}
			// The bare client and the relay write into namespaces that are there; the syncer makes
			// them (and the edge's controllers then fill each: a ServiceAccount, a ConfigMap), unless
			// they are there too: both are measured.
			there, err := b.measureSyncer(ctx, sz.w, false, true)
			if err != nil {
				return err
			}
			thereFill, ratioThere = append(thereFill, there.fill), append(ratioThere, there.fill/l)
			keep := sz.keepSyncer && rep == b.cfg.repeat-1
			m, err := b.measureSyncer(ctx, sz.w, keep, false)
			if err != nil {
				return err
			}
			ours, oursFill, cpu, first = append(ours, m.rate), append(oursFill, m.fill), append(cpu, m.cpu), append(first, m.first)
			reqs, gets = append(reqs, m.reqs), append(gets, m.gets)
			if m.resolved >= 0 {
				resolved = append(resolved, 1000*m.resolved)
			}
			limit, limitApply, relay = append(limit, l), append(limitApply, la), append(relay, r)
			ratioLimit, ratioApply, ratioRelay = append(ratioLimit, m.fill/l), append(ratioApply, m.fill/la), append(ratioRelay, m.fill/r)
		}
		scenario := "initial sync " + sz.label
		b.record(scenario, "bare client, create (limit)", "objects/s", limit, fmt.Sprintf("%d creates, %d workers, no throttling; first to last object", sz.w.n, limitWorkers))
		b.record(scenario, "bare client, server-side apply", "objects/s", limitApply, "the same as server-side apply PATCHes, as the syncer updates (as it also created before creates became plain creates)")
		b.record(scenario, "bare relay", "objects/s", relay, "upstream informer → create downstream; first to last object")
		b.record(scenario, "syncer fill rate", "objects/s", oursFill, "first to last object downstream")
		b.record(scenario, "syncer end to end", "objects/s", ours, "from process start to the last object")
		b.record(scenario, "syncer fill rate, namespaces there", "objects/s", thereFill, "the edge's namespaces made before the syncer starts, as for the bare client and the relay")
		b.record(scenario, "syncer ÷ bare create", "ratio", ratioLimit, "fill rates, same repetition; the syncer also makes the namespaces")
		b.record(scenario, "syncer ÷ bare create, namespaces there", "ratio", ratioThere, "the same conditions as the bare client's")
		b.record(scenario, "syncer ÷ bare apply", "ratio", ratioApply, "")
		b.record(scenario, "syncer ÷ bare relay", "ratio", ratioRelay, "")
		b.record(scenario, "syncer first object", "s", first, "after process start (discovery, leftover scan, informers)")
		b.record(scenario, "syncer first object after the selection resolved", "ms", resolved, "from its \"Selection changed\" log line (informers listing both sides)")
		b.record(scenario, "syncer CPU", "CPU s", cpu, "process_cpu_seconds_total at the end")
		b.record(scenario, "syncer requests to the edge per object", "requests", reqs, "its own api_requests_total, all but WATCH (discovery and LISTs included)")
		b.record(scenario, "  of which GETs", "requests", gets, "")
	}
	return nil
}

// fillRate is objects per second from the first to the last object seen.
func fillRate(n int, first, all time.Time) float64 {
	if n < 2 || !all.After(first) {
		return float64(n)
	}
	return float64(n-1) / all.Sub(first).Seconds()
}

// measureLimit creates the workload downstream with a bare client (plain creates, or server-side
// apply PATCHes as the syncer updates) and returns its fill rate as a watch sees it.
func (b *bench) measureLimit(ctx context.Context, w workload, apply bool) (float64, error) {
	if err := ensureNamespaces(ctx, b.down, w.namespaces); err != nil {
		return 0, err
	}
	c, err := watchCount(ctx, b.down, w.gvr, "bench=limit", w.namespaces, w.n, nil)
	if err != nil {
		return 0, err
	}
	defer c.stop()
	if err := w.parallel(ctx, limitWorkers, func(ns, name string) error {
		obj := w.make(ns, name, map[string]string{"bench": "limit"})
		if apply {
			data, err := obj.MarshalJSON()
			if err != nil {
				return err
			}
			_, err = b.down.dyn.Resource(w.gvr).Namespace(ns).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "bench", Force: ptr.To(true)})
			return err
		}
		_, err := b.down.dyn.Resource(w.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		return err
	}); err != nil {
		return 0, err
	}
	first, all, err := c.wait(ctx, 10*time.Minute)
	if err != nil {
		return 0, err
	}
	return fillRate(w.n, first, all), deleteNamespaces(ctx, b.down, w.namespaces)
}

// measureRelay is the simplest watch-based syncer: an upstream informer whose handler queues
// each object, and workers that create it downstream. Nothing else: no marks, no checks.
func (b *bench) measureRelay(ctx context.Context, w workload) (float64, error) {
	if err := ensureNamespaces(ctx, b.down, w.namespaces); err != nil {
		return 0, err
	}
	c, err := watchCount(ctx, b.down, w.gvr, "bench=relay", w.namespaces, w.n, nil)
	if err != nil {
		return 0, err
	}
	defer c.stop()
	nsSet := map[string]bool{}
	for _, ns := range w.namespaces {
		nsSet[ns] = true
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := workqueue.NewTyped[*unstructured.Unstructured]()
	f := dynamicinformer.NewDynamicSharedInformerFactory(b.up.dyn, 0)
	inf := f.ForResource(w.gvr).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
		if u, ok := obj.(*unstructured.Unstructured); ok && nsSet[u.GetNamespace()] {
			q.Add(u)
		}
	}})
	go inf.Run(rctx.Done())
	var wg sync.WaitGroup
	startWorkers(&wg, limitWorkers, q, func(u *unstructured.Unstructured) {
		out := w.make(u.GetNamespace(), u.GetName(), map[string]string{"bench": "relay"})
		if d, ok := u.Object["data"]; ok {
			out.Object["data"] = d
		}
		_, _ = b.down.dyn.Resource(w.gvr).Namespace(u.GetNamespace()).Create(rctx, out, metav1.CreateOptions{})
	})
	first, all, err := c.wait(ctx, 10*time.Minute)
	q.ShutDown()
	cancel()
	wg.Wait()
	if err != nil {
		return 0, err
	}
	return fillRate(w.n, first, all), deleteNamespaces(ctx, b.down, w.namespaces)
}

type syncMeasure struct {
	rate  float64 // from process start
	fill  float64 // first to last object
	cpu   float64
	first float64 // seconds to the first object
	// reqs and gets are the requests the syncer sent to the edge per object, from its own metrics:
	// all but WATCHes (discovery and the informers' LISTs included), and the GETs among them.
	reqs, gets float64
	// resolved is the seconds from the selection resolved (the syncer's "Selection changed" line) to
	// the first object; negative when the line is not found.
	resolved float64
}

// measureSyncer starts a fresh syncer on an empty edge and measures how it fills it; with
// namespacesThere, the edge has the workload's namespaces (not the syncer's) before it starts. With
// keep, the syncer keeps running (for the idle scenario).
func (b *bench) measureSyncer(ctx context.Context, w workload, keep, namespacesThere bool, extra ...string) (syncMeasure, error) {
	if namespacesThere {
		if err := ensureNamespaces(ctx, b.down, w.namespaces); err != nil {
			return syncMeasure{}, err
		}
	}
	c, err := watchCount(ctx, b.down, w.gvr, ownedSelector, w.namespaces, w.n, nil)
	if err != nil {
		return syncMeasure{}, err
	}
	defer c.stop()
	p, err := b.startSyncer(extra...)
	if err != nil {
		return syncMeasure{}, err
	}
	profiled := make(chan error, 1)
	if b.cfg.cpuProfiles != "" {
		go func() { profiled <- b.cpuProfile(p, w) }()
	} else {
		profiled <- nil
	}
	f, all, err := c.wait(ctx, 15*time.Minute)
	if perr := <-profiled; perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		p.stopProcess()
		return syncMeasure{}, fmt.Errorf("%w (syncer log %s)", err, p.log)
	}
	m, err := p.metrics()
	if err != nil {
		return syncMeasure{}, err
	}
	res := syncMeasure{rate: float64(w.n) / all.Sub(p.start).Seconds(), fill: fillRate(w.n, f, all),
		cpu: m["process_cpu_seconds_total{}"], first: f.Sub(p.start).Seconds(),
		reqs: sumMatching(m, "kubestellar_syncer_api_requests_total{", `side="downstream"`, `!verb="WATCH"`) / float64(w.n),
		gets: sumMatching(m, "kubestellar_syncer_api_requests_total{", `side="downstream"`, `verb="GET"`) / float64(w.n), resolved: -1}
	if at, ok := logTime(p.log, `"Selection changed"`); ok {
		res.resolved = f.Sub(at).Seconds()
	}
	if keep {
		b.syncer, b.idleObjects, b.kept = p, w.n, w.namespaces
		return res, nil
	}
	p.stopProcess()
	return res, deleteNamespaces(ctx, b.down, w.namespaces)
}

// settings measures the initial sync of 1,000 ConfigMaps under several --downstream-qps/--downstream-burst/--workers
// settings, to show what they trade.
func (b *bench) settings(ctx context.Context) error {
	n := 1000
	w := newWorkload("s1k", gvrConfigMaps, n, 10)
	if b.cfg.quick {
		w = newWorkload("s1k", gvrConfigMaps, n/10, 10)
	}
	if err := w.create(ctx, b.up, nil); err != nil {
		return err
	}
	if err := b.syncerConfig(ctx, nsScope(w.namespaces, resourceOf(w.gvr))); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"--downstream-qps=20", "--downstream-burst=30", "--workers=2"},
		{"--downstream-qps=50", "--downstream-burst=100", "--workers=8"},
		{"--downstream-qps=200", "--downstream-burst=400", "--workers=16"},
		{"--downstream-qps=500", "--downstream-burst=1000", "--workers=16"},
		{"--workers=8"},
		{"--workers=16"},
		{"--workers=32"},
	} {
		var fill, cpu []float64
		for rep := 0; rep < b.cfg.repeat; rep++ {
			m, err := b.measureSyncer(ctx, w, false, false, args...)
			if err != nil {
				return err
			}
			fill, cpu = append(fill, m.fill), append(cpu, m.cpu)
		}
		label := fmt.Sprintf("settings: initial sync of %d ConfigMaps", w.n)
		b.record(label, strings.Join(args, " ")+": fill rate", "objects/s", fill, "")
		b.record(label, strings.Join(args, " ")+": syncer CPU", "CPU s", cpu, "")
	}
	return nil
}

// logTime is the time of the first line of a syncer's klog text log that contains what (klog's
// header "I1124 12:13:27.218186" carries no year: the current one, in local time as klog writes it).
func logTime(path, what string) (time.Time, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, what) || len(line) < 22 {
			continue
		}
		t, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
		if err != nil {
			return time.Time{}, false
		}
		return t.AddDate(time.Now().Year(), 0, 0), true
	}
	return time.Time{}, false
}

// cpuProfile saves the syncer's CPU profile of its first seconds (1 per 500 objects of w, 2 to 30:
// the fill) in -cpu-profiles, named after the workload and the time.
func (b *bench) cpuProfile(p *syncerProc, w workload) error {
	seconds := min(max(w.n/500, 2), 30)
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.metricsAddr, seconds))
	if err != nil {
		return fmt.Errorf("CPU profile: %w", err)
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(b.cfg.cpuProfiles, 0o755); err != nil {
		return err
	}
	out, err := os.Create(filepath.Join(b.cfg.cpuProfiles, fmt.Sprintf("cpu-%s-%d-%d.pprof", w.gvr.Resource, w.n, time.Now().Unix())))
	if err != nil {
		return err
	}
	defer out.Close()
	_, err = io.Copy(out, resp.Body)
	return err
}
