package informermanager

import (
	"fmt"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// notification is one event for a handler.
type notification struct {
	kind     eventKind
	old, obj interface{}
	// initial: an object of the first list (or given to a handler added late).
	initial bool
}

type eventKind int

const (
	added eventKind = iota
	updated
	deleted
)

// listener calls one handler with an informer's events, in order, from a goroutine of its own: the
// store is never held up by a handler, and a handler sees one event at a time.
type listener struct {
	handler cache.ResourceEventHandler
	mu      sync.Mutex
	wake    *sync.Cond
	pending []notification
	stopped bool
	done    chan struct{}
}

func newListener(h cache.ResourceEventHandler) *listener {
	l := &listener{handler: h, done: make(chan struct{})}
	l.wake = sync.NewCond(&l.mu)
	go l.run()
	return l
}

// push queues a notification; nothing after stop.
func (l *listener) push(n notification) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.pending = append(l.pending, n)
		l.wake.Signal()
	}
}

// run calls the handler with the queued notifications, a batch at a time: the queue is taken whole,
// so that what a burst queued is given back once it is handled.
func (l *listener) run() {
	defer close(l.done)
	for {
		l.mu.Lock()
		for len(l.pending) == 0 && !l.stopped {
			l.wake.Wait()
		}
		if l.stopped {
			l.mu.Unlock()
			return
		}
		batch := l.pending
		l.pending = nil
		l.mu.Unlock()
		for _, n := range batch {
			switch n.kind {
			case added:
				l.handler.OnAdd(n.obj, n.initial)
			case updated:
				l.handler.OnUpdate(n.old, n.obj)
			case deleted:
				l.handler.OnDelete(n.obj)
			}
			if l.isStopped() {
				return
			}
		}
	}
}

func (l *listener) isStopped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopped
}

// stop drops what is queued and waits until the handler is called no more.
func (l *listener) stop() {
	l.mu.Lock()
	l.stopped = true
	l.pending = nil
	l.wake.Signal()
	l.mu.Unlock()
	<-l.done
}

func errNotOurs(r interface{}) error {
	return fmt.Errorf("registration %T was not made by this cache", r)
}

// objectKey is the store key of namespace/name.
func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
