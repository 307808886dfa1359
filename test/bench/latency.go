package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/syncer/pkg/mapping"
)

// churn is a stream of writes on one side and the watch that sees them arrive on the other.
type churn struct {
	keys       [][2]string // namespace, name
	write      func(ctx context.Context, ns, name, v string) error
	observe    *side
	gvr        schema.GroupVersionResource
	selector   string
	namespaces []string
	value      func(u *unstructured.Unstructured) string
	// quiet is how long after the last arrival the run stops waiting for the rest (default 5 s);
	// a polling syncer needs more than its cycle.
	quiet time.Duration
}

type churnResult struct {
	latencies []float64 // seconds, sorted
	sent      int
	rate      float64 // achieved writes/s
}

// run writes at rate for dur (round robin over the keys, each write carrying a unique value), and
// returns the time from sending each write to the watch delivering its value on the other side.
// A value overwritten before it arrived (the next write of the same object) is not counted.
func (c churn) run(ctx context.Context, rate float64, dur time.Duration) (churnResult, error) {
	var mu sync.Mutex
	sentAt := map[int]time.Time{}
	var lat []float64
	lastSeen := time.Now()
	onEvent := func(_, u *unstructured.Unstructured) {
		seq, err := strconv.Atoi(c.value(u))
		if err != nil || seq == 0 {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if t, ok := sentAt[seq]; ok {
			lat = append(lat, now.Sub(t).Seconds())
			delete(sentAt, seq)
			lastSeen = now
		}
	}
	w, err := watchCount(ctx, c.observe, c.gvr, c.selector, c.namespaces, len(c.keys), onEvent)
	if err != nil {
		return churnResult{}, err
	}
	defer w.stop()

	type job struct {
		seq     int
		ns, nom string
	}
	jobs := make(chan job, 10000)
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				mu.Lock()
				sentAt[j.seq] = time.Now()
				mu.Unlock()
				if err := c.write(ctx, j.ns, j.nom, strconv.Itoa(j.seq)); err != nil {
					mu.Lock()
					delete(sentAt, j.seq)
					mu.Unlock()
				}
			}
		}()
	}
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	seq := seqBase
	ticker := time.NewTicker(interval)
	sent := 0
	for time.Since(start) < dur && ctx.Err() == nil {
		<-ticker.C
		seq++
		k := c.keys[sent%len(c.keys)]
		jobs <- job{seq, k[0], k[1]}
		sent++
	}
	ticker.Stop()
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	seqBase = seq
	// Wait for stragglers: until everything arrived or nothing arrived for the quiet period.
	maxQuiet := c.quiet
	if maxQuiet == 0 {
		maxQuiet = 5 * time.Second
	}
	for {
		mu.Lock()
		pending, quiet := len(sentAt), time.Since(lastSeen)
		mu.Unlock()
		if pending == 0 || quiet > maxQuiet || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Float64s(lat)
	return churnResult{latencies: lat, sent: sent, rate: float64(sent) / elapsed.Seconds()}, nil
}

// seqBase keeps values unique across runs.
var seqBase = 0

func (b *bench) recordChurn(scenario string, runs []churnResult) {
	var p50, p95, p99, achieved, seen []float64
	for _, r := range runs {
		p50 = append(p50, percentile(r.latencies, 50)*1000)
		p95 = append(p95, percentile(r.latencies, 95)*1000)
		p99 = append(p99, percentile(r.latencies, 99)*1000)
		achieved = append(achieved, r.rate)
		seen = append(seen, float64(len(r.latencies))/float64(r.sent))
	}
	b.record(scenario, "p50", "ms", p50, "")
	b.record(scenario, "p95", "ms", p95, "")
	b.record(scenario, "p99", "ms", p99, "")
	b.record(scenario, "writes sent", "writes/s", achieved, "")
	b.record(scenario, "writes seen individually", "fraction", seen, "the rest were overwritten by a later write first")
}

func mergePatch(ctx context.Context, s *side, gvr schema.GroupVersionResource, ns, name string, body map[string]interface{}, sub ...string) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = s.dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{}, sub...)
	return err
}

func dataV(u *unstructured.Unstructured) string {
	v, _, _ := unstructured.NestedString(u.Object, "data", "v")
	return v
}

// latency measures change latency under churn for downsync (upstream write → edge), status return
// (edge status write → upstream) and upsync (edge write → upstream), with 1,000 objects each; then,
// with the syncer stopped, a bare status relay on the same objects (startStatusRelay), status
// return's baseline in the same run.
func (b *bench) latency(ctx context.Context) error {
	n, dur := 1000, 20*time.Second
	if b.cfg.quick {
		n, dur = 200, 5*time.Second
	}
	down := newWorkload("lat", gvrConfigMaps, n, 10)
	widgets := newWorkload("wid", gvrWidgets, n, 10)
	widgets.make = func(ns, name string, labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "bench.example.com/v1", "kind": "Widget",
			"spec": map[string]interface{}{"size": int64(1)}}}
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	ups := newWorkload("ups", gvrConfigMaps, n, 10)
	logf("latency: creating %d ConfigMaps and %d Widgets upstream, %d ConfigMaps at the edge", n, n, n)
	for _, step := range []struct {
		w workload
		s *side
	}{{down, b.up}, {widgets, b.up}, {ups, b.down}} {
		if err := step.w.create(ctx, step.s, nil); err != nil {
			return err
		}
	}
	upsNS := make([]interface{}, len(ups.namespaces))
	for i, ns := range ups.namespaces {
		upsNS[i] = ns
	}
	spec := nsScope(append(append([]string{}, down.namespaces...), widgets.namespaces...), resourceOf(gvrConfigMaps), resourceOf(gvrWidgets))
	spec["upsync"] = []interface{}{map[string]interface{}{"apiGroup": "", "resources": []interface{}{"configmaps"}, "namespaces": upsNS, "names": []interface{}{"*"}}}
	if err := b.syncerConfig(ctx, spec); err != nil {
		return err
	}
	cDown, err := watchCount(ctx, b.down, gvrConfigMaps, ownedSelector, down.namespaces, n, nil)
	if err != nil {
		return err
	}
	cWid, err := watchCount(ctx, b.down, gvrWidgets, ownedSelector, widgets.namespaces, n, nil)
	if err != nil {
		return err
	}
	cUp, err := watchCount(ctx, b.up, gvrConfigMaps, mapping.UpsyncOwnerLabel+"="+target, ups.namespaces, n, nil)
	if err != nil {
		return err
	}
	p, err := b.startSyncer()
	if err != nil {
		return err
	}
	defer p.stopProcess()
	for _, c := range []*counter{cDown, cWid, cUp} {
		if _, _, err := c.wait(ctx, 10*time.Minute); err != nil {
			return fmt.Errorf("latency setup: %w (syncer log %s)", err, p.log)
		}
		c.stop()
	}
	keys := func(w workload) [][2]string {
		var out [][2]string
		w.each(func(ns, name string) { out = append(out, [2]string{ns, name}) })
		return out
	}
	downsync := churn{keys: keys(down), observe: b.down, gvr: gvrConfigMaps, selector: ownedSelector, namespaces: down.namespaces, value: dataV,
		write: func(ctx context.Context, ns, name, v string) error {
			return mergePatch(ctx, b.up, gvrConfigMaps, ns, name, map[string]interface{}{"data": map[string]interface{}{"v": v}})
		}}
	status := churn{keys: keys(widgets), observe: b.up, gvr: gvrWidgets, namespaces: widgets.namespaces,
		value: func(u *unstructured.Unstructured) string {
			v, _, _ := unstructured.NestedString(u.Object, "status", "v")
			return v
		},
		write: func(ctx context.Context, ns, name, v string) error {
			return mergePatch(ctx, b.down, gvrWidgets, ns, name, map[string]interface{}{"status": map[string]interface{}{"v": v}}, "status")
		}}
	upsync := churn{keys: keys(ups), observe: b.up, gvr: gvrConfigMaps, selector: mapping.UpsyncOwnerLabel + "=" + target, namespaces: ups.namespaces, value: dataV,
		write: func(ctx context.Context, ns, name, v string) error {
			return mergePatch(ctx, b.down, gvrConfigMaps, ns, name, map[string]interface{}{"data": map[string]interface{}{"v": v}})
		}}
	statusLabel := func(who string, rate int) string {
		return fmt.Sprintf("%s latency, %d status writes/s over %d objects", who, rate, n)
	}
	runs := map[string][]churnResult{}
	measure := func(label string, ch churn, rate float64, d time.Duration) error {
		for rep := 0; rep < b.cfg.repeat; rep++ {
			r, err := ch.run(ctx, rate, d)
			if err != nil {
				return err
			}
			runs[label] = append(runs[label], r)
		}
		b.recordChurn(label, runs[label])
		return nil
	}
	for _, c := range []struct {
		label string
		ch    churn
		rate  float64
		dur   time.Duration
	}{
		{fmt.Sprintf("downsync latency, 50 updates/s over %d objects", n), downsync, 50, dur},
		{fmt.Sprintf("downsync latency, 500 updates/s over %d objects", n), downsync, 500, dur / 2},
		{statusLabel("status-return", 50), status, 50, dur},
		{statusLabel("status-return", 500), status, 500, dur / 2},
		{fmt.Sprintf("upsync latency, 50 updates/s over %d objects", n), upsync, 50, dur},
	} {
		if err := measure(c.label, c.ch, c.rate, c.dur); err != nil {
			return err
		}
	}

	// The baseline of status return, in the same run on the same objects: a bare status relay with
	// the syncer stopped.
	p.stopProcess()
	stop, err := b.startStatusRelay(ctx, widgets)
	if err != nil {
		return err
	}
	defer stop()
	for _, rate := range []int{50, 500} {
		d := dur
		if rate == 500 {
			d = dur / 2
		}
		relay := statusLabel("bare status relay", rate)
		if err := measure(relay, status, float64(rate), d); err != nil {
			return err
		}
		for _, q := range []float64{50, 99} {
			ours, base := medianPercentile(runs[statusLabel("status-return", rate)], q), medianPercentile(runs[relay], q)
			if base > 0 {
				b.record(statusLabel("status-return", rate), fmt.Sprintf("p%g ÷ bare status relay p%g", q, q), "ratio", []float64{ours / base},
					"medians over the repetitions; the relay: an edge informer and 4 workers merge-patching /status upstream")
			}
		}
	}
	return nil
}

// medianPercentile is the median over runs of each run's q-th percentile latency, in seconds.
func medianPercentile(runs []churnResult, q float64) float64 {
	var ps []float64
	for _, r := range runs {
		ps = append(ps, percentile(r.latencies, q))
	}
	sort.Float64s(ps)
	return median(ps)
}
