package downsync

import (
	"maps"
	"sync"

	"github.com/kubestellar/syncer/pkg/framework"
)

// refusals are the upstream objects whose latest generation the edge refuses for good (invalid,
// forbidden, immutable and not to be recreated): status return says so upstream (Refused).
type refusals struct {
	mu   sync.Mutex
	m    map[framework.Key]refusal
	peak framework.Peak // of m: a burst of refusals is given back once it is over
}

type refusal struct {
	generation int64
	message    string
}

// set records that the edge refuses generation of key's upstream object, and why.
func (r *refusals) set(key framework.Key, generation int64, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[framework.Key]refusal{}
	}
	r.m[key] = refusal{generation: generation, message: message}
	r.peak.Saw(len(r.m))
}

// get is key's refusal, if there is one.
func (r *refusals) get(key framework.Key) (refusal, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[key]
	return v, ok
}

// forget drops key's refusal (its object was written, or is no longer wanted); it tells whether
// there was one.
func (r *refusals) forget(key framework.Key) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, had := r.m[key]
	delete(r.m, key)
	r.shrink()
	return had
}

// prune forgets the refusals of keys for which keep is false (their resource left the selection, or
// is read at another version now).
func (r *refusals) prune(keep func(framework.Key) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	maps.DeleteFunc(r.m, func(k framework.Key, _ refusal) bool { return !keep(k) })
	r.shrink()
}

// shrink makes the map anew once mostly drained (framework.Peak); r.mu is held.
func (r *refusals) shrink() {
	if r.peak.Drained(len(r.m)) {
		r.m = framework.Remade(r.m)
	}
}

// Refused tells whether the edge refuses the upstream object of key for good: which of its
// generations, and the edge's reason.
func (c *Controller) Refused(key framework.Key) (generation int64, message string, ok bool) {
	r, ok := c.refusals.get(key)
	return r.generation, r.message, ok
}
