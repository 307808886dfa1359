package informermanager

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// EarlyHandlers are Handlers that also want a resource's objects as its initial list streams in,
// before the informer has synced: client-go's reflector keeps a streamed list (watch-list, served by
// kube-apiserver from v1.35 on by default) aside and hands it to the informer only once it is
// complete, so with 10,000 objects nothing would reach a handler for seconds.
type EarlyHandlers interface {
	// Early returns the function to call with each object of gvr's initial list as it arrives, or
	// nil when the resource's objects are not wanted early. The function must not keep obj, nor
	// change it (the informer stores it next): it copies what it keeps.
	Early(gvr schema.GroupVersionResource) func(obj *unstructured.Unstructured)
	// EarlyDone tells that gvr's informer has synced or stopped: what Early kept may go.
	EarlyDone(gvr schema.GroupVersionResource)
}

// withEarly passes the objects of l's initial watch-list stream to early before the informer sees
// them. Lists (a server or client without watch-list) and later watches pass through unchanged.
func withEarly(l Lister, early func(*unstructured.Unstructured)) Lister {
	if early == nil {
		return l
	}
	return earlyLister{Lister: l, early: early}
}

type earlyLister struct {
	Lister
	early func(*unstructured.Unstructured)
}

func (l earlyLister) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := l.Lister.Watch(ctx, opts)
	if err != nil || opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
		return w, err
	}
	ew := &earlyWatch{in: w, out: make(chan watch.Event), done: make(chan struct{}), early: l.early}
	go ew.loop()
	return ew, nil
}

// earlyWatch passes on every event of in, and the objects of the initial events to early until the
// bookmark that ends them. Unlike watch.Filter, it never blocks on a consumer that has stopped.
type earlyWatch struct {
	in       watch.Interface
	out      chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
	early    func(*unstructured.Unstructured)
}

func (w *earlyWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *earlyWatch) Stop() {
	w.stopOnce.Do(func() { close(w.done) })
	w.in.Stop()
}

func (w *earlyWatch) loop() {
	defer close(w.out)
	initial := true
	for e := range w.in.ResultChan() {
		if initial {
			switch e.Type {
			case watch.Added:
				if u, ok := e.Object.(*unstructured.Unstructured); ok {
					w.early(u)
				}
			case watch.Bookmark:
				// The bookmark annotated k8s.io/initial-events-end closes the initial list.
				if m, ok := e.Object.(metav1.Object); ok && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
					initial = false
				}
			}
		}
		select {
		case w.out <- e:
		case <-w.done:
			return
		}
	}
}
