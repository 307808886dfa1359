package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

var cm = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestQueueRetriesAndRemembers: a failing key is retried, listed among the failures until it
// succeeds, and its latency is measured from the first Add, across the retries.
func TestQueueRetriesAndRemembers(t *testing.T) {
	var mu sync.Mutex
	attempts := map[string]int{}
	latencies := map[string]time.Duration{}
	done := make(chan struct{})
	q := NewQueue("test", nil, func(ctx context.Context, key Key) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		attempts[key.Name]++
		if key.Name == "bad" {
			return 0, errors.New("refused")
		}
		if key.Name == "flaky" && attempts[key.Name] < 3 {
			return 0, errors.New("not yet")
		}
		if d, ok := ObservedSince(ctx); ok {
			latencies[key.Name] = d
		}
		if key.Name == "flaky" {
			close(done)
		}
		return 0, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx, 2)
	q.Add(Key{GVR: cm, Namespace: "a", Name: "good"})
	q.Add(Key{GVR: cm, Namespace: "a", Name: "bad"})
	q.Add(Key{GVR: cm, Namespace: "a", Name: "flaky"})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("flaky key not retried to success")
	}
	// The flaky key's success is recorded right after its process returns.
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		n, _ := q.Failures(5)
		return n == 1, nil
	})
	n, examples := q.Failures(5)
	if err != nil || n != 1 || len(examples) != 1 || !strings.Contains(examples[0].String(), "configmaps a/bad: refused") {
		t.Errorf("failures = %d %v, want only a/bad", n, examples)
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts["good"] != 1 || attempts["flaky"] != 3 || attempts["bad"] < 2 {
		t.Errorf("attempts %v", attempts)
	}
	// The flaky key's latency spans its two failed attempts' backoff (20ms, 40ms).
	if latencies["flaky"] < 50*time.Millisecond {
		t.Errorf("latency of the flaky key %v does not include its retries", latencies["flaky"])
	}
	if _, ok := latencies["good"]; !ok {
		t.Error("no latency for a key that was added")
	}
}

func TestFailuresAreBounded(t *testing.T) {
	q := NewQueue("bounded", nil, func(context.Context, Key) (time.Duration, error) {
		return 0, errors.New(strings.Repeat("x", 1000))
	})
	for i := 0; i < 1000; i++ {
		q.queue.Add(Key{GVR: cm, Namespace: "a", Name: fmt.Sprintf("o%04d", i)})
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	for i := 0; i < 1000; i++ {
		q.processNext(ctx)
	}
	n, examples := q.Failures(5)
	if n != 1000 || len(examples) != 5 {
		t.Fatalf("failures %d, examples %d", n, len(examples))
	}
	for _, e := range examples {
		if len(e.String()) > 400 {
			t.Errorf("example of %d characters", len(e.String()))
		}
	}
	q.ShutDown()
}

func TestKeyPrintsAsKubectl(t *testing.T) {
	for _, tc := range []struct {
		key  Key
		want string
	}{
		{Key{GVR: cm, Namespace: "demo", Name: "greeting"}, "configmaps demo/greeting"},
		{Key{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "demo", Name: "web"}, "deployments.apps demo/web"},
		{Key{GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Name: "demo"}, "namespaces demo"},
	} {
		if got := tc.key.String(); got != tc.want {
			t.Errorf("%#v prints %q, want %q", tc.key, got, tc.want)
		}
	}
}

// logOf runs process once per key added, with a logger that records to a buffer, and returns what
// was logged at level 0 (errors included) and at every level.
func logOf(t *testing.T, process ProcessFunc, ctxOf func(context.Context) context.Context, keys ...Key) (errors string) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(5)))
	ctx := ctxOf(klog.NewContext(context.Background(), logger))
	q := NewQueue("test", nil, process)
	for _, k := range keys {
		q.queue.Add(k)
		q.processNext(ctx)
	}
	q.ShutDown()
	var b strings.Builder
	for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if e.Type == ktesting.LogError {
			b.WriteString(e.Message + "\n")
		}
	}
	return b.String()
}

// TestShutdownIsNotAFailure is the regression test of a request cancelled by shutdown being logged at
// error level as "Sync failed; will retry".
func TestShutdownIsNotAFailure(t *testing.T) {
	cancelled := func(ctx context.Context) context.Context {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		return ctx
	}
	process := func(ctx context.Context, _ Key) (time.Duration, error) {
		return 0, fmt.Errorf("applying downstream: %w", ctx.Err())
	}
	if errs := logOf(t, process, cancelled, Key{GVR: cm, Name: "x"}); errs != "" {
		t.Errorf("a shutdown was logged as an error:\n%s", errs)
	}
	// A cancellation that is not the shutdown's is still a failure.
	live := func(ctx context.Context) context.Context { return ctx }
	canceledElsewhere := func(context.Context, Key) (time.Duration, error) { return 0, context.Canceled }
	if errs := logOf(t, canceledElsewhere, live, Key{GVR: cm, Name: "x"}); !strings.Contains(errs, "Sync failed") {
		t.Errorf("a failure while running was not logged: %q", errs)
	}
}

// TestRefusedWriteLoggedOnce is the regression test of a write refused for good logged at error level
// on every retry: once, then quietly while it is the same refusal; a different refusal is new.
func TestRefusedWriteLoggedOnce(t *testing.T) {
	refusal := "denied by the edge's policy"
	process := func(context.Context, Key) (time.Duration, error) {
		return 0, apierrors.NewForbidden(cm.GroupResource(), "x", errors.New(refusal))
	}
	live := func(ctx context.Context) context.Context { return ctx }
	k := Key{GVR: cm, Namespace: "a", Name: "x"}
	if errs := logOf(t, process, live, k, k, k, k); strings.Count(errs, "Sync failed") != 1 {
		t.Errorf("refused write logged %d times at error level, want once:\n%s", strings.Count(errs, "Sync failed"), errs)
	}
	transient := func(context.Context, Key) (time.Duration, error) { return 0, errors.New("connection refused") }
	if errs := logOf(t, transient, live, k, k); strings.Count(errs, "Sync failed") != 2 {
		t.Errorf("transient failures logged %d times at error level, want every time", strings.Count(errs, "Sync failed"))
	}
}

// TestObservedMadeAnewAfterABacklog: once a backlog larger than shrinkAfter is drained, the map of
// observed keys is made anew (a Go map keeps its size when emptied); latency is still measured.
func TestObservedMadeAnewAfterABacklog(t *testing.T) {
	var measured, seen int
	q := NewQueue("test", nil, func(ctx context.Context, key Key) (time.Duration, error) {
		seen++
		if _, ok := ObservedSince(ctx); ok {
			measured++
		}
		return 0, nil
	})
	n := shrinkAfter + 10
	for i := range n {
		q.Add(Key{GVR: cm, Namespace: "a", Name: fmt.Sprint(i)})
	}
	if q.peak.n != n {
		t.Fatalf("peak %d, want %d", q.peak.n, n)
	}
	for seen < n {
		q.processNext(context.Background())
	}
	if measured != n {
		t.Errorf("latency measured for %d keys, want %d", measured, n)
	}
	if q.peak.n > n/8 || len(q.observed) != 0 {
		t.Errorf("after the backlog: peak %v, %d observed; want a new, empty map", q.peak, len(q.observed))
	}
}

// TestPending: a key is pending from its Add through its processing (a request to a hung apiserver
// may take long), and while it fails; not once processed successfully.
func TestPending(t *testing.T) {
	key := Key{GVR: cm, Namespace: "a", Name: "x"}
	inside, release := make(chan struct{}), make(chan struct{})
	fail := true
	q := NewQueue("test", nil, func(context.Context, Key) (time.Duration, error) {
		inside <- struct{}{}
		<-release
		if fail {
			fail = false
			return 0, errors.New("refused")
		}
		return 0, nil
	})
	if q.Pending(key) {
		t.Fatal("pending before any Add")
	}
	q.Add(key)
	if !q.Pending(key) {
		t.Fatal("not pending once added")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx, 1)
	<-inside
	if !q.Pending(key) {
		t.Error("not pending while processed")
	}
	release <- struct{}{}
	<-inside // the retry
	if !q.Pending(key) {
		t.Error("not pending while failing")
	}
	release <- struct{}{}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return !q.Pending(key), nil
	}); err != nil {
		t.Error("still pending once processed successfully")
	}
}
