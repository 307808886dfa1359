package framework

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/kubestellar/syncer/pkg/metrics"
)

// TestWriteLoopDetected: the same content written LoopWrites times within the window is a loop with
// another writer, named from the object's field managers; the key backs off; new content (an
// upstream change) is not a loop.
func TestWriteLoopDetected(t *testing.T) {
	m := metrics.New(prometheus.NewRegistry())
	rec := record.NewFakeRecorder(10)
	w := NewWrites(metrics.Downsync, "kubestellar-syncer", m, rec)
	key := Key{GVR: cm, Namespace: "a", Name: "x"}
	live := &unstructured.Unstructured{Object: map[string]interface{}{}}
	now := metav1.Now()
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kubestellar-syncer", Operation: metav1.ManagedFieldsOperationApply, Time: &now},
		{Manager: "reverter", Operation: metav1.ManagedFieldsOperationUpdate, Time: &now},
	})
	about := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}
	ctx := context.Background()

	for i := 0; i < 2*LoopWrites; i++ { // an upstream change each time: never a loop
		if w.Wrote(ctx, key, string(rune('a'+i)), false, about, live) {
			t.Fatalf("new content %d taken for a loop", i)
		}
	}
	for i := 1; i < LoopWrites; i++ {
		if w.Wrote(ctx, key, "same", false, about, live) {
			t.Fatalf("a loop after %d writes", i)
		}
	}
	if !w.WouldLoop(key, "same") || w.WouldLoop(key, "other") {
		t.Error("WouldLoop does not foresee the loop")
	}
	if !w.Wrote(ctx, key, "same", false, about, live) {
		t.Fatal("no loop after the same content was written again and again")
	}
	if left, ok := w.Backoff(key); !ok || left <= 0 || left > LoopBackoff {
		t.Errorf("backoff %v %v", left, ok)
	}
	if got := testutil.ToFloat64(m.Writes.WithLabelValues(metrics.Downsync, "configmaps", metrics.Loop)); got != 1 {
		t.Errorf("loop count %v", got)
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, "WriteLoop") || !strings.Contains(e, "reverter (Update)") || strings.Contains(e, "kubestellar-syncer (") {
			t.Errorf("event %q does not name the other writer alone", e)
		}
	default:
		t.Error("no Event")
	}
	if n, ex := w.Loops(5); n != 1 || !strings.Contains(ex[0].String(), "reverter") {
		t.Errorf("loops %d %v", n, ex)
	}
}

// TestLoopStateForgotten: a key with no write within LoopWindow that never looped leaves the loop
// bookkeeping at the next sweep (at most one per LoopWindow); a key that backed off stays.
func TestLoopStateForgotten(t *testing.T) {
	now := time.Now()
	old, recent, looped := Key{Name: "old"}, Key{Name: "recent"}, Key{Name: "looped"}
	l := &loops{keys: map[Key]*loopState{
		old:    {content: "c", writes: []time.Time{now.Add(-2 * LoopWindow)}},
		recent: {content: "c", writes: []time.Time{now.Add(-time.Second)}},
		looped: {content: "c", backoff: LoopBackoff},
	}}
	l.sweep(now)
	if _, ok := l.keys[old]; ok {
		t.Error("a key idle for longer than the window is remembered")
	}
	if _, ok := l.keys[recent]; !ok {
		t.Error("a key written within the window is forgotten")
	}
	if _, ok := l.keys[looped]; !ok {
		t.Error("a key that backed off is forgotten")
	}
	l.keys[old] = &loopState{content: "c", writes: []time.Time{now.Add(-2 * LoopWindow)}}
	l.sweep(now.Add(time.Second))
	if _, ok := l.keys[old]; !ok {
		t.Error("swept twice within the window")
	}
}

// TestLoopStateMadeAnewAfterABurst: once a burst of writes (an initial sync) is forgotten, the map
// that held it is made anew with what is left (a map keeps the size it grew to).
func TestLoopStateMadeAnewAfterABurst(t *testing.T) {
	now := time.Now()
	l := &loops{keys: map[Key]*loopState{}}
	for i := range shrinkAfter + 10 {
		l.keys[Key{Name: fmt.Sprint(i)}] = &loopState{content: "c", writes: []time.Time{now.Add(-2 * LoopWindow)}}
	}
	looped := Key{Name: "looped"}
	l.keys[looped] = &loopState{content: "c", backoff: LoopBackoff}
	l.peak = Peak{len(l.keys)}
	before := reflect.ValueOf(l.keys).Pointer()
	l.sweep(now)
	if len(l.keys) != 1 || l.keys[looped] == nil || l.peak.n != 1 || reflect.ValueOf(l.keys).Pointer() == before {
		t.Errorf("after the sweep: %d keys, peak %d, same map %v; want the backed-off key alone in a new map",
			len(l.keys), l.peak.n, reflect.ValueOf(l.keys).Pointer() == before)
	}
}
