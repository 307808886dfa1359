package support

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

const exposition = `# TYPE workqueue_depth gauge
workqueue_depth{name="downsync"} 0
workqueue_depth{name="status"} 2
workqueue_depth{name="upsync"} 0
# TYPE workqueue_unfinished_work_seconds gauge
workqueue_unfinished_work_seconds{name="downsync"} 0
workqueue_unfinished_work_seconds{name="status"} 0
workqueue_unfinished_work_seconds{name="upsync"} 0.5
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="downsync"} 10
workqueue_adds_total{name="status"} 5
# TYPE kubestellar_syncer_api_requests_total counter
kubestellar_syncer_api_requests_total{code="200",side="upstream",verb="LIST"} 3
kubestellar_syncer_api_requests_total{code="200",side="upstream",verb="WATCH"} 100
# TYPE kubestellar_syncer_writes_total counter
kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="created"} 7
`

func TestBusyAndActivity(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	busy := Busy(m)
	if len(busy) != 2 || !strings.HasPrefix(busy[0], "status: depth 2") || !strings.HasPrefix(busy[1], "upsync: depth 0, in progress 0.5s") {
		t.Errorf("busy = %q", busy)
	}
	if got := Activity(m); got != 10+5+3+7 {
		t.Errorf("activity = %v, want 25 (WATCH requests left out)", got)
	}
}

// fakeSyncer serves metrics whose activity moves until stopAt, then stays still.
type fakeSyncer struct {
	mu         sync.Mutex
	adds       float64
	depth      float64
	stopAt     time.Time
	lastChange time.Time
}

func (f *fakeSyncer) scrape() (map[string]float64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := time.Now(); now.Before(f.stopAt) {
		f.adds++
		f.lastChange = now
	}
	return map[string]float64{
		`workqueue_depth{name="downsync"}`:      f.depth,
		`workqueue_adds_total{name="downsync"}`: f.adds,
	}, nil
}

func TestWaitSettled(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	f := &fakeSyncer{stopAt: start.Add(600 * time.Millisecond)}
	if err := WaitSettled(ctx, f.scrape, 300*time.Millisecond, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	quietFor := time.Since(f.lastChange)
	f.mu.Unlock()
	if time.Since(start) < 600*time.Millisecond || quietFor < 300*time.Millisecond {
		t.Errorf("settled after %v, %v after the last activity: too early", time.Since(start), quietFor)
	}

	f = &fakeSyncer{depth: 1}
	err := WaitSettled(ctx, f.scrape, 100*time.Millisecond, time.Second)
	if err == nil || !strings.Contains(err.Error(), "busy: downsync: depth 1") {
		t.Errorf("a busy queue: %v", err)
	}

	err = WaitSettled(ctx, func() (map[string]float64, error) { return nil, errors.New("connection refused") }, 100*time.Millisecond, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("an unreachable syncer: %v", err)
	}
}
