package breaker

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/framework"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func key(i int) framework.Key {
	return framework.Key{GVR: configMaps, Namespace: "app", Name: fmt.Sprintf("c%03d", i)}
}

type bed struct {
	b        *Breaker
	clock    time.Time
	owned    int
	releases map[string]string
}

func newBed(count, percent, owned int) *bed {
	t := &bed{clock: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), owned: owned, releases: map[string]string{}}
	t.b = New(Options{Count: count, Percent: percent}, func() int { return t.owned },
		func() map[string]string {
			out := map[string]string{}
			for k, v := range t.releases {
				out[k] = v
			}
			return out
		}, func() time.Time { return t.clock })
	return t
}

// deleted is how many of n deletions, falling due every apart from key first on, are made: each is
// asked again when it is told to wait, as downsync does.
func (t *bed) deleted(first, n int, every time.Duration) int {
	made := 0
	waiting := map[int]time.Time{}
	ask := func(i int) {
		ok, wait, _ := t.b.Allow(key(i))
		switch {
		case ok:
			made++
			delete(waiting, i)
		case wait > 0:
			waiting[i] = t.clock.Add(wait)
		default:
			delete(waiting, i) // held
		}
	}
	for i := first; i < first+n; i++ {
		ask(i)
		t.clock = t.clock.Add(every)
		for j, at := range waiting {
			if !t.clock.Before(at) {
				ask(j)
			}
		}
	}
	for len(waiting) > 0 { // the last ones wait out their grace
		t.clock = t.clock.Add(DefaultGrace)
		for j := range waiting {
			ask(j)
		}
	}
	return made
}

func TestOrdinaryChurnNeverTrips(t *testing.T) {
	// 60 deletions a minute of 1,000 objects: over the count, under the share.
	tb := newBed(50, 20, 1000)
	if n := tb.deleted(0, 120, time.Second); n != 120 {
		t.Errorf("%d of 120 deletions made at 6%% of the objects a minute; want all", n)
	}
	// 40 deletions of 100 objects at once: over the share, under the count.
	tb = newBed(50, 20, 100)
	if n := tb.deleted(0, 40, 0); n != 40 {
		t.Errorf("%d of 40 deletions made (under the count); want all", n)
	}
	// 200 deletions spread over five minutes: never more than 50 within one.
	tb = newBed(50, 20, 300)
	if n := tb.deleted(0, 200, 1500*time.Millisecond); n != 200 {
		t.Errorf("%d of 200 deletions made, 40 a minute; want all", n)
	}
}

func TestABurstDeletesNothingAndIsReleased(t *testing.T) {
	tb := newBed(50, 20, 1000)
	tb.releases["shop"] = "7" // an old release, there before the breaker trips: it releases nothing
	if n := tb.deleted(0, 1000, time.Millisecond); n != 0 {
		t.Fatalf("%d of 1,000 deletions falling due within a second made; want none", n)
	}
	s := tb.b.State(3)
	if !s.Tripped || s.Held != 1000 || len(s.Examples) != 3 || s.Examples[0] != key(0) {
		t.Fatalf("state %+v: want tripped, 1,000 held, the first three named", s)
	}
	if ok, _, tripped := tb.b.Allow(key(5000)); ok || tripped {
		t.Error("a deletion allowed while tripped (or said to trip it again)")
	}
	tb.b.Forget(key(5000)) // wanted again
	if got, refused := tb.b.Consider(map[string]string{"shop": "7"}); got != nil || refused != nil {
		t.Errorf("released %d (refusals %v) by a release made before it tripped", len(got), refused)
	}
	for i := 0; i < 2; i++ {
		got, refused := tb.b.Consider(map[string]string{"shop": "999", "web": "all"})
		switch {
		case got != nil:
			t.Errorf("released %d by a release naming fewer than held", len(got))
		case i == 0 && (len(refused) != 2 || refused[0].Reason != `it names 999, fewer than the 1000 deletions held` || refused[1].Reason != `"all" is not a count`):
			t.Errorf("refusals %+v: want both said, with why", refused)
		case i == 1 && refused != nil:
			t.Errorf("refusals said again: %+v", refused)
		}
	}
	got, _ := tb.b.Consider(map[string]string{"shop": "7", "other": "1000"})
	if len(got) != 1000 {
		t.Fatalf("released %d; want the 1,000 held", len(got))
	}
	if n := tb.deleted(0, 1000, 0); n != 1000 {
		t.Errorf("%d of the 1,000 released deletions made; want all, uncounted", n)
	}
	if n := tb.deleted(2000, 50, 0); n != 50 {
		t.Errorf("%d of 50 later deletions made; want all (the count starts again)", n)
	}
}

func TestDisabled(t *testing.T) {
	disabled := newBed(0, 20, 10)
	if n := disabled.deleted(0, 100, 0); n != 100 {
		t.Errorf("a disabled breaker let %d of 100 go", n)
	}
}

// TestUndoingTheChangeEndsTheHold: when every held deletion is wanted again (the mistaken change was
// undone), the breaker holds nothing and counts afresh; while one is still held it keeps holding.
func TestUndoingTheChangeEndsTheHold(t *testing.T) {
	tb := newBed(50, 20, 1000)
	if n := tb.deleted(0, 300, time.Millisecond); n != 0 {
		t.Fatalf("%d of 300 deletions made; want none", n)
	}
	for i := 0; i < 299; i++ {
		tb.b.Forget(key(i))
	}
	if s := tb.b.State(1); !s.Tripped || s.Held != 1 {
		t.Fatalf("state %+v with one deletion still held: want tripped, 1 held", s)
	}
	if ok, _, _ := tb.b.Allow(key(9000)); ok {
		t.Error("a new deletion allowed while one is still held")
	}
	tb.b.Forget(key(9000))
	tb.b.Forget(key(299))
	if s := tb.b.State(1); s.Tripped || s.Held != 0 {
		t.Fatalf("state %+v after every held deletion was wanted again: want not tripped", s)
	}
	if n := tb.deleted(5000, 10, 0); n != 10 {
		t.Errorf("%d of 10 later deletions made; want all", n)
	}
}

// TestAReleaseLetsGoTheHeldOnly: a release lets the deletions it released through, uncounted, and no
// others: a new burst right after trips the breaker again.
func TestAReleaseLetsGoTheHeldOnly(t *testing.T) {
	tb := newBed(50, 20, 100)
	if n := tb.deleted(0, 300, time.Millisecond); n != 0 {
		t.Fatalf("%d of 300 deletions made; want none", n)
	}
	if got, _ := tb.b.Consider(map[string]string{"shop": "300"}); len(got) != 300 {
		t.Fatalf("released %d; want 300", len(got))
	}
	if n := tb.deleted(1000, 60, time.Millisecond); n != 0 {
		t.Errorf("%d of a new burst of 60 made right after a release of other deletions; want none (held)", n)
	}
	if n := tb.deleted(0, 300, 0); n != 300 {
		t.Errorf("%d of the 300 released deletions made; want all", n)
	}
}
