package downsync

import (
	"sync"

	"github.com/kubestellar/syncer/pkg/framework"
)

// refusals are the upstream objects whose latest generation the edge refuses for good (invalid,
// forbidden, immutable and not to be recreated): status return says so upstream (Refused).
type refusals struct {
	mu sync.Mutex
	m  map[framework.Key]refusal
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
}

// forget drops key's refusal (its object was written, or is no longer wanted); it tells whether
// there was one.
func (r *refusals) forget(key framework.Key) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, had := r.m[key]
	delete(r.m, key)
	if len(r.m) == 0 {
		r.m = nil // a map never shrinks: let a burst of refusals go
	}
	return had
}

// prune forgets the refusals of keys for which keep is false (their resource left the selection, or
// is read at another version now).
func (r *refusals) prune(keep func(framework.Key) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.m {
		if !keep(k) {
			delete(r.m, k)
		}
	}
	if len(r.m) == 0 {
		r.m = nil
	}
}

// Refused tells whether the edge refuses the upstream object of key for good: which of its
// generations, and the edge's reason.
func (c *Controller) Refused(key framework.Key) (generation int64, message string, ok bool) {
	c.refusals.mu.Lock()
	defer c.refusals.mu.Unlock()
	r, ok := c.refusals.m[key]
	return r.generation, r.message, ok
}
