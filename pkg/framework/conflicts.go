package framework

import (
	"context"
	"sort"
	"sync"

	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/problem"
)

// ConflictLog remembers the keys blocked by an object the syncer does not own. Each is reported once
// at level 0 (an error a user must see), then only at logging.Skip while it lasts.
type ConflictLog struct {
	mu   sync.Mutex
	seen map[Key]string
	// Describe, if set, says what a key's logged reason is as a problem (by default, a conflict with
	// an object the syncer does not own): a log of other refusals reads as they are.
	Describe func(reason string) (problem.Kind, string)
}

// Report logs the conflict of a key; the same reason again is logged at logging.Skip only. It tells
// whether this was the first report of that reason.
func (l *ConflictLog) Report(ctx context.Context, key Key, reason string) bool {
	l.mu.Lock()
	if l.seen == nil {
		l.seen = map[Key]string{}
	}
	first := l.seen[key] != reason
	l.seen[key] = reason
	l.mu.Unlock()
	logger := klog.FromContext(ctx)
	if first {
		logger.Error(nil, reason)
	} else {
		logger.V(logging.Skip).Info(reason)
	}
	return first
}

// Clear forgets a key's conflict.
func (l *ConflictLog) Clear(key Key) {
	l.mu.Lock()
	delete(l.seen, key)
	l.mu.Unlock()
}

// Prune forgets the conflicts of keys for which keep is false: keys whose resource or object left
// the selection are never processed again, so nothing else would clear them.
func (l *ConflictLog) Prune(keep func(Key) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	PruneKeys(l.seen, keep)
}

// Problems returns how many keys are in conflict, and up to limit of them as problems, sorted.
func (l *ConflictLog) Problems(limit int) (int, []problem.Problem) {
	l.mu.Lock()
	keys := make([]Key, 0, len(l.seen))
	reasons := make(map[Key]string, len(l.seen))
	for k, r := range l.seen {
		keys = append(keys, k)
		reasons[k] = r
	}
	l.mu.Unlock()
	return len(keys), keyProblems(keys, limit, func(k Key) (problem.Kind, string) {
		if l.Describe != nil {
			return l.Describe(reasons[k])
		}
		return problem.Conflict, "in conflict with an object the syncer does not own"
	})
}

// keyProblems sorts keys and turns up to limit of them into problems.
func keyProblems(keys []Key, limit int, what func(Key) (problem.Kind, string)) []problem.Problem {
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	if len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]problem.Problem, len(keys))
	for i, k := range keys {
		kind, reason := what(k)
		out[i] = problem.Problem{Kind: kind, Resource: k.GVR.GroupResource(), Object: k.ObjectName(), Reason: reason}
	}
	return out
}
