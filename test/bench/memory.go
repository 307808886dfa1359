package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// memory measures the syncer's live Go heap (after a forced GC) and RSS with N ConfigMaps synced,
// against an empty selection, as bytes per object. The upstream is first emptied of ConfigMaps so
// that it holds only the objects destined for the edge, as a mailbox workspace does (the syncer
// caches every upstream object of a selected resource, and its own copies at the edge).
func (b *bench) memory(ctx context.Context) error {
	sizes := b.memorySizes()
	logf("memory: emptying the upstream of ConfigMaps (a mailbox holds only what goes to its edge)")
	empty, err := b.memoryUpstream(ctx)
	if err != nil {
		return err
	}
	heap0, rss0, err := b.measureMemory(ctx, empty, "heap-0.pprof")
	if err != nil {
		return err
	}
	b.record("memory", "baseline (nothing selected exists): heap", "MiB", []float64{heap0 / (1 << 20)}, "live heap after a forced GC")
	b.record("memory", "baseline (nothing selected exists): RSS", "MiB", []float64{rss0 / (1 << 20)}, "")
	objSize := 0.0
	for _, n := range sizes {
		w := newWorkload("mem", gvrConfigMaps, n, 100)
		label := fmt.Sprintf("%d ConfigMaps", n)
		logf("memory: %s: creating upstream", label)
		if err := w.create(ctx, b.up, nil); err != nil {
			return err
		}
		if objSize == 0 {
			obj, err := b.up.dyn.Resource(gvrConfigMaps).Namespace(w.namespaces[0]).Get(ctx, "o-000000", metav1.GetOptions{})
			if err != nil {
				return err
			}
			obj.SetManagedFields(nil)
			data, _ := json.Marshal(obj.Object)
			objSize = float64(len(data))
			b.record("memory", "one ConfigMap as JSON", "bytes", []float64{objSize}, "the object itself (managedFields dropped, as in the caches)")
		}
		heap, rss, err := b.measureMemory(ctx, w, fmt.Sprintf("heap-%d.pprof", n))
		if err != nil {
			return err
		}
		perObj := (heap - heap0) / float64(n)
		b.record("memory", label+": heap", "MiB", []float64{heap / (1 << 20)}, "")
		b.record("memory", label+": RSS", "MiB", []float64{rss / (1 << 20)}, "")
		b.record("memory", label+": heap per object", "bytes", []float64{perObj}, "above the baseline; the syncer caches the upstream object and a slim edge copy")
		b.record("memory", label+": heap per object beyond the object as JSON", "bytes", []float64{perObj - objSize}, "the goal: at most 2,048")
		b.record("memory", label+": RSS per object", "bytes", []float64{(rss - rss0) / float64(n)}, "")
		if err := deleteNamespaces(ctx, b.down, w.namespaces); err != nil {
			return err
		}
	}
	return nil
}

// memorySizes are the object counts of the memory and podmemory scenarios: 1,000, 10,000 and
// 100,000 (-quick: 100 and 1,000), or -sizes.
func (b *bench) memorySizes() []int {
	switch {
	case len(b.cfg.sizes) > 0:
		return b.cfg.sizes
	case b.cfg.quick:
		return []int{100, 1000}
	}
	return []int{1000, 10000, 100000}
}

// memoryUpstream empties the upstream of ConfigMaps and selects the ConfigMaps of the memory
// workload's namespaces, which it makes: it returns that workload, with no objects yet.
func (b *bench) memoryUpstream(ctx context.Context) (workload, error) {
	empty := newWorkload("mem", gvrConfigMaps, 0, 100)
	if err := clearConfigMaps(ctx, b.up); err != nil {
		return empty, err
	}
	if err := ensureNamespaces(ctx, b.up, empty.namespaces); err != nil {
		return empty, err
	}
	return empty, b.syncerConfig(ctx, nsScope(empty.namespaces, resourceOf(gvrConfigMaps)))
}

// clearConfigMaps deletes every ConfigMap of every namespace on a side.
func clearConfigMaps(ctx context.Context, s *side) error {
	list, err := s.dyn.Resource(gvrNamespaces).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, ns := range list.Items {
		if err := s.dyn.Resource(gvrConfigMaps).Namespace(ns.GetName()).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("emptying %s: %w", ns.GetName(), err)
		}
	}
	return nil
}

// measureMemory runs a fresh syncer until the workload is synced, forces a GC through pprof, and
// reads the live heap and RSS from its metrics; with -heap-profiles it saves the profile as profile.
func (b *bench) measureMemory(ctx context.Context, w workload, profile string) (heap, rss float64, err error) {
	var c *counter
	if w.n > 0 {
		if c, err = watchCount(ctx, b.down, gvrConfigMaps, ownedSelector, w.namespaces, w.n, nil); err != nil {
			return 0, 0, err
		}
		defer c.stop()
	}
	// Memory, not speed: fill as fast as the servers go (no limit at the edge by default); the
	// largest size, with each namespace's root CA ConfigMap, is past the default object limit.
	p, err := b.startSyncer("--max-objects-per-resource=0")
	if err != nil {
		return 0, 0, err
	}
	defer p.stopProcess()
	if c != nil {
		if _, _, err := c.wait(ctx, 30*time.Minute); err != nil {
			return 0, 0, fmt.Errorf("%w (syncer log %s)", err, p.log)
		}
	}
	if err := p.waitSettled(ctx, 2*time.Second, 5*time.Minute); err != nil {
		return 0, 0, err
	}
	if b.cfg.memoryAge > 0 {
		logf("memory: letting the syncer run for %s", b.cfg.memoryAge)
		select {
		case <-time.After(b.cfg.memoryAge):
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
	resp, err := http.Get("http://" + p.metricsAddr + "/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, 0, err
	}
	out := io.Discard
	if b.cfg.profiles != "" {
		if err := os.MkdirAll(b.cfg.profiles, 0o755); err != nil {
			return 0, 0, err
		}
		f, err := os.Create(filepath.Join(b.cfg.profiles, profile))
		if err != nil {
			resp.Body.Close()
			return 0, 0, err
		}
		defer f.Close()
		out = f
	}
	_, err = io.Copy(out, resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, 0, err
	}
	m, err := p.metrics()
	if err != nil {
		return 0, 0, err
	}
	return m["go_memstats_heap_alloc_bytes{}"], m["process_resident_memory_bytes{}"], nil
}
