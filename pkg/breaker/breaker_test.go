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
	return newBedWith(Options{Count: count, Percent: percent}, owned)
}

func newBedWith(opts Options, owned int) *bed {
	t := &bed{clock: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), owned: owned, releases: map[string]string{}}
	t.b = New(opts, func() int { return t.owned },
		func() map[string]Release { return rel(t.releases) }, func() time.Time { return t.clock })
	return t
}

// rel is releases of these values, all trusted.
func rel(m map[string]string) map[string]Release {
	out := map[string]Release{}
	for k, v := range m {
		out[k] = Release{Value: v}
	}
	return out
}

// deleted is how many of n deletions, falling due every apart from key first on, are made: each is
// asked again when it is told to wait, as downsync does.
func (t *bed) deleted(first, n int, every time.Duration) int {
	made := 0
	waiting := map[int]time.Time{}
	ask := func(i int) {
		ok, wait, _ := t.b.Allow(key(i), 1)
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
	if ok, _, tripped := tb.b.Allow(key(5000), 1); ok || tripped {
		t.Error("a deletion allowed while tripped (or said to trip it again)")
	}
	tb.b.Forget(key(5000)) // wanted again
	if got, refused := tb.b.Consider(rel(map[string]string{"shop": "7"})); got != nil || refused != nil {
		t.Errorf("released %d (refusals %v) by a release made before it tripped", len(got), refused)
	}
	for i := 0; i < 2; i++ {
		got, refused := tb.b.Consider(rel(map[string]string{"shop": "999", "web": "all"}))
		switch {
		case got != nil:
			t.Errorf("released %d by a release naming fewer than held", len(got))
		case i == 0 && (len(refused) != 2 || refused[0].Reason != `it names 999, fewer than the 1000 deletions held` || refused[1].Reason != `"all" is not a count`):
			t.Errorf("refusals %+v: want both said, with why", refused)
		case i == 1 && refused != nil:
			t.Errorf("refusals said again: %+v", refused)
		}
	}
	got, _ := tb.b.Consider(rel(map[string]string{"shop": "7", "other": "1000"}))
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
	if ok, _, _ := tb.b.Allow(key(9000), 1); ok {
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
	if got, _ := tb.b.Consider(rel(map[string]string{"shop": "300"})); len(got) != 300 {
		t.Fatalf("released %d; want 300", len(got))
	}
	if n := tb.deleted(1000, 60, time.Millisecond); n != 0 {
		t.Errorf("%d of a new burst of 60 made right after a release of other deletions; want none (held)", n)
	}
	if n := tb.deleted(0, 300, 0); n != 300 {
		t.Errorf("%d of the 300 released deletions made; want all", n)
	}
}

// TestAMailboxReleaseIsRefused: a release from a source the site does not trust releases nothing,
// whatever it names, and is said once with why; a trusted one made later releases.
func TestAMailboxReleaseIsRefused(t *testing.T) {
	tb := newBed(10, 20, 100)
	if n := tb.deleted(0, 40, time.Millisecond); n != 0 {
		t.Fatalf("%d of 40 deletions made; want none", n)
	}
	hostile := map[string]Release{"syncerconfig zz": {Value: "9223372036854775807", Untrusted: "made in the mailbox"}}
	for i := 0; i < 2; i++ {
		got, refused := tb.b.Consider(hostile)
		if got != nil || (i == 0 && (len(refused) != 1 || refused[0].Reason != "made in the mailbox")) || (i == 1 && refused != nil) {
			t.Fatalf("try %d: released %d, refusals %+v; want nothing released, the refusal said once", i, len(got), refused)
		}
	}
	hostile["edge"] = Release{Value: "40"}
	if got, _ := tb.b.Consider(hostile); len(got) != 40 {
		t.Errorf("released %d by the edge's release; want 40", len(got))
	}
}

// TestTheBaseCannotBeInflated: objects made just before a burst do not raise the share the burst is
// weighed against: the base is the least owned over the last hour.
func TestTheBaseCannotBeInflated(t *testing.T) {
	tb := newBed(50, 20, 100)
	tb.b.Observe()
	tb.clock = tb.clock.Add(10 * time.Minute)
	tb.owned = 100000 // the mailbox fills the edge with tiny objects
	if n := tb.deleted(0, 200, time.Millisecond); n != 0 {
		t.Errorf("%d of 200 deletions made against 100,000 objects made ten minutes ago; want none (the base is 100)", n)
	}
	// An hour later the objects are part of the base: 200 of 100,000 is ordinary churn.
	tb = newBed(50, 20, 100)
	tb.b.Observe()
	tb.clock = tb.clock.Add(Hour + time.Minute)
	tb.owned = 100000
	if n := tb.deleted(0, 200, time.Millisecond); n != 200 {
		t.Errorf("%d of 200 deletions made against 100,000 objects owned for an hour; want all", n)
	}
}

// TestADripTripsTheHourlyLimit: deletions under the minute's limit, kept up, trip the hourly one.
func TestADripTripsTheHourlyLimit(t *testing.T) {
	tb := newBedWith(Options{Count: 50, Percent: 20, HourCount: 200}, 1000)
	made := tb.deleted(0, 600, 2*time.Second) // 30 a minute for 20 minutes
	if made < 200 || made > 201 {
		t.Errorf("%d of a drip of 600 deletions, 30 a minute, made; want the hourly limit's 200 (then held)", made)
	}
	if s := tb.b.State(0); !s.Tripped {
		t.Errorf("state %+v: want tripped by the hourly limit", s)
	}
	// Without an hourly limit the drip never trips.
	tb = newBed(50, 20, 1000)
	if n := tb.deleted(0, 600, 2*time.Second); n != 600 {
		t.Errorf("%d of 600 made without an hourly limit; want all", n)
	}
}

// TestAWeightyDeletionCountsAsMany: one deletion that takes 30 objects with it weighs 30.
func TestAWeightyDeletionCountsAsMany(t *testing.T) {
	tb := newBed(10, 5, 100)
	if ok, _, tripped := tb.b.Allow(key(0), 30); ok || !tripped {
		t.Errorf("a deletion weighing 30 against a limit of 10: ok %v, tripped %v; want held, tripped", ok, tripped)
	}
	tb = newBed(10, 5, 100)
	_, wait, _ := tb.b.Allow(key(0), 3)
	tb.clock = tb.clock.Add(wait)
	if ok, _, _ := tb.b.Allow(key(0), 3); !ok {
		t.Error("a deletion weighing 3 under a limit of 10 held")
	}
}
