package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubestellar/syncer/pkg/metrics"
)

// poller models the release-0.14 syncer (kubestellar v0.14.2's pkg/syncer, its SyncMany loop)
// for a namespaceScope SyncerConfig: each pass re-reads both sides' discovery, then per namespace
// GETs the Namespace on both sides (creates or PUTs it downstream, PUTs its status upstream), LISTs
// the resource on both sides, creates what is missing, PUTs every object that exists on both sides
// (no comparison), deletes marked objects gone upstream, then LISTs both sides again for status
// return. A pass is followed by a 15 s pause. Its clients use the original defaults, qps 30 and
// burst 20. Copies get the label bench=polling so the bench can watch them.
type poller struct {
	up, down         dynamic.Interface
	upDisc, downDisc discovery.DiscoveryInterface
	w                workload
	mu               sync.Mutex
	requests         map[string]float64 // "side verb" -> count
}

type countingTransport struct {
	side string
	p    *poller
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	verb := metrics.Verb(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
	t.p.mu.Lock()
	t.p.requests[t.side+" "+verb]++
	t.p.mu.Unlock()
	return t.next.RoundTrip(req)
}

func newPoller(b *bench, w workload) (*poller, error) {
	p := &poller{w: w, requests: map[string]float64{}}
	for _, s := range []*side{b.up, b.down} {
		cfg := rest.CopyConfig(s.cfg)
		cfg.QPS, cfg.Burst = 30, 20
		side := s.name
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{side: side, p: p, next: rt} })
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		disc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return nil, err
		}
		if s == b.up {
			p.up, p.upDisc = dyn, disc
		} else {
			p.down, p.downDisc = dyn, disc
		}
	}
	return p, nil
}

func (p *poller) counts() map[string]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]float64{}
	for k, v := range p.requests {
		out[k] = v
	}
	return out
}

func (p *poller) run(ctx context.Context) {
	for ctx.Err() == nil {
		p.pass(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(15 * time.Second):
		}
	}
}

const pollMark = "edge.kubestellar.io/downsynced"

func (p *poller) pass(ctx context.Context) {
	_, _, _ = p.upDisc.ServerGroupsAndResources()
	_, _, _ = p.downDisc.ServerGroupsAndResources()
	nsGVR := gvrNamespaces
	for _, ns := range p.w.namespaces {
		upNS, err := p.up.Resource(nsGVR).Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			continue
		}
		downNS, err := p.down.Resource(nsGVR).Get(ctx, ns, metav1.GetOptions{})
		copyNS := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
		copyNS.SetName(ns)
		copyNS.SetAnnotations(map[string]string{pollMark: "Namespace//" + ns})
		if apierrors.IsNotFound(err) {
			_, _ = p.down.Resource(nsGVR).Create(ctx, copyNS, metav1.CreateOptions{})
		} else if err == nil {
			copyNS.SetResourceVersion(downNS.GetResourceVersion())
			_, _ = p.down.Resource(nsGVR).Update(ctx, copyNS, metav1.UpdateOptions{})
		}
		_, _ = p.up.Resource(nsGVR).UpdateStatus(ctx, upNS, metav1.UpdateOptions{})

		res := p.w.gvr
		upList, err := p.up.Resource(res).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		downList, err := p.down.Resource(res).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		downByName := map[string]*unstructured.Unstructured{}
		for i := range downList.Items {
			downByName[downList.Items[i].GetName()] = &downList.Items[i]
		}
		upNames := map[string]bool{}
		for i := range upList.Items {
			u := upList.Items[i].DeepCopy()
			upNames[u.GetName()] = true
			u.SetUID("")
			u.SetManagedFields(nil)
			u.SetAnnotations(map[string]string{pollMark: u.GetKind() + "/" + ns + "/" + u.GetName()})
			u.SetLabels(map[string]string{"bench": "polling"})
			if d, ok := downByName[u.GetName()]; ok {
				u.SetResourceVersion(d.GetResourceVersion())
				_, _ = p.down.Resource(res).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{})
			} else {
				u.SetResourceVersion("")
				_, _ = p.down.Resource(res).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
			}
		}
		for name, d := range downByName {
			if !upNames[name] && d.GetAnnotations()[pollMark] != "" {
				_ = p.down.Resource(res).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
			}
		}
		// Status return: LIST both sides again; ConfigMaps have no status, so nothing is written.
		_, _ = p.up.Resource(res).Namespace(ns).List(ctx, metav1.ListOptions{})
		_, _ = p.down.Resource(res).Namespace(ns).List(ctx, metav1.ListOptions{})
	}
}

// polling runs the model and the syncer on the same workload (1,000 ConfigMaps in one namespace,
// as the original was measured): initial sync, change latency under light churn, idle requests.
func (b *bench) polling(ctx context.Context) error {
	n := 1000
	churnRate, churnDur := 2.0, 60*time.Second
	if b.cfg.quick {
		n, churnDur = 200, 20*time.Second
	}
	w := newWorkload("p1k", gvrConfigMaps, n, 1)
	if err := w.create(ctx, b.up, nil); err != nil {
		return err
	}
	keys := [][2]string{}
	w.each(func(ns, name string) { keys = append(keys, [2]string{ns, name}) })
	write := func(ctx context.Context, ns, name, v string) error {
		return mergePatch(ctx, b.up, gvrConfigMaps, ns, name, map[string]interface{}{"data": map[string]interface{}{"v": v}})
	}
	window := b.idleWindow()
	label := fmt.Sprintf("vs polling (%d ConfigMaps, 1 ns)", n)

	// The polling model.
	var pollRate, pollIdle, pollPUT []float64
	var pollRuns []churnResult
	for rep := 0; rep < b.cfg.repeat; rep++ {
		c, err := watchCount(ctx, b.down, gvrConfigMaps, "bench=polling", w.namespaces, n, nil)
		if err != nil {
			return err
		}
		p, err := newPoller(b, w)
		if err != nil {
			return err
		}
		pctx, stop := context.WithCancel(ctx)
		start := time.Now()
		go p.run(pctx)
		_, all, err := c.wait(ctx, 15*time.Minute)
		c.stop()
		if err != nil {
			stop()
			return fmt.Errorf("polling model: %w", err)
		}
		pollRate = append(pollRate, float64(n)/all.Sub(start).Seconds())
		r, err := churn{keys: keys, observe: b.down, gvr: gvrConfigMaps, selector: "bench=polling", namespaces: w.namespaces, value: dataV, write: write,
			quiet: 90 * time.Second}.
			run(ctx, churnRate, churnDur)
		if err != nil {
			stop()
			return err
		}
		pollRuns = append(pollRuns, r)
		c0 := p.counts()
		time.Sleep(window)
		c1 := p.counts()
		total, puts := 0.0, 0.0
		for k, v := range c1 {
			if k[len(k)-5:] != "WATCH" {
				total += v - c0[k]
			}
			if k == "downstream UPDATE" {
				puts += v - c0[k]
			}
		}
		pollIdle = append(pollIdle, total*float64(time.Minute)/float64(window))
		pollPUT = append(pollPUT, puts*float64(time.Minute)/float64(window))
		stop()
		if err := deleteNamespaces(ctx, b.down, w.namespaces); err != nil {
			return err
		}
	}

	// The syncer on the same workload and churn.
	if err := b.syncerConfig(ctx, nsScope(w.namespaces, resourceOf(gvrConfigMaps))); err != nil {
		return err
	}
	var ourRate, ourIdle []float64
	var ourRuns []churnResult
	for rep := 0; rep < b.cfg.repeat; rep++ {
		c, err := watchCount(ctx, b.down, gvrConfigMaps, ownedSelector, w.namespaces, n, nil)
		if err != nil {
			return err
		}
		p, err := b.startSyncer()
		if err != nil {
			return err
		}
		_, all, err := c.wait(ctx, 15*time.Minute)
		c.stop()
		if err != nil {
			p.stopProcess()
			return err
		}
		ourRate = append(ourRate, float64(n)/all.Sub(p.start).Seconds())
		r, err := churn{keys: keys, observe: b.down, gvr: gvrConfigMaps, selector: ownedSelector, namespaces: w.namespaces, value: dataV, write: write}.
			run(ctx, churnRate, churnDur)
		if err != nil {
			p.stopProcess()
			return err
		}
		ourRuns = append(ourRuns, r)
		m0, _ := p.metrics()
		time.Sleep(window)
		m1, _ := p.metrics()
		d := sumMatching(m1, "kubestellar_syncer_api_requests_total{", `!verb="WATCH"`) - sumMatching(m0, "kubestellar_syncer_api_requests_total{", `!verb="WATCH"`)
		ourIdle = append(ourIdle, d*float64(time.Minute)/float64(window))
		p.stopProcess()
		if err := deleteNamespaces(ctx, b.down, w.namespaces); err != nil {
			return err
		}
	}
	mean := func(runs []churnResult) []float64 {
		var out []float64
		for _, r := range runs {
			s := 0.0
			for _, v := range r.latencies {
				s += v
			}
			out = append(out, s/float64(len(r.latencies)))
		}
		return out
	}
	p50 := func(runs []churnResult) []float64 {
		var out []float64
		for _, r := range runs {
			out = append(out, percentile(r.latencies, 50))
		}
		return out
	}
	p99 := func(runs []churnResult) []float64 {
		var out []float64
		for _, r := range runs {
			out = append(out, percentile(r.latencies, 99))
		}
		return out
	}
	b.record(label, "polling model: initial sync", "objects/s", pollRate, "original measured: about 30.6")
	b.record(label, "syncer: initial sync", "objects/s", ourRate, "")
	b.record(label, "syncer ÷ polling: initial sync", "ratio", ratios(ourRate, pollRate), "")
	seen := func(runs []churnResult) []float64 {
		var out []float64
		for _, r := range runs {
			out = append(out, float64(len(r.latencies))/float64(r.sent))
		}
		return out
	}
	b.record(label, "polling model: change latency mean", "s", mean(pollRuns), fmt.Sprintf("%.0f updates/s for %v; original measured: mean 38.9 s", churnRate, churnDur))
	b.record(label, "polling model: changes seen", "fraction", seen(pollRuns), "")
	b.record(label, "polling model: change latency p50", "s", p50(pollRuns), "")
	b.record(label, "polling model: change latency p99", "s", p99(pollRuns), "")
	b.record(label, "syncer: change latency mean", "s", mean(ourRuns), "")
	b.record(label, "syncer: change latency p50", "s", p50(ourRuns), "")
	b.record(label, "syncer: change latency p99", "s", p99(ourRuns), "")
	b.record(label, "polling ÷ syncer: mean change latency", "ratio", ratios(mean(pollRuns), mean(ourRuns)), "")
	b.record(label, "polling model: idle requests", "requests/min", pollIdle, "both sides, non-WATCH")
	b.record(label, "polling model: idle PUTs at the edge", "requests/min", pollPUT, "original measured: about 1,350")
	b.record(label, "syncer: idle requests", "requests/min", ourIdle, "both sides, non-WATCH (heartbeat included)")
	return nil
}

func ratios(a, b []float64) []float64 {
	var out []float64
	for i := range a {
		if i < len(b) && b[i] != 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}
