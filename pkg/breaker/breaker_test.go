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

// allowed is how many of n deletions, one a second from key first on, go ahead.
func (t *bed) allowed(first, n int, every time.Duration) int {
	ok := 0
	for i := first; i < first+n; i++ {
		if allowed, _ := t.b.Allow(key(i)); allowed {
			ok++
		}
		t.clock = t.clock.Add(every)
	}
	return ok
}

func TestOrdinaryChurnNeverTrips(t *testing.T) {
	// 60 deletions a minute of 1,000 objects: over the count, under the share.
	tb := newBed(50, 20, 1000)
	if n := tb.allowed(0, 120, time.Second); n != 120 {
		t.Errorf("%d of 120 deletions allowed at 6%% of the objects a minute; want all", n)
	}
	// 40 deletions of 100 objects within a minute: over the share, under the count.
	tb = newBed(50, 20, 100)
	if n := tb.allowed(0, 40, 100*time.Millisecond); n != 40 {
		t.Errorf("%d of 40 deletions allowed (under the count); want all", n)
	}
	// 200 deletions spread over five minutes: never more than 50 within one.
	tb = newBed(50, 20, 300)
	if n := tb.allowed(0, 200, 1500*time.Millisecond); n != 200 {
		t.Errorf("%d of 200 deletions allowed, 40 a minute; want all", n)
	}
}

func TestTripsHoldsAndReleases(t *testing.T) {
	tb := newBed(50, 20, 200)
	tb.releases["shop"] = "7" // an old release, there before the breaker trips: it releases nothing
	if n := tb.allowed(0, 150, 10*time.Millisecond); n != 50 {
		t.Fatalf("%d of 150 deletions of 200 objects within two seconds allowed; want the first 50", n)
	}
	s := tb.b.State(3)
	if !s.Tripped || s.Held != 100 || len(s.Examples) != 3 || s.Examples[0] != key(50) {
		t.Fatalf("state %+v: want tripped, 100 held, the first three named", s)
	}
	if ok, tripped := tb.b.Allow(key(500)); ok || tripped {
		t.Error("a deletion allowed while tripped (or said to trip it again)")
	}
	tb.b.Forget(key(500)) // wanted again
	if got := tb.b.Consider(map[string]string{"shop": "7"}); got != nil {
		t.Errorf("released %d by a release made before it tripped", len(got))
	}
	if got := tb.b.Consider(map[string]string{"shop": "99"}); got != nil {
		t.Errorf("released %d by a release naming fewer than held", len(got))
	}
	got := tb.b.Consider(map[string]string{"shop": "7", "other": "100"})
	if len(got) != 100 {
		t.Fatalf("released %d; want the 100 held", len(got))
	}
	if n := tb.allowed(50, 100, 0); n != 100 {
		t.Errorf("%d of the 100 released deletions allowed; want all, uncounted", n)
	}
	if n := tb.allowed(1000, 50, 0); n != 50 {
		t.Errorf("%d of 50 later deletions allowed; want all (the count starts again)", n)
	}
}

func TestHoldAfterRestart(t *testing.T) {
	tb := newBed(50, 20, 10)
	tb.b.Hold()
	if ok, _ := tb.b.Allow(key(1)); ok {
		t.Error("a deletion allowed by a breaker told to hold")
	}
	if got := tb.b.Consider(map[string]string{"a": "1"}); len(got) != 1 {
		t.Errorf("released %v; want the one held", got)
	}
	disabled := newBed(0, 20, 10)
	disabled.b.Hold()
	if n := disabled.allowed(0, 100, 0); n != 100 {
		t.Errorf("a disabled breaker allowed %d of 100", n)
	}
}
