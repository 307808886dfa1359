package framework

import (
	"context"
	"sort"
	"sync"

	"k8s.io/klog/v2"
)

// ConflictLog reports each conflict with an object the syncer does not own once at level 0 (an
// error a user must see), then only at the given verbosity while it lasts.
type ConflictLog struct {
	Verbosity klog.Level

	mu   sync.Mutex
	seen map[Key]string
}

// Report logs the conflict of a key; the same reason again is logged at Verbosity only. It tells
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
		logger.V(int(l.Verbosity)).Info(reason)
	}
	return first
}

// Count returns how many keys are in conflict, and up to limit of them, sorted.
func (l *ConflictLog) Count(limit int) (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.seen))
	for key := range l.seen {
		out = append(out, key.String()+": in conflict with an object the syncer does not own")
	}
	sort.Strings(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return len(l.seen), out
}

// Clear forgets a key's conflict.
func (l *ConflictLog) Clear(key Key) {
	l.mu.Lock()
	delete(l.seen, key)
	l.mu.Unlock()
}
