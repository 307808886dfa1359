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
	// Count and Percent: the breaker trips when the deletions due within Window would weigh more than
	// Count and more than Percent % of the objects the syncer owned at the edge (the least it owned
	// over the last hour: a mailbox cannot raise the share by first making many objects). Count 0
	// disables the breaker.
	Count, Percent int
	// HourCount: the breaker trips too when the deletions due within an hour would weigh more than
	// HourCount and more than Percent % of what it owned, so that a slow drip trips as a burst does.
	// 0: no hourly limit.
	HourCount int
	// Window is the short sliding window (DefaultWindow when zero).
	Window time.Duration
	// Grace is how long a deletion waits after it falls due before it is made (DefaultGrace when
	// zero): long enough for the deletions a single change makes due (a config deleted, say) to be
	// counted together, so that a burst over the limit deletes nothing.
	Grace time.Duration
}

// ReleaseAnnotation releases the deletions held when its value is at least the count held and was
// written since the breaker tripped (Consider): on the edge's release object, or, where the site
// trusts its mailbox to release, on a SyncerConfig.
const ReleaseAnnotation = "edge.kubestellar.io/release-deletions"

// DefaultWindow is the short sliding window deletions are counted in, Hour the long one, and
// DefaultGrace how long a deletion waits once due.
const (
	DefaultWindow = time.Minute
	Hour          = time.Hour
	DefaultGrace  = time.Second
)

// Release is a release annotation as the engine found it.
type Release struct {
	Value string
	// Untrusted, when set, says why this release is refused whatever it names (one made in a mailbox
	// the site does not let release).
	Untrusted string
}

// due is a deletion let through, when, and what it weighed.
type due struct {
	at     time.Time
	weight int
}

// pending is a deletion waiting out the grace period: since when, and what it weighs.
type pending struct {
	since  time.Time
	weight int
}

// Breaker counts deletions and holds them once tripped. Its methods are safe for concurrent use.
type Breaker struct {
	opts     Options
	owned    func() int
	releases func() map[string]Release
	now      func() time.Time

	mu     sync.Mutex
	recent []due // the deletions let through within the last hour
	// pending are the deletions due and waiting out the grace period.
	pending map[framework.Key]pending
	tripped bool
	since   time.Time
	held    map[framework.Key]struct{}
	// released are the deletions a release let go: each goes through once, uncounted.
	released map[framework.Key]struct{}
	// baseline are the release annotations as they were when the breaker tripped: only a release
	// made since counts.
	baseline map[string]string
	// refused are the release annotations said to release nothing, by source: said once each.
	refused map[string]string
	// lows are the least owned objects seen in each minute of the last hour (by minute).
	lows map[int64]int
}

// New returns a breaker; owned counts the objects the syncer owns at the edge now; releases reads
// the release annotations now (source name → release; see Consider); now is the clock (time.Now
// when nil).
func New(opts Options, owned func() int, releases func() map[string]Release, now func() time.Time) *Breaker {
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
		pending: map[framework.Key]pending{}, refused: map[string]string{}, released: map[framework.Key]struct{}{}, lows: map[int64]int{}}
}

// Allow tells whether the deletion of key, weighing weight (1 for one object; more for one that takes
// others with it), may go ahead now: ok, or to be asked again after wait (it fell due less than
// Options.Grace ago), or held (neither: remembered, and returned by a release). tripped is true for
// the one call that tripped the breaker.
func (b *Breaker) Allow(key framework.Key, weight int) (ok bool, wait time.Duration, tripped bool) {
	if b == nil || b.opts.Count <= 0 {
		return true, 0, false
	}
	if weight < 1 {
		weight = 1
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
	base := b.sample(now)
	cut := 0
	for cut < len(b.recent) && now.Sub(b.recent[cut].at) > Hour {
		cut++
	}
	b.recent = b.recent[cut:]
	p, seen := b.pending[key]
	if !seen {
		p = pending{since: now, weight: weight}
		b.pending[key] = p
	}
	if b.over(now, base) {
		b.trip(now)
		return false, 0, true
	}
	if left := b.opts.Grace - now.Sub(p.since); left > 0 {
		return false, left, false
	}
	delete(b.pending, key)
	b.recent = append(b.recent, due{at: now, weight: p.weight})
	return true, 0, false
}

// over tells whether the deletions due (let through within a window, and pending) are over a limit,
// against base, the objects owned; b.mu is held.
func (b *Breaker) over(now time.Time, base int) bool {
	minute, hour := 0, 0
	for _, d := range b.recent {
		hour += d.weight
		if now.Sub(d.at) <= b.opts.Window {
			minute += d.weight
		}
	}
	for _, p := range b.pending {
		minute += p.weight
		hour += p.weight
	}
	share := func(n int) bool { return n*100 > b.opts.Percent*base }
	return (minute > b.opts.Count && share(minute)) || (b.opts.HourCount > 0 && hour > b.opts.HourCount && share(hour))
}

// sample records the objects owned now in this minute's low, drops the lows older than an hour, and
// returns the least of them: the base the share is counted against; b.mu is held.
func (b *Breaker) sample(now time.Time) int {
	n, minute := b.owned(), now.Unix()/60
	if low, ok := b.lows[minute]; !ok || n < low {
		b.lows[minute] = n
	}
	least := n
	for m, low := range b.lows {
		switch {
		case minute-m >= int64(Hour/time.Minute):
			delete(b.lows, m)
		case low < least:
			least = low
		}
	}
	return least
}

// Observe records the objects owned now (the engine calls it with every heartbeat), so that the base
// remembers what was owned in the minutes no deletion fell due.
func (b *Breaker) Observe() {
	if b == nil || b.opts.Count <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sample(b.now())
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
	b.tripped, b.since, b.baseline = true, now, map[string]string{}
	for name, r := range b.releases() {
		b.baseline[name] = r.Value
	}
	for k := range b.pending {
		b.held[k] = struct{}{}
	}
	b.pending = map[framework.Key]pending{}
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
	Source, Value, Reason string
}

// Consider looks at the release annotations (source name → release): when tripped, the first made
// since it tripped (a value its source did not have then) that is trusted and names at least the
// count held releases them all; they are returned, for their deletions to be processed again
// (uncounted). The others made since it tripped are refusals, each returned once (to be said).
func (b *Breaker) Consider(releases map[string]Release) ([]framework.Key, []Refusal) {
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
		r := releases[name]
		if r.Value == b.baseline[name] {
			continue
		}
		n, err := strconv.Atoi(r.Value)
		if r.Untrusted != "" || err != nil || n < len(b.held) {
			if b.refused[name] != r.Value {
				reason := r.Untrusted
				switch {
				case reason != "":
				case err != nil:
					reason = fmt.Sprintf("%q is not a count", r.Value)
				default:
					reason = fmt.Sprintf("it names %d, fewer than the %d deletions held", n, len(b.held))
				}
				refusals = append(refusals, Refusal{Source: name, Value: r.Value, Reason: reason})
				b.refused[name] = r.Value
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
