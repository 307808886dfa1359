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
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubestellar/syncer/pkg/metrics"
)

func key(name string) Key { return Key{GVR: cm, Namespace: "a", Name: name} }

// TestBaseQueueRules: client-go's workqueue rules, which the base queue keeps.
func TestBaseQueueRules(t *testing.T) {
	q := newBaseQueue("", newLanes(), nil)
	q.Add(key("a"))
	q.Add(key("a"))
	if q.Len() != 1 {
		t.Fatalf("Len = %d after adding one key twice, want 1", q.Len())
	}
	got, _ := q.Get()
	q.Add(key("a")) // added again while processing: not handed to another worker now
	if got != key("a") || q.Len() != 0 {
		t.Fatalf("Get = %v, Len = %d; want a, 0", got, q.Len())
	}
	q.Done(got)
	if q.Len() != 1 {
		t.Fatalf("Len = %d after Done of a key added while processing, want 1", q.Len())
	}
	got, _ = q.Get()
	q.Done(got)
	q.Add(key("b"))
	q.ShutDown()
	q.Add(key("c")) // refused once shutting down
	if got, shutdown := q.Get(); got != key("b") || shutdown {
		t.Errorf("Get after ShutDown = %v, %v; want b, the key queued before", got, shutdown)
	}
	if _, shutdown := q.Get(); !shutdown || !q.ShuttingDown() {
		t.Error("Get on an empty queue that shut down did not say so")
	}
}

func TestBaseQueueDrain(t *testing.T) {
	q := newBaseQueue("", newLanes(), nil)
	q.Add(key("a"))
	got, _ := q.Get()
	done := make(chan struct{})
	go func() {
		q.ShutDownWithDrain()
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("ShutDownWithDrain returned while a key was processing")
	case <-time.After(50 * time.Millisecond):
	}
	q.Done(got)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ShutDownWithDrain did not return once the key was done")
	}
}

// TestBaseQueueGivesBackABacklog: once a backlog larger than shrinkAfter has drained, the queue's
// maps and lanes are made anew (Go maps keep the size they grew to).
func TestBaseQueueGivesBackABacklog(t *testing.T) {
	l := newLanes()
	q := newBaseQueue("", l, nil)
	n := shrinkAfter + 10
	for i := range n {
		q.Add(key(fmt.Sprint(i)))
		l.markFirst(key(fmt.Sprint(i)))
		q.Add(key(fmt.Sprint(i))) // moved to the front lane
	}
	dirty := reflect.ValueOf(q.dirty).Pointer()
	for range n {
		k, _ := q.Get()
		q.Done(k)
	}
	if q.peak.n > n/8 || reflect.ValueOf(q.dirty).Pointer() == dirty || len(q.addTimes) != 0 {
		t.Errorf("after the backlog: peak %v, same dirty map %v, %d add times; want a new, empty map", q.peak, reflect.ValueOf(q.dirty).Pointer() == dirty, len(q.addTimes))
	}
	if l.front != nil || l.back != nil || l.frontPeak.n > n/8 {
		t.Errorf("the lanes kept their arrays: front %d, back %d (caps), front peak %v", cap(l.front), cap(l.back), l.frontPeak)
	}
	q.Add(key("again"))
	if k, _ := q.Get(); k != key("again") {
		t.Errorf("Get after the backlog = %v", k)
	}
}

// TestBaseQueueMetrics: the workqueue series Kubernetes components export, as client-go's queue
// records them.
func TestBaseQueueMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	q := newBaseQueue("downsync", newLanes(), metrics.New(reg).WorkqueueProvider())
	defer q.ShutDown()
	q.Add(key("a"))
	q.Add(key("b"))
	q.Add(key("b"))
	want := `
# HELP workqueue_depth Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{name="downsync"} 2
# HELP workqueue_adds_total Total number of adds handled by workqueue
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="downsync"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "workqueue_depth", "workqueue_adds_total"); err != nil {
		t.Error(err)
	}
	k, _ := q.Get()
	if n := testutil.CollectAndCount(reg, "workqueue_queue_duration_seconds"); n != 1 {
		t.Errorf("queue duration series = %d", n)
	}
	// The unfinished-work gauges are updated by the queue's ticker: wait until they see the key.
	var values map[string]float64
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*unfinishedWorkPeriod, true,
		func(context.Context) (bool, error) {
			values = gatheredValues(reg)
			return values["workqueue_longest_running_processor_seconds"] > 0, nil
		})
	if err != nil || values["workqueue_queue_duration_seconds"] != 1 || values["workqueue_depth"] != 1 {
		t.Errorf("after one Get: %v", values)
	}
	q.Done(k)
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == "workqueue_work_duration_seconds" && f.GetMetric()[0].GetHistogram().GetSampleCount() != 1 {
			t.Errorf("work duration observed %d times, want 1", f.GetMetric()[0].GetHistogram().GetSampleCount())
		}
	}
}

// gatheredValues is each family's first series: a histogram's sample count, a gauge's value.
func gatheredValues(reg *prometheus.Registry) map[string]float64 {
	families, _ := reg.Gather()
	values := map[string]float64{}
	for _, f := range families {
		m := f.GetMetric()[0]
		switch {
		case m.GetHistogram() != nil:
			values[f.GetName()] = float64(m.GetHistogram().GetSampleCount())
		case m.GetGauge() != nil:
			values[f.GetName()] = m.GetGauge().GetValue()
		}
	}
	return values
}
