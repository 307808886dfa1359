package e2e

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestDeletionBreaker: a SyncerConfig changed by mistake deselects 30 objects and their namespace at
// once; with a breaker of 10 deletions (and 20% of what the syncer owns) a minute, none goes, all 31
// are held: condition
// DeletionsHeld says how many and how to let them go, the metric counts them, creates go on, a
// restart keeps holding, a release naming fewer than held releases nothing and says why (Warning Event
// ReleaseRefused on the SyncerConfig), one naming them all lets
// them go.
func TestDeletionBreaker(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns, other := f.namespace("ns"), f.namespace("other")
	for i := 0; i < 30; i++ {
		f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("c%02d", i), map[string]interface{}{"k": "v"}))
	}
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	args := withArgs("--deletion-breaker-count=10", "--deletion-breaker-percent=20", "--heartbeat-period=1s")
	p := f.startSyncer(f.ownConfigs(), args)
	f.waitFor(f.down, gvrConfigMaps, ns, "c29", hasMark)
	f.waitFor(f.down, gvrConfigMaps, ns, "c00", hasMark)

	f.syncerConfig(f.name, nsScope([]string{other}, resource("", "v1", "configmaps"))) // the mistake
	held := func(n int) { t.Helper(); waitDeletionsHeld(f, n) }
	held(31)
	if n := edgeCopies(f, ns); n != 30 {
		t.Errorf("%d ConfigMaps left at the edge; want all 30 held", n)
	}
	if got := p.metrics()["kubestellar_syncer_deletions_held{}"]; got != 31 {
		t.Errorf("kubestellar_syncer_deletions_held = %v, want 31 (the ConfigMaps and their namespace)", got)
	}
	f.create(f.up, gvrConfigMaps, configMap(other, "new", map[string]interface{}{"k": "v"}))
	f.waitFor(f.down, gvrConfigMaps, other, "new", hasMark) // creates go on

	// A restart keeps holding.
	p.stop()
	p = f.startSyncer(f.ownConfigs(), args)
	eventually(t, podTimeout, "the restarted syncer holds the 31 deletions", func() (bool, string) {
		m, err := p.scrape()
		if err != nil {
			return false, err.Error()
		}
		n, got := edgeCopies(f, ns), m["kubestellar_syncer_deletions_held{}"]
		return n == 30 && got == 31, fmt.Sprintf("%d ConfigMaps left at the edge, kubestellar_syncer_deletions_held %v", n, got)
	})
	held(31)

	release := func(count string) {
		f.update(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) {
			a := o.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a["edge.kubestellar.io/release-deletions"] = count
			o.SetAnnotations(a)
		})
	}
	release("5")
	held(31)
	f.waitEvent(f.up, "default", f.name, "ReleaseRefused", "it names 5, fewer than the 31 deletions held")
	release("31")
	eventually(t, podTimeout, "the released deletions done", func() (bool, string) {
		n := edgeCopies(f, ns)
		return n == 0, fmt.Sprintf("%d left", n)
	})
	waitDeletionsHeld(f, 0)
}

// TestDeletionBreakerUndone: when the change that tripped the breaker is undone, no deletion is left
// to release and the hold ends by itself: DeletionsHeld False, the gauge 0, every edge copy kept. (The
// mistake here names a namespace that does not exist upstream, so it made nothing at the edge whose
// deletion the undo would make due: such a deletion would stay held until released.)
func TestDeletionBreakerUndone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns, other := f.namespace("ns"), f.name+"-missing"
	for i := 0; i < 30; i++ {
		f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("c%02d", i), map[string]interface{}{"k": "v"}))
	}
	right := nsScope([]string{ns}, resource("", "v1", "configmaps"))
	f.syncerConfig(f.name, right)
	p := f.startSyncer(f.ownConfigs(), withArgs("--deletion-breaker-count=10", "--deletion-breaker-percent=20", "--heartbeat-period=1s"))
	f.waitFor(f.down, gvrConfigMaps, ns, "c29", hasMark)
	f.waitFor(f.down, gvrConfigMaps, ns, "c00", hasMark)

	f.syncerConfig(f.name, nsScope([]string{other}, resource("", "v1", "configmaps"))) // the mistake
	waitDeletionsHeld(f, 31)
	f.syncerConfig(f.name, right) // undone
	waitDeletionsHeld(f, 0)
	if n, held := edgeCopies(f, ns), p.metrics()["kubestellar_syncer_deletions_held{}"]; n != 30 || held != 0 {
		t.Errorf("after the undo: %d ConfigMaps at the edge, kubestellar_syncer_deletions_held %v; want 30 and 0", n, held)
	}
}

// waitDeletionsHeld waits until the test's SyncerConfig says n deletions are held (0: none, the
// condition False).
func waitDeletionsHeld(f *fixture, n int) {
	f.t.Helper()
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		status, reason, msg := conditionOf(o, "DeletionsHeld")
		if n == 0 {
			return status == "False" && reason == "NoneHeld", fmt.Sprintf("DeletionsHeld %s %s", status, reason)
		}
		return status == "True" && reason == "TooManyDeletions" && strings.Contains(msg, fmt.Sprintf(`edge.kubestellar.io/release-deletions="%d"`, n)),
			fmt.Sprintf("DeletionsHeld %s %s: %s", status, reason, msg)
	})
}

// edgeCopies counts the syncer's ConfigMaps at the edge in a namespace.
func edgeCopies(f *fixture, ns string) int {
	f.t.Helper()
	list, err := f.down.dyn.Resource(gvrConfigMaps).Namespace(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, o := range list.Items {
		if ok, _ := hasMark(&o); ok {
			n++
		}
	}
	return n
}
