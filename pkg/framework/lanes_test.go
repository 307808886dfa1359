package framework

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func k(name string) Key {
	return Key{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "a", Name: name}
}

// TestLanes: a marked key goes to the front when pushed or, already queued, when touched; its old
// place is skipped; Len counts every key once.
func TestLanes(t *testing.T) {
	l := newLanes()
	for _, n := range []string{"a", "b", "c"} {
		l.Push(k(n))
	}
	l.Touch(k("b")) // not marked: stays
	l.markFirst(k("c"))
	l.Touch(k("c"))
	l.markFirst(k("c"))
	l.Touch(k("c")) // already in front
	l.markFirst(k("d"))
	l.Push(k("d"))
	if l.Len() != 4 {
		t.Fatalf("Len %d, want 4", l.Len())
	}
	var got []string
	for l.Len() > 0 {
		got = append(got, l.Pop().Name)
	}
	if diff := cmp.Diff([]string{"c", "d", "a", "b"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	// c comes again after its move: the place it left is skipped, the new one is not.
	l.Push(k("c"))
	if l.Len() != 1 || l.Pop().Name != "c" || l.Len() != 0 || len(l.back) != 0 || l.stale != 0 {
		t.Errorf("after a move: len %d, back %v, stale %d", l.Len(), l.back, l.stale)
	}
}

// TestAddWaited: through the workqueue, a key added as waited is processed before those queued earlier.
func TestAddWaited(t *testing.T) {
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	q := NewQueue("lanes", nil, func(_ context.Context, key Key) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, key.Name)
		if len(got) == 4 {
			close(done)
		}
		return 0, nil
	})
	q.Add(k("a"))
	q.Add(k("b"))
	q.Add(k("c"))
	q.AddWaited(k("c"))
	q.AddWaited(k("d"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx, 1)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("keys not processed")
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"c", "d", "a", "b"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
