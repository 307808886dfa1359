package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
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
	time.Sleep(50 * time.Millisecond)
	n, examples := q.Failures(5)
	if n != 1 || len(examples) != 1 || !strings.Contains(examples[0], "a/bad: refused") {
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
	for i := 0; i < 1000; i++ {
		q.processNext(context.Background())
	}
	n, examples := q.Failures(5)
	if n != 1000 || len(examples) != 5 {
		t.Fatalf("failures %d, examples %d", n, len(examples))
	}
	for _, e := range examples {
		if len(e) > 400 {
			t.Errorf("example of %d characters", len(e))
		}
	}
	q.ShutDown()
}
