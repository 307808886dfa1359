package informermanager

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Lister lists and watches one resource (a dynamic client's resource, or kcp-dev/client-go's
// cluster-wide one).
type Lister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Health is what the lists and watches of one informer tell of it: whether the apiserver refuses
// them, whether the watch dropped, and whether a re-list is under way.
type Health struct {
	mu sync.Mutex
	// denied is the last list or watch the apiserver refused (forbidden, unauthorized, not found); it
	// holds until a list or watch succeeds again.
	denied error
	// broken is set when the list or watch dropped with an error, until one is established again:
	// meanwhile the cache may be behind the apiserver.
	broken bool
	// listing is set while a list (or a watch that begins with the current state) is under way,
	// until its objects have replaced the cache's: the first one, or a re-list after a dropped watch,
	// which client-go's HasSynced does not tell apart from a cache that is up to date.
	listing bool
}

// observe remembers a list or watch the apiserver refuses until one succeeds.
func (h *Health) observe(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		h.denied, h.broken = nil, false
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err):
		h.denied, h.broken = err, true
	default:
		h.broken = true
	}
}

// dropped records a watch that ended with an error.
func (h *Health) dropped() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.broken = true
}

// listStarting records that a list begins: the cache is behind until it is replaced.
func (h *Health) listStarting() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listing = true
}

// replaced records that a list's objects replaced the cache's.
func (h *Health) replaced() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listing = false
}

// current tells whether the cache follows the apiserver: no re-list under way, no dropped watch.
func (h *Health) current() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.listing && !h.broken
}

// Denied is the refusal that holds: no list or watch has succeeded since.
func (h *Health) Denied() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.denied
}

// Broken tells whether the list or watch dropped with an error and is not established again.
func (h *Health) Broken() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.broken
}

// listWatch lists and watches l's objects with spec's selectors, and tells h what happens: the
// lists that begin (a first page, or a watch that starts with the current state), the requests the
// apiserver refuses, the watches that end with an error. watchList says whether the client may
// stream a list as a watch (a fake cannot; nor may a store keyed by logical cluster, as client-go's
// reflector keys the streamed list by namespace and name). early, if set, is given the objects of a
// streamed list as they arrive, before the reflector hands the list over whole (EarlyHandlers).
func listWatch(l Lister, spec Spec, h *Health, watchList bool, early func(*unstructured.Unstructured)) cache.ListerWatcher {
	return &observedListWatch{l: l, labels: spec.LabelSelector, fields: spec.FieldSelector, h: h, noWatchList: !watchList, early: early}
}

type observedListWatch struct {
	l              Lister
	labels, fields string
	h              *Health
	noWatchList    bool
	early          func(*unstructured.Unstructured)
}

var (
	_ cache.ListerWatcherWithContext = &observedListWatch{}
	_ cache.ListerWatcher            = &observedListWatch{}
)

func (lw *observedListWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	o.LabelSelector, o.FieldSelector = lw.labels, lw.fields
	if o.Continue == "" {
		lw.h.listStarting()
	}
	list, err := lw.l.List(ctx, o)
	lw.h.observe(err)
	return list, err
}

func (lw *observedListWatch) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.LabelSelector, o.FieldSelector = lw.labels, lw.fields
	initial := o.SendInitialEvents != nil && *o.SendInitialEvents
	if initial {
		lw.h.listStarting()
	}
	w, err := watchResuming(ctx, o, lw.l.Watch)
	lw.h.observe(err)
	if err != nil {
		return nil, err
	}
	var early func(*unstructured.Unstructured)
	if initial {
		early = lw.early
	}
	return newObservedWatch(klog.FromContext(ctx), w, lw.h, initial, early), nil
}

// List and Watch serve callers without a context (none of the syncer's).
func (lw *observedListWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), o)
}

func (lw *observedListWatch) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), o)
}

// IsWatchListSemanticsUnSupported tells client-go's reflector whether it must list rather than
// stream the list as a watch.
func (lw *observedListWatch) IsWatchListSemanticsUnSupported() bool { return lw.noWatchList }

// observedWatch passes on every event of a watch, tells h when one is an error (the watch then ends:
// a 410 Gone, say), and gives early, if set, the objects of the initial events (a streamed list)
// until the bookmark that ends them. A streamed list that stalls (stalled) ends with an error, so
// that the reflector lists instead. Unlike watch.Filter, it never blocks on a consumer that has
// stopped.
type observedWatch struct {
	in       watch.Interface
	out      chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
	h        *Health
	initial  bool
	stall    time.Duration // streamStall, when the watch began
	early    func(*unstructured.Unstructured)
	logger   klog.Logger
}

func newObservedWatch(logger klog.Logger, in watch.Interface, h *Health, initial bool, early func(*unstructured.Unstructured)) *observedWatch {
	w := &observedWatch{in: in, out: make(chan watch.Event), done: make(chan struct{}), h: h, initial: initial, stall: streamStall, early: early, logger: logger}
	go w.loop()
	return w
}

// streamStall is how long a streamed list may bring no object before it is taken for stalled.
var streamStall = 30 * time.Second

func (w *observedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *observedWatch) Stop() {
	w.stopOnce.Do(func() { close(w.done) })
	w.in.Stop()
}

func (w *observedWatch) loop() {
	defer close(w.out)
	initial := w.initial
	stall := time.NewTimer(w.stall)
	defer stall.Stop()
	if !initial {
		stall.Stop()
	}
	for {
		var e watch.Event
		select {
		case ev, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			e = ev
		case <-stall.C:
			w.stalled(fmt.Sprintf("it brought no object for %v and has not ended", w.stall))
			return
		case <-w.done:
			return
		}
		switch {
		case e.Type == watch.Error:
			w.h.dropped()
		case initial && e.Type == watch.Added:
			stall.Reset(w.stall)
			if u, ok := e.Object.(*unstructured.Unstructured); ok && w.early != nil {
				w.early(u)
			}
		case initial && e.Type == watch.Bookmark:
			// The bookmark annotated k8s.io/initial-events-end closes the initial list; any other
			// means the server sent it and something on the way dropped it.
			if m, ok := e.Object.(metav1.Object); !ok || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
				w.stalled("a bookmark came without the initial-events-end annotation: something between the syncer and the apiserver drops it")
				return
			}
			initial = false
			stall.Stop()
		}
		select {
		case w.out <- e:
		case <-w.done:
			return
		}
	}
}

// stalled ends a streamed list that will not end, with an error the reflector answers by listing
// (client-go falls back to a LIST when a streamed list fails); said at level 0, once per watch.
func (w *observedWatch) stalled(why string) {
	w.in.Stop()
	w.logger.Info("A streamed list did not end; listing instead", "reason", why)
	err := apierrors.NewTimeoutError("the streamed list did not end: "+why, 0)
	select {
	case w.out <- watch.Event{Type: watch.Error, Object: &err.ErrStatus}:
	case <-w.done:
	}
}
