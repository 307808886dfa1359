package informermanager

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/problem"
)

// Problems are the informers whose list or watch the apiserver refuses now (forbidden,
// unauthorized, not found): the syncer cannot see those objects, whatever else works.
func (m *Manager) Problems() []problem.Problem {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []problem.Problem
	for gvr, e := range m.informers {
		if err := e.deniedNow(); err != nil {
			out = append(out, problem.Problem{Kind: problem.AccessDenied, Resource: gvr.GroupResource(),
				Reason: fmt.Sprintf("cannot list and watch %s %s (%s): %v", m.side, gvr.GroupResource(), gvr.Version, err)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource.String() < out[j].Resource.String() })
	return out
}

// Reconnecting counts the running informers whose list or watch dropped with an error and is not
// established again yet: their caches may be behind.
func (m *Manager) Reconnecting() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.informers {
		if e.isBroken() {
			n++
		}
	}
	return n
}

func (e *entry) isBroken() bool {
	if e.shared != nil {
		return e.shared.Broken()
	}
	for _, p := range e.parts {
		if p.health.Broken() {
			return true
		}
	}
	return false
}

// Counts are the running informers (one per resource) and those synced.
func (m *Manager) Counts() (running, synced int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.informers {
		running++
		if !e.held && e.cache.Synced("") {
			synced++
		}
	}
	return running, synced
}

// Running lists the resources with a running informer.
func (m *Manager) Running() []schema.GroupVersionResource {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]schema.GroupVersionResource, 0, len(m.informers))
	for gvr := range m.informers {
		out = append(out, gvr)
	}
	return out
}
