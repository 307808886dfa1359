package report

import (
	"encoding/json"
	"net/http"
	"sort"
	"sync"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/framework"
)

// The actions an Entry reports.
const (
	Create   = "create"
	Update   = "update"
	Delete   = "delete"
	Conflict = "conflict" // an object of that name at the edge that the syncer may not take
	Refused  = "refused"  // the edge's dry-run refuses the write
)

// Entry is what the syncer would do with one object (the form SyncerConfig status holds).
type Entry = edgev1.ReportedObject

// Summary is a report cut to size: the counts of each action and the first objects.
type Summary = edgev1.SyncReport

// Store is the report: what the syncer would do, by key. Safe for concurrent use; the zero value is
// not usable (NewStore).
type Store struct {
	mu      sync.Mutex
	entries map[framework.Key]Entry
}

// NewStore returns an empty report.
func NewStore() *Store { return &Store{entries: map[framework.Key]Entry{}} }

// Set records what the syncer would do with key; it tells whether that changed.
func (s *Store) Set(key framework.Key, e Entry) bool {
	e.Object = key.String()
	data, _ := json.Marshal(e)
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.entries[key]
	if ok {
		if before, _ := json.Marshal(old); string(before) == string(data) {
			return false
		}
	}
	s.entries[key] = e
	return true
}

// Forget records that the syncer would do nothing with key (in step, or no longer selected).
func (s *Store) Forget(key framework.Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.entries[key]
	delete(s.entries, key)
	return ok
}

// Prune forgets the keys that are no longer relevant (their resource left the selection).
func (s *Store) Prune(relevant func(framework.Key) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	framework.PruneKeys(s.entries, relevant)
}

// Entries is the whole report, ordered by object.
func (s *Store) Entries() []Entry {
	s.mu.Lock()
	out := make([]Entry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Object < out[j].Object })
	return out
}

// Summary counts the actions and keeps the first objects, at most limit, each with at most
// maxChanges changes.
func (s *Store) Summary(limit, maxChanges int) Summary {
	var sum Summary
	for _, e := range s.Entries() {
		switch e.Action {
		case Create:
			sum.Creates++
		case Update:
			sum.Updates++
		case Delete:
			sum.Deletes++
		case Conflict:
			sum.Conflicts++
		case Refused:
			sum.Refused++
		}
		if len(sum.Objects) == limit {
			sum.Omitted++
			continue
		}
		if len(e.Changes) > maxChanges {
			e.Changes = e.Changes[:maxChanges]
		}
		sum.Objects = append(sum.Objects, e)
	}
	return sum
}

// ServeHTTP serves the whole report as JSON.
func (s *Store) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s.Entries())
}
