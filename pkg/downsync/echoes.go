package downsync

import (
	"sync"

	"github.com/kubestellar/syncer/pkg/framework"
)

// echoes are the edge objects downsync has just written, by key, with the resourceVersion the
// write returned. The downstream watch brings each write back as an event; an event carrying that
// very resourceVersion is the object as downsync wrote it, which holds nothing to act on (anything
// changed upstream meanwhile brings the key back through the upstream event), so it is not queued.
// Any other event of the key (a later or earlier version, a deletion) forgets the entry and is
// queued as usual. A write the edge changed on the way (a mutating webhook) is not recorded: its
// event is looked at, as any other. In an initial sync this halves the work per object.
//
// An entry stands only while the write that made it is the key's last decision: processing the key
// again forgets it first (forget), before the caches are read. A later decision may have been taken
// on a cache that did not hold the write yet (the edge's informer re-listing after an outage: the
// object created, then deleted upstream, found absent at the edge, "nothing to delete"); the event
// that brings the write into the cache must then be looked at, not skipped.
type echoes struct {
	mu   sync.Mutex
	rvs  map[framework.Key]string
	peak framework.Peak
}

// wrote records that downsync wrote key's object, which is now at resourceVersion rv.
func (e *echoes) wrote(key framework.Key, rv string) {
	if rv == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rvs == nil {
		e.rvs = map[framework.Key]string{}
	}
	e.rvs[key] = rv
	e.peak.Saw(len(e.rvs))
}

// forget drops key's entry: the key is being processed again, and its next event is not an echo
// unless that processing writes again.
func (e *echoes) forget(key framework.Key) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.rvs, key)
}

// echo tells whether an event of key's edge object at resourceVersion rv is downsync's own write
// coming back; either way the entry is forgotten.
func (e *echoes) echo(key framework.Key, rv string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	want, ok := e.rvs[key]
	if !ok {
		return false
	}
	delete(e.rvs, key)
	if e.peak.Drained(len(e.rvs)) {
		// An initial sync's peak is given back once mostly drained (a write whose echo never came, a
		// no-op apply, stays until the key's next event).
		e.rvs = framework.Remade(e.rvs)
	}
	return want == rv
}
