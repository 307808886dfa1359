package informermanager

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// TestStreamedListStalls: a streamed list that brings no object for a while, or a plain bookmark
// instead of the one that ends the initial events (a proxy dropping it), ends with an error (which
// the reflector answers with a LIST); one that ends, and a plain watch that is quiet, go on.
func TestStreamedListStalls(t *testing.T) {
	defer func(d time.Duration) { streamStall = d }(streamStall)
	streamStall = 50 * time.Millisecond
	cm := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "a", "resourceVersion": "5"}}}
	bookmark := func(end bool) *unstructured.Unstructured {
		b := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"resourceVersion": "6"}}}
		if end {
			b.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
		return b
	}
	next := func(w *observedWatch) (watch.Event, bool) {
		select {
		case e, ok := <-w.ResultChan():
			return e, ok
		case <-time.After(2 * time.Second):
			t.Fatal("no event")
			return watch.Event{}, false
		}
	}
	expired := func(e watch.Event) bool {
		s, ok := e.Object.(*metav1.Status)
		return e.Type == watch.Error && ok && apierrors.IsTimeout(apierrors.FromObject(s))
	}
	for _, c := range []struct {
		name  string
		send  []watch.Event
		stall bool
	}{
		{"no object for a while", []watch.Event{{Type: watch.Added, Object: cm}}, true},
		{"a plain bookmark", []watch.Event{{Type: watch.Added, Object: cm}, {Type: watch.Bookmark, Object: bookmark(false)}}, true},
		{"ended", []watch.Event{{Type: watch.Added, Object: cm}, {Type: watch.Bookmark, Object: bookmark(true)}}, false},
	} {
		in := watch.NewFake()
		w := newObservedWatch(klog.Background(), in, &Health{}, true, nil)
		go func() {
			for _, e := range c.send {
				in.Action(e.Type, e.Object)
			}
		}()
		for range c.send[:len(c.send)-1] {
			next(w)
		}
		last, _ := next(w)
		if c.stall && !expired(last) {
			if e, _ := next(w); !expired(e) {
				t.Errorf("%s: no error event; last %v then %v", c.name, last.Type, e.Type)
			}
		}
		if !c.stall {
			select {
			case e := <-w.ResultChan():
				t.Errorf("%s: an event after the list ended and nothing was sent: %v", c.name, e.Type)
			case <-time.After(3 * streamStall):
			}
		}
		w.Stop()
	}
	// A plain watch, quiet for longer: never taken for stalled.
	in := watch.NewFake()
	w := newObservedWatch(klog.Background(), in, &Health{}, false, nil)
	select {
	case e := <-w.ResultChan():
		t.Errorf("a quiet watch: %v", e.Type)
	case <-time.After(3 * streamStall):
	}
	w.Stop()
}
