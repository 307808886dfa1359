package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/test/testenv"
)

// mailboxes compares one syncer serving N kcp workspaces through an APIExport's virtual workspace
// (--apiexport-endpoint-slice) with N syncers, one per workspace, on the same workspaces and objects:
// initial sync time, memory, and the watches and requests they open upstream.
func (b *bench) mailboxes(ctx context.Context) error {
	n, m := 100, 10
	if b.cfg.quick {
		n, m = 5, 3
	}
	if b.env.KCP == nil {
		return fmt.Errorf("kcp is not running (-kcp-bin-dir)")
	}
	logf("mailboxes: setting up %d workspaces bound to one APIExport", n)
	start := time.Now()
	x, err := b.env.SetUpKCPExport(ctx, testenv.KCPExportOptions{Prefix: "bench", Mailboxes: n})
	if err != nil {
		return err
	}
	if err := fillMailboxes(ctx, x.Mailboxes, m); err != nil {
		return err
	}
	logf("mailboxes: %d workspaces with %d ConfigMaps each ready in %.0fs", n, m, time.Since(start).Seconds())

	// One syncer for every workspace.
	one, err := b.measureMailboxes(ctx, n*m, func() ([]*syncerProc, error) {
		p, err := b.startSyncerFrom(x.Provider.Kubeconfig, "bench-all", "--apiexport-endpoint-slice="+x.Export.Name)
		return []*syncerProc{p}, err
	}, func(u *unstructured.Unstructured) bool { return mapping.OwnerOf(u) == "bench-all" })
	if err != nil {
		return err
	}
	// One syncer per workspace.
	each, err := b.measureMailboxes(ctx, n*m, func() ([]*syncerProc, error) {
		var procs []*syncerProc
		for i, ws := range x.Mailboxes {
			p, err := b.startSyncerFrom(ws.Kubeconfig, fmt.Sprintf("bench-%d", i+1))
			if err != nil {
				return procs, err
			}
			procs = append(procs, p)
		}
		return procs, nil
	}, func(u *unstructured.Unstructured) bool { o := mapping.OwnerOf(u); return o != "" && o != "bench-all" })
	if err != nil {
		return err
	}
	note := fmt.Sprintf("%d workspaces x %d ConfigMaps of 1 KiB", n, m)
	for _, r := range []struct {
		metric, unit string
		one, each    float64
	}{
		{"initial sync (start to every object at the edge)", "s", one.sync.Seconds(), each.sync.Seconds()},
		{"RSS, all syncer processes", "MiB", one.rss / (1 << 20), each.rss / (1 << 20)},
		{"heap in use, all syncer processes", "MiB", one.heap / (1 << 20), each.heap / (1 << 20)},
		{"watches opened upstream (WATCH requests until settled)", "", one.upWatches, each.upWatches},
		{"watches opened at the edge (WATCH requests until settled)", "", one.downWatches, each.downWatches},
		{"upstream requests until settled", "", one.upRequests, each.upRequests},
	} {
		b.record("mailboxes", r.metric+": one syncer", r.unit, []float64{r.one}, note)
		b.record("mailboxes", r.metric+": a syncer per workspace", r.unit, []float64{r.each}, note)
		if r.each > 0 {
			b.record("mailboxes", r.metric+": ratio one / per workspace", "x", []float64{r.one / r.each}, note)
		}
	}
	return nil
}

// fillMailboxes gives every workspace a namespace bench-<i> with m ConfigMaps and a SyncerConfig
// selecting them (distinct namespaces, so that a syncer per workspace writes distinct edge objects).
func fillMailboxes(ctx context.Context, mailboxes []*testenv.Workspace, m int) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(mailboxes))
	sem := make(chan struct{}, 8)
	for i, ws := range mailboxes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := fillMailbox(ctx, ws, fmt.Sprintf("bench-%d", i+1), m); err != nil {
				errs <- fmt.Errorf("%s: %w", ws.Path, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func fillMailbox(ctx context.Context, ws *testenv.Workspace, ns string, m int) error {
	cfg, err := ws.RESTConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nsObj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
	nsObj.SetName(ns)
	if _, err := dyn.Resource(gvrNamespaces).Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		return err
	}
	for j := range m {
		if _, err := dyn.Resource(gvrConfigMaps).Namespace(ns).Create(ctx, configMap(ns, fmt.Sprintf("cm-%d", j), nil), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	cfgObj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncerConfig",
		"spec": nsScope([]string{ns}, resourceOf(gvrConfigMaps))}}
	cfgObj.SetName("bench")
	_, err = dyn.Resource(gvrSyncerConfig).Create(ctx, cfgObj, metav1.CreateOptions{})
	return err
}

// mailboxesMeasure is what one way of serving the workspaces cost.
type mailboxesMeasure struct {
	sync                                          time.Duration
	rss, heap, upWatches, downWatches, upRequests float64
}

// measureMailboxes starts syncers, waits until want ConfigMaps at the edge are theirs (ours tells),
// and reads their memory and requests once they settle; it stops them.
func (b *bench) measureMailboxes(ctx context.Context, want int, start func() ([]*syncerProc, error),
	ours func(*unstructured.Unstructured) bool) (mailboxesMeasure, error) {
	var out mailboxesMeasure
	began := time.Now()
	procs, err := start()
	defer func() {
		for _, p := range procs {
			p.stopProcess()
		}
	}()
	if err != nil {
		return out, err
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := b.down.dyn.Resource(gvrConfigMaps).List(ctx, metav1.ListOptions{LabelSelector: mapping.OwnerLabel})
		if err != nil {
			logf("mailboxes: listing the edge's ConfigMaps: %v", err)
			return false, nil // a failed list is tried again at the next poll
		}
		got := 0
		for i := range list.Items {
			if ours(&list.Items[i]) {
				got++
			}
		}
		return got >= want, nil
	})
	if err != nil {
		return out, fmt.Errorf("waiting for %d ConfigMaps at the edge: %w (logs %s)", want, err, procs[0].log)
	}
	out.sync = time.Since(began)
	for _, p := range procs {
		if err := p.waitSettled(ctx, 2*time.Second, 5*time.Minute); err != nil {
			return out, err
		}
	}
	for _, p := range procs {
		resp, err := http.Get("http://" + p.metricsAddr + "/debug/pprof/heap?gc=1")
		if err != nil {
			return out, err
		}
		resp.Body.Close()
		mt, err := p.metrics()
		if err != nil {
			return out, err
		}
		out.heap += mt["go_memstats_heap_alloc_bytes{}"]
		out.rss += mt["process_resident_memory_bytes{}"]
		out.upWatches += sumMatching(mt, "kubestellar_syncer_api_requests_total", `side="upstream"`, `verb="WATCH"`)
		out.downWatches += sumMatching(mt, "kubestellar_syncer_api_requests_total", `side="downstream"`, `verb="WATCH"`)
		out.upRequests += sumMatching(mt, "kubestellar_syncer_api_requests_total", `side="upstream"`)
	}
	logf("mailboxes: %d syncer(s): %d objects in %.1fs, RSS %.0f MiB, %v upstream watches", len(procs), want, out.sync.Seconds(), out.rss/(1<<20), out.upWatches)
	return out, nil
}
