package framework

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/metrics"
)

// fakeWrite answers each step as told and records the steps taken.
type fakeWrite struct {
	blocked  *Blocked
	creating bool
	skip     string
	outcome  Outcome
	steps    []string
}

func (f *fakeWrite) Blocked(context.Context) *Blocked {
	f.steps = append(f.steps, "blocked")
	return f.blocked
}
func (f *fakeWrite) Creating() bool  { return f.creating }
func (f *fakeWrite) Skip() string    { f.steps = append(f.steps, "skip"); return f.skip }
func (f *fakeWrite) Content() string { return "content" }
func (f *fakeWrite) Before(context.Context) *unstructured.Unstructured {
	f.steps = append(f.steps, "before")
	return nil
}
func (f *fakeWrite) Do(context.Context, *unstructured.Unstructured) Outcome {
	f.steps = append(f.steps, "do")
	return f.outcome
}

// TestWriteSteps: Writes.Do takes a write through the shared steps in order and stops where a step
// says so: an object in the way is a conflict (reported, looked at again later), an up-to-date
// destination needs nothing, a key backing off a loop waits, a write that would complete a loop
// reads the destination first, and a write is recorded (counted, its conflict forgotten) unless it
// failed or wrote nothing.
func TestWriteSteps(t *testing.T) {
	key := Key{GVR: cm, Namespace: "a", Name: "x"}
	updated := Outcome{Result: metrics.Updated, Msg: "Updated"}
	for _, tc := range []struct {
		name      string
		op        *fakeWrite
		loops     int // writes of the same content before this one
		steps     []string
		after     time.Duration
		err       bool
		written   float64 // writes_total{result=updated}
		conflicts int     // keys in conflict afterwards
	}{
		{name: "blocked", op: &fakeWrite{blocked: &Blocked{LogMsg: "in the way", Recheck: time.Minute}}, steps: []string{"blocked"}, after: time.Minute, conflicts: 1},
		{name: "up to date", op: &fakeWrite{skip: "up to date"}, steps: []string{"blocked", "skip"}},
		{name: "written", op: &fakeWrite{outcome: updated}, steps: []string{"blocked", "skip", "do"}, written: 1},
		{name: "failed", op: &fakeWrite{outcome: Outcome{Err: errors.New("refused")}}, steps: []string{"blocked", "skip", "do"}, err: true},
		{name: "nothing written, looked at later", op: &fakeWrite{outcome: Outcome{Requeue: time.Second}}, steps: []string{"blocked", "skip", "do"}, after: time.Second},
		{name: "the same content again, not a loop yet", op: &fakeWrite{outcome: updated}, loops: LoopWrites - 2, steps: []string{"blocked", "skip", "do"}, written: 1},
		{name: "would complete a loop: read first, then back off", op: &fakeWrite{outcome: updated}, loops: LoopWrites - 1, steps: []string{"blocked", "skip", "before", "do"}, written: 1, after: LoopBackoff},
		{name: "backing off", op: &fakeWrite{outcome: updated}, loops: LoopWrites, steps: []string{"blocked", "skip"}, after: LoopBackoff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New(prometheus.NewRegistry())
			w := NewWrites(metrics.Downsync, "kubestellar-syncer", m, nil)
			for i := 0; i < tc.loops; i++ {
				w.Wrote(context.Background(), key, "content", false, nil, nil)
			}
			after, err := w.Do(context.Background(), key, tc.op)
			if diff := cmp.Diff(tc.steps, tc.op.steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if (err != nil) != tc.err {
				t.Errorf("err = %v", err)
			}
			if tc.after >= LoopBackoff {
				if after <= 0 || after > tc.after {
					t.Errorf("looked at again after %v, want within %v", after, tc.after)
				}
			} else if after != tc.after {
				t.Errorf("looked at again after %v, want %v", after, tc.after)
			}
			if got := testutil.ToFloat64(m.Writes.WithLabelValues(metrics.Downsync, "configmaps", metrics.Updated)); got != tc.written {
				t.Errorf("writes_total{result=updated} = %v, want %v", got, tc.written)
			}
			if n, _ := w.Conflicts().Problems(1); n != tc.conflicts {
				t.Errorf("%d keys in conflict, want %d", n, tc.conflicts)
			}
		})
	}
}

// TestCreateKeepsConflict: a conflict stands through a create that may still find the name taken,
// and goes once a write succeeds; for an update it goes once the way is clear.
func TestCreateKeepsConflict(t *testing.T) {
	key := Key{GVR: cm, Namespace: "a", Name: "x"}
	w := NewWrites(metrics.Downsync, "kubestellar-syncer", metrics.New(prometheus.NewRegistry()), nil)
	ctx := context.Background()
	if _, err := w.Do(ctx, key, &fakeWrite{blocked: &Blocked{LogMsg: "in the way"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Do(ctx, key, &fakeWrite{creating: true, outcome: Outcome{Err: errors.New("taken")}}); err == nil {
		t.Fatal("want the create's error")
	}
	if n, _ := w.Conflicts().Problems(1); n != 1 {
		t.Fatal("a failed create cleared the conflict")
	}
	if _, err := w.Do(ctx, key, &fakeWrite{creating: true, outcome: Outcome{Result: metrics.Created}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := w.Conflicts().Problems(1); n != 0 {
		t.Fatal("a successful create kept the conflict")
	}
	_, _ = w.Do(ctx, key, &fakeWrite{blocked: &Blocked{LogMsg: "in the way"}})
	_, _ = w.Do(ctx, key, &fakeWrite{skip: "up to date"})
	if n, _ := w.Conflicts().Problems(1); n != 0 {
		t.Fatal("an update whose way is clear kept the conflict")
	}
}
