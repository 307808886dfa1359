package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/problem"
)

// A key written LoopWrites times within LoopWindow is in a loop with another actor that reverts or
// deletes what the syncer writes: the syncer backs off from LoopBackoff, doubling up to
// MaxLoopBackoff, and says who the other writer is.
const (
	LoopWrites     = 5
	LoopWindow     = time.Minute
	LoopBackoff    = 30 * time.Second
	MaxLoopBackoff = 5 * time.Minute
)

type loopState struct {
	content string      // digest of what the recent writes wrote
	writes  []time.Time // recent writes of that content, within LoopWindow
	until   time.Time   // backing off until then
	backoff time.Duration
	other   string // who else writes, for the report
}

// loops tracks the writes of each key.
type loops struct {
	mu   sync.Mutex
	keys map[Key]*loopState
	// swept is when keys was last rid of the keys with nothing to remember.
	swept time.Time
	peak  Peak // of keys: an initial sync writes every object
}

// sweep forgets, at most once per LoopWindow, the keys that have nothing left to count: no write
// within LoopWindow, and never backed off (a backoff grows over repeated loops, so it is kept).
// Without it every key ever written would keep its state for good. l.mu is held.
func (l *loops) sweep(now time.Time) {
	if now.Sub(l.swept) < LoopWindow {
		return
	}
	l.swept = now
	for k, st := range l.keys {
		if st.backoff == 0 && (len(st.writes) == 0 || now.Sub(st.writes[len(st.writes)-1]) >= LoopWindow) {
			delete(l.keys, k)
		}
	}
	if l.peak.Drained(len(l.keys)) {
		l.keys = Remade(l.keys) // give back what a burst of writes took
	}
}

// Backoff tells whether a key is backing off a loop, and for how long still.
func (w *Writes) Backoff(key Key) (time.Duration, bool) {
	w.loops.mu.Lock()
	defer w.loops.mu.Unlock()
	st := w.loops.keys[key]
	if st == nil || st.until.IsZero() {
		return 0, false
	}
	if left := time.Until(st.until); left > 0 {
		return left, true
	}
	return 0, false
}

// WouldLoop tells whether writing content to key once more would complete a loop: the caller then
// reads the object as the other actor left it (its field managers name that actor) and passes it
// to Wrote.
func (w *Writes) WouldLoop(key Key, content string) bool {
	w.loops.mu.Lock()
	defer w.loops.mu.Unlock()
	st := w.loops.keys[key]
	if st == nil || st.content != content {
		return false
	}
	n := 0
	for _, t := range st.writes {
		if time.Since(t) < LoopWindow {
			n++
		}
	}
	return n >= LoopWrites-1
}

// Wrote records a write (create or update) of content (a digest of what was written) to a key. The
// same content written again and again means another actor undoes it; when that happens LoopWrites
// times within LoopWindow it reports a loop — logged at level 0 and as a Warning Event "WriteLoop" on
// about, naming the other writer (the other field managers of before, the object as it was before
// the write, when the caller read it; "another actor deleted it" when recreated is set), counted as
// writes_total{result="loop"} — and the key backs off. New content (an upstream change) starts
// afresh. It tells whether a loop was found now.
func (w *Writes) Wrote(ctx context.Context, key Key, content string, recreated bool, about, before *unstructured.Unstructured) bool {
	now := time.Now()
	w.loops.mu.Lock()
	if w.loops.keys == nil {
		w.loops.keys = map[Key]*loopState{}
	}
	w.loops.sweep(now)
	st := w.loops.keys[key]
	if st == nil || st.content != content {
		st = &loopState{content: content, backoff: backoffOf(st)}
		w.loops.keys[key] = st
		w.loops.peak.Saw(len(w.loops.keys))
	}
	kept := st.writes[:0]
	for _, t := range st.writes {
		if now.Sub(t) < LoopWindow {
			kept = append(kept, t)
		}
	}
	kept = append(kept, now)
	st.writes = kept
	if len(st.writes) < LoopWrites {
		w.loops.mu.Unlock()
		return false
	}
	st.backoff = min(max(2*st.backoff, LoopBackoff), MaxLoopBackoff)
	st.until = now.Add(st.backoff)
	st.writes = nil
	backoff := st.backoff
	w.loops.mu.Unlock()

	other := "another actor (it deleted the object)"
	if !recreated {
		other = otherWriters(before, w.fieldManager)
	}
	w.loops.mu.Lock()
	st.other = other
	w.loops.mu.Unlock()

	w.metrics.Writes.WithLabelValues(w.direction, key.GVR.GroupResource().String(), metrics.Loop).Inc()
	msg := fmt.Sprintf("%s was written %d times within %s: %s undoes what the syncer writes; backing off for %s",
		key.String(), LoopWrites, LoopWindow, other, backoff)
	klog.FromContext(ctx).Error(nil, "Write loop with another actor", "other", other, "backoff", backoff.String(), "detail", msg)
	w.Event(about, corev1.EventTypeWarning, "WriteLoop", msg)
	return true
}

// backoffOf is the backoff a key had (it grows over repeated loops), or none.
func backoffOf(st *loopState) time.Duration {
	if st == nil {
		return 0
	}
	return st.backoff
}

// otherWriters names the field managers of an object other than the syncer's own, most recent first.
func otherWriters(live *unstructured.Unstructured, own string) string {
	if live == nil {
		return "another actor"
	}
	type entry struct {
		manager string
		at      time.Time
	}
	var others []entry
	for _, mf := range live.GetManagedFields() {
		if mf.Manager != own && mf.Manager != "" {
			at := time.Time{}
			if mf.Time != nil {
				at = mf.Time.Time
			}
			others = append(others, entry{mf.Manager + " (" + string(mf.Operation) + ")", at})
		}
	}
	if len(others) == 0 {
		return "another actor"
	}
	sort.Slice(others, func(i, j int) bool { return others[i].at.After(others[j].at) })
	names := make([]string, len(others))
	for i, e := range others {
		names[i] = e.manager
	}
	return "field manager " + strings.Join(names, ", ")
}

// Loops are the keys backing off a loop now, as problems, up to limit, with how many there are.
func (w *Writes) Loops(limit int) (int, []problem.Problem) {
	w.loops.mu.Lock()
	defer w.loops.mu.Unlock()
	w.loops.sweep(time.Now()) // called periodically (the heartbeat's conditions): the idle syncer sweeps too
	var keys []Key
	others := map[Key]string{}
	for k, st := range w.loops.keys {
		if !st.until.IsZero() && time.Now().Before(st.until.Add(LoopWindow)) {
			keys = append(keys, k)
			others[k] = st.other
		}
	}
	return len(keys), keyProblems(keys, limit, func(k Key) (problem.Kind, string) {
		return problem.WriteLoop, "in a write loop with " + others[k]
	})
}
