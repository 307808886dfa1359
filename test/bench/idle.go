package main

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// idleWindow is how long each idle measurement lasts.
func (b *bench) idleWindow() time.Duration {
	if b.cfg.idleWindow > 0 {
		return b.cfg.idleWindow
	}
	if b.cfg.quick {
		return 15 * time.Second
	}
	return time.Minute
}

// apiserverRequests is the non-WATCH requests an apiserver has served, all clients.
func apiserverRequests(ctx context.Context, s *side) (float64, error) {
	m, err := apiserverMetrics(ctx, s)
	if err != nil {
		return 0, err
	}
	return sumMatching(m, "apiserver_request_total{", `!verb="WATCH"`), nil
}

// idle measures what the syncer costs when nothing changes, with the 10k ConfigMaps of the sync
// scenario synced: its own request counts per side (non-WATCH), and the apiservers' request counts
// with and without it (the edge runs a kube-controller-manager, whose requests are the noise).
func (b *bench) idle(ctx context.Context) error {
	p := b.syncer
	if p == nil {
		return fmt.Errorf("the idle scenario needs the sync scenario's 10k syncer (run -scenarios sync,idle)")
	}
	window := b.idleWindow()
	logf("idle: waiting for the syncer to settle, then %d windows of %v", b.cfg.repeat, window)
	if err := p.waitSettled(ctx, 2*time.Second, 5*time.Minute); err != nil {
		return err
	}
	perMin := func(d float64) float64 { return d * float64(time.Minute) / float64(window) }
	perDay := func(d float64) float64 { return d * float64(24*time.Hour) / float64(window) / 1e6 }
	var ownUp, ownDown, writes, heartbeat, lists, apiUp, apiDown, bytesUp, bytesDown []float64
	parts := map[string][]float64{} // upstream bytes by direction, verb and resource
	for rep := 0; rep < b.cfg.repeat; rep++ {
		m0, err := p.metrics()
		if err != nil {
			return err
		}
		u0, err := apiserverRequests(ctx, b.up)
		if err != nil {
			return err
		}
		d0, err := apiserverRequests(ctx, b.down)
		if err != nil {
			return err
		}
		time.Sleep(window)
		m1, err := p.metrics()
		if err != nil {
			return err
		}
		u1, _ := apiserverRequests(ctx, b.up)
		d1, _ := apiserverRequests(ctx, b.down)
		delta := func(prefix string, parts ...string) float64 {
			return sumMatching(m1, prefix, parts...) - sumMatching(m0, prefix, parts...)
		}
		ownUp = append(ownUp, perMin(delta("kubestellar_syncer_api_requests_total{", `side="upstream"`, `!verb="WATCH"`)))
		ownDown = append(ownDown, perMin(delta("kubestellar_syncer_api_requests_total{", `side="downstream"`, `!verb="WATCH"`)))
		lists = append(lists, perMin(delta("kubestellar_syncer_api_requests_total{", `verb="LIST"`)))
		writes = append(writes, perMin(delta("kubestellar_syncer_writes_total{")))
		heartbeat = append(heartbeat, perMin(delta("kubestellar_syncer_api_requests_total{", `side="upstream"`, `verb="PATCH"`)))
		bytesUp = append(bytesUp, perDay(delta("kubestellar_syncer_bytes_total{", `side="upstream"`)))
		bytesDown = append(bytesDown, perDay(delta("kubestellar_syncer_bytes_total{", `side="downstream"`)))
		for k, v := range m1 {
			if strings.HasPrefix(k, "kubestellar_syncer_bytes_total{") && strings.Contains(k, `side="upstream"`) && v > m0[k] {
				parts[bytesPart(k)] = append(parts[bytesPart(k)], perDay(v-m0[k]))
			}
		}
		apiUp = append(apiUp, perMin(u1-u0-1)) // -1: the bench's own /metrics read
		apiDown = append(apiDown, perMin(d1-d0-1))
	}
	p.stopProcess()
	b.syncer = nil
	var noiseUp, noiseDown []float64
	for rep := 0; rep < b.cfg.repeat; rep++ {
		u0, err := apiserverRequests(ctx, b.up)
		if err != nil {
			return err
		}
		d0, err := apiserverRequests(ctx, b.down)
		if err != nil {
			return err
		}
		time.Sleep(window)
		u1, _ := apiserverRequests(ctx, b.up)
		d1, _ := apiserverRequests(ctx, b.down)
		noiseUp, noiseDown = append(noiseUp, perMin(u1-u0-1)), append(noiseDown, perMin(d1-d0-1))
	}
	s := fmt.Sprintf("idle, %d ConfigMaps synced", b.idleObjects)
	b.record(s, "syncer requests to upstream (own metrics)", "requests/min", ownUp, "non-WATCH; the heartbeat writes a SyncerConfig's status when it changes, and every --heartbeat-refresh-period (5m)")
	b.record(s, "  of which heartbeat PATCHes", "requests/min", heartbeat, "")
	b.record(s, "syncer requests to the edge (own metrics)", "requests/min", ownDown, "non-WATCH")
	b.record(s, "syncer LISTs", "requests/min", lists, "")
	b.record(s, "syncer bytes with the upstream", "MB/day", bytesUp, "kubestellar_syncer_bytes_total, sent and received: HTTP bodies as they travel, without TLS and HTTP/2 overhead")
	names := make([]string, 0, len(parts))
	for k := range parts {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return sum(parts[names[i]]) > sum(parts[names[j]]) })
	for i, k := range names {
		if i == 5 {
			break
		}
		b.record(s, "  "+k, "MB/day", parts[k], "")
	}
	b.record(s, "syncer bytes with the edge", "MB/day", bytesDown, "")
	b.record(s, "syncer writes", "writes/min", writes, "writes_total, all directions")
	b.record(s, "upstream apiserver, all clients, with the syncer", "requests/min", apiUp, "apiserver_request_total, non-WATCH")
	b.record(s, "upstream apiserver, all clients, syncer stopped", "requests/min", noiseUp, "")
	b.record(s, "edge apiserver, all clients, with the syncer", "requests/min", apiDown, "the edge runs kube-controller-manager")
	b.record(s, "edge apiserver, all clients, syncer stopped", "requests/min", noiseDown, "")
	w := newWorkload("s10k", gvrConfigMaps, 0, 100)
	b.idleObjects = 0
	return deleteNamespaces(ctx, b.down, w.namespaces)
}

// bytesLabels are the labels of a kubestellar_syncer_bytes_total series that bytesPart names.
var bytesLabels = regexp.MustCompile(`(direction|verb|resource)="([^"]*)"`)

// bytesPart names a kubestellar_syncer_bytes_total series by its direction, verb and resource.
func bytesPart(series string) string {
	var out []string
	for _, m := range bytesLabels.FindAllStringSubmatch(series, -1) {
		out = append(out, m[2])
	}
	return strings.Join(out, " ")
}

func sum(vs []float64) float64 {
	t := 0.0
	for _, v := range vs {
		t += v
	}
	return t
}
