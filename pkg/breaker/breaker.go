package breaker

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/kubestellar/syncer/pkg/framework"
)

// Options are the breaker's limits.
type Options struct {
	// Count and Percent: the breaker trips when the deletions due within Window would be more than
	// Count and more than Percent % of the objects the syncer owns at the edge. Count 0 disables it.
	Count, Percent int
	// Window is the sliding window (DefaultWindow when zero).
	Window time.Duration
	// Grace is how long a deletion waits after it falls due before it is made (DefaultGrace when
	// zero): long enough for the deletions a single change makes due (a config deleted, say) to be
	// counted together, so that a burst over the limit deletes nothing.
	Grace time.Duration
}

// ReleaseAnnotation, on a SyncerConfig, releases the deletions held when its value is at least the
// count held and was written since the breaker tripped (Consider).
const ReleaseAnnotation = "edge.kubestellar.io/release-deletions"

// DefaultWindow is the sliding window deletions are counted in, and DefaultGrace how long a deletion
// waits once due.
const (
	DefaultWindow = time.Minute
	DefaultGrace  = time.Second
)

// Breaker counts deletions and holds them once tripped. Its methods are safe for concurrent use.
type Breaker struct {
	opts     Options
	owned    func() int
	releases func() map[string]string
	now      func() time.Time

	mu     sync.Mutex
	recent []time.Time // the deletions let through within the window
	// pending are the deletions due and waiting out the grace period, since when.
	pending map[framework.Key]time.Time
	tripped bool
	since   time.Time
	held    map[framework.Key]struct{}
	// released are the deletions a release let go: each goes through once, uncounted.
	released map[framework.Key]struct{}
	// baseline are the release annotations as they were when the breaker tripped: only a release
	// made since counts.
	baseline map[string]string
	// refused are the release annotations said to release nothing, by config: said once each.
	refused map[string]string
}

// New returns a breaker; owned counts the objects the syncer owns at the edge now; releases reads
// the release annotations of the configs now (config name → value; see Consider); now is the clock
// (time.Now when nil).
func New(opts Options, owned func() int, releases func() map[string]string, now func() time.Time) *Breaker {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if now == nil {
		now = time.Now
	}
	return &Breaker{opts: opts, owned: owned, releases: releases, now: now, held: map[framework.Key]struct{}{},
		pending: map[framework.Key]time.Time{}, refused: map[string]string{}, released: map[framework.Key]struct{}{}}
}

// Allow tells whether the deletion of key may go ahead now: ok, or to be asked again after wait (it
// fell due less than Options.Grace ago), or held (neither: remembered, and returned by a release).
// tripped is true for the one call that tripped the breaker.
func (b *Breaker) Allow(key framework.Key) (ok bool, wait time.Duration, tripped bool) {
	if b == nil || b.opts.Count <= 0 {
		return true, 0, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.released[key]; ok { // acknowledged: goes, even if a later burst tripped it again
		delete(b.released, key)
		return true, 0, false
	}
	if b.tripped {
		b.held[key] = struct{}{}
		return false, 0, false
	}
	now := b.now()
	cut := 0
	for cut < len(b.recent) && now.Sub(b.recent[cut]) > b.opts.Window {
		cut++
	}
	b.recent = b.recent[cut:]
	since, seen := b.pending[key]
	if !seen {
		since = now
		b.pending[key] = now
	}
	if due := len(b.recent) + len(b.pending); due > b.opts.Count && due*100 > b.opts.Percent*b.owned() {
		b.trip(now)
		return false, 0, true
	}
	if left := b.opts.Grace - now.Sub(since); left > 0 {
		return false, left, false
	}
	delete(b.pending, key)
	b.recent = append(b.recent, now)
	return true, 0, false
}

// Forget drops a held or pending key whose deletion is no longer due (its object is wanted again).
// When the last held deletion goes so (the change that made them due was undone), nothing is left to
// release: the breaker stops holding and counts afresh.
func (b *Breaker) Forget(key framework.Key) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	_, wasHeld := b.held[key]
	delete(b.held, key)
	delete(b.pending, key)
	delete(b.released, key)
	if wasHeld && b.tripped && len(b.held) == 0 {
		b.tripped, b.baseline, b.refused = false, nil, map[string]string{}
	}
}

// trip starts holding every deletion due (those waiting out their grace too), recording the release
// annotations as they are; b.mu is held.
func (b *Breaker) trip(now time.Time) {
	b.tripped, b.since, b.baseline = true, now, b.releases()
	for k := range b.pending {
		b.held[k] = struct{}{}
	}
	b.pending = map[framework.Key]time.Time{}
}

// State is what the breaker holds.
type State struct {
	Tripped bool
	Since   time.Time
	// Held is how many deletions are held; Examples the first of them, by key.
	Held     int
	Examples []framework.Key
}

// State says what the breaker holds, with up to limit examples.
func (b *Breaker) State(limit int) State {
	if b == nil {
		return State{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := State{Tripped: b.tripped, Since: b.since, Held: len(b.held)}
	for k := range b.held {
		s.Examples = append(s.Examples, k)
	}
	sort.Slice(s.Examples, func(i, j int) bool { return s.Examples[i].String() < s.Examples[j].String() })
	if len(s.Examples) > limit {
		s.Examples = s.Examples[:limit]
	}
	return s
}

// Refusal is a release annotation made since the breaker tripped that releases nothing, and why.
type Refusal struct {
	Config, Value, Reason string
}

// Consider looks at the release annotations of the configs (config name → value): when tripped,
// the first made since it tripped (a value it did not have then) that names at least the count held
// releases them all; they are returned, for their deletions to be processed again (uncounted). The
// others made since it tripped are refusals, each returned once (to be said).
func (b *Breaker) Consider(releases map[string]string) ([]framework.Key, []Refusal) {
	if b == nil {
		return nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.tripped {
		return nil, nil
	}
	var refusals []Refusal
	names := make([]string, 0, len(releases))
	for name := range releases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := releases[name]
		if v == b.baseline[name] {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < len(b.held) {
			if b.refused[name] != v {
				reason := fmt.Sprintf("%q is not a count", v)
				if err == nil {
					reason = fmt.Sprintf("it names %d, fewer than the %d deletions held", n, len(b.held))
				}
				refusals = append(refusals, Refusal{Config: name, Value: v, Reason: reason})
				b.refused[name] = v
			}
			continue
		}
		keys := make([]framework.Key, 0, len(b.held))
		for k := range b.held {
			keys = append(keys, k)
		}
		b.tripped, b.held, b.recent, b.baseline, b.refused = false, map[framework.Key]struct{}{}, nil, nil, map[string]string{}
		for _, k := range keys {
			b.released[k] = struct{}{}
		}
		return keys, nil
	}
	return nil, refusals
}
