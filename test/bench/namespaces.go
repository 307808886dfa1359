package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// namespaces measures what a SyncerConfig naming many namespaces costs, and whether it holds up
// another config's objects: a syncer serves config A (one namespace, its objects arriving), then
// config B is added naming N namespaces, two of which exist upstream with an object each. For N =
// 10, 100, 1,000, 5,000 it prints how soon an object made in A's namespace right after B arrives
// at the edge, how soon B's objects do, and what the start-up costs the upstream (LIST and WATCH
// requests until B's objects arrived) and the syncer (goroutines, RSS): once as the syncer runs
// by default (past --max-namespace-informers namespaces a resource is watched cluster-wide,
// filtered, where the syncer may), once forced to watch namespace by namespace.
func (b *bench) namespaces(ctx context.Context) error {
	sizes := []int{10, 100, 1000, 5000}
	if b.cfg.quick {
		sizes = []int{10, 100}
	}
	// The upstream has no namespace controller: its namespaces deleted stay terminating, so the
	// baseline syncer's run and the syncer's use namespaces of their own.
	prefix := "nsb-"
	if b.label != "" {
		prefix = "nsb-baseline-"
	}
	other, a, bb := prefix+"other", prefix+"a", prefix+"b"
	if err := ensureNamespaces(ctx, b.up, []string{other, a, bb}); err != nil {
		return err
	}
	defer func() { _ = deleteNamespaces(context.Background(), b.up, []string{other, a, bb}) }()
	defer func() { _ = deleteNamespaces(context.Background(), b.down, []string{other, a, bb}) }()
	for _, ns := range []string{other, a, bb} {
		if _, err := b.up.dyn.Resource(gvrConfigMaps).Namespace(ns).Create(ctx, configMap(ns, "steady", nil), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	modes := []struct{ name, flag string }{{"default", ""}, {"namespace by namespace", "--max-namespace-informers=1000000"}}
	for _, n := range sizes {
		for _, mode := range modes {
			for rep := 0; rep < b.cfg.repeat; rep++ {
				if err := b.namespacesRound(ctx, n, rep, mode.name, mode.flag, other, a, bb); err != nil {
					return fmt.Errorf("%d namespaces, %s: %w", n, mode.name, err)
				}
			}
		}
	}
	return nil
}

// namespacesRound is one measurement: a fresh syncer with config A synced, config B with n
// namespaces added.
func (b *bench) namespacesRound(ctx context.Context, n, rep int, mode, flag, other, a, bb string) error {
	_ = b.up.dyn.Resource(gvrSyncerConfig).Delete(ctx, "bench-many", metav1.DeleteOptions{})
	if err := b.syncerConfigNamed(ctx, "bench-one", nil, nsScope([]string{other}, resourceOf(gvrConfigMaps))); err != nil {
		return err
	}
	var extra []string
	if flag != "" {
		extra = append(extra, flag)
	}
	p, err := b.startSyncer(extra...)
	if err != nil {
		return err
	}
	defer p.stopProcess()
	if err := b.waitAtEdge(ctx, other, "steady", time.Minute); err != nil {
		return err
	}
	if err := p.waitSettled(ctx, time.Second, time.Minute); err != nil {
		return err
	}
	m0, err := p.metrics()
	if err != nil {
		return err
	}
	names := []string{a, bb}
	for i := 2; i < n; i++ {
		names = append(names, fmt.Sprintf("nsb-absent-%05d", i))
	}
	start := time.Now()
	if err := b.syncerConfigNamed(ctx, "bench-many", nil, nsScope(names, resourceOf(gvrConfigMaps))); err != nil {
		return err
	}
	probe := fmt.Sprintf("probe-%d-%d-%d", n, rep, time.Now().UnixNano()%1000)
	if _, err := b.up.dyn.Resource(gvrConfigMaps).Namespace(other).Create(ctx, configMap(other, probe, nil), metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := b.waitAtEdge(ctx, other, probe, 5*time.Minute); err != nil {
		return err
	}
	otherArrived := time.Since(start)
	for _, ns := range []string{a, bb} {
		if err := b.waitAtEdge(ctx, ns, "steady", 10*time.Minute); err != nil {
			return err
		}
	}
	manyArrived := time.Since(start)
	m1, err := p.metrics()
	if err != nil {
		return err
	}
	requests := func(verb string) float64 {
		return sumMatching(m1, "kubestellar_syncer_api_requests_total{", `side="upstream"`, `verb="`+verb+`"`) -
			sumMatching(m0, "kubestellar_syncer_api_requests_total{", `side="upstream"`, `verb="`+verb+`"`)
	}
	if err := p.waitSettled(ctx, time.Second, 10*time.Minute); err != nil {
		return err
	}
	_, rss, err := procUsage(p.cmd.Process.Pid)
	if err != nil {
		return err
	}
	m2, err := p.metrics()
	if err != nil {
		return err
	}
	label := fmt.Sprintf("%d namespaces, %s", n, mode)
	b.record("namespaces", label+": another config's new object at the edge", "ms", []float64{ms(otherArrived)}, "")
	b.record("namespaces", label+": its own objects at the edge", "ms", []float64{ms(manyArrived)}, "")
	b.record("namespaces", label+": upstream LISTs", "requests", []float64{requests("LIST")}, "until its objects arrived")
	b.record("namespaces", label+": upstream WATCHes", "requests", []float64{requests("WATCH")}, "until its objects arrived")
	b.record("namespaces", label+": syncer goroutines", "goroutines", []float64{sumMatching(m2, "go_goroutines")}, "settled")
	b.record("namespaces", label+": syncer RSS", "MiB", []float64{rss / (1 << 20)}, "settled")
	logf("namespaces: %s: other config's object %v, its own %v", label, otherArrived.Round(time.Millisecond), manyArrived.Round(time.Millisecond))
	_ = b.up.dyn.Resource(gvrConfigMaps).Namespace(other).Delete(ctx, probe, metav1.DeleteOptions{})
	return nil
}

// waitAtEdge waits until ns/name is at the edge.
func (b *bench) waitAtEdge(ctx context.Context, ns, name string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := b.down.dyn.Resource(gvrConfigMaps).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
