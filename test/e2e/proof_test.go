package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/mapping"
)

// waitEvent waits for an Event with reason on the object name in namespace ns of one side, whose
// message contains substr.
func (f *fixture) waitEvent(c clients, ns, name, reason, substr string) {
	f.t.Helper()
	eventually(f.t, 30*time.Second, fmt.Sprintf("a %s Event on %s/%s", reason, ns, name), func() (bool, string) {
		events, err := c.kube.CoreV1().Events(ns).List(f.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range events.Items {
			if e.Reason == reason && e.InvolvedObject.Name == name && strings.Contains(e.Message, substr) {
				return true, ""
			}
			if e.InvolvedObject.Name == name {
				seen = append(seen, e.Reason+": "+e.Message)
			} else {
				seen = append(seen, e.Reason+" "+e.InvolvedObject.Name)
			}
		}
		return false, fmt.Sprintf("events: %v", seen)
	})
}

func upsyncConfigMaps(ns string) map[string]interface{} {
	return map[string]interface{}{"upsync": []interface{}{map[string]interface{}{
		"apiGroup": "", "resources": []interface{}{"configmaps"}, "namespaces": []interface{}{ns}, "names": []interface{}{"*"}}}}
}

// TestUpsyncDeletesOnlyProvenCopies: upsync deletes an upstream object only when
// it can prove it made it — the edge object's UID recorded in the mark. An upstream object that
// carries the mark and the label without that proof (made by hand, or copied) is neither deleted,
// at once or after a restart, nor silently passed over: it is reported (Event, log). A real copy's
// deletion is logged at level 0 and recorded as an Event.
func TestUpsyncDeletesOnlyProvenCopies(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", ns, nil))
	f.create(f.down, gvrConfigMaps, configMap(ns, "report", map[string]interface{}{"k": "v"}))
	// Made by hand upstream to look like a copy of an edge object that does not exist.
	spoof := configMap(ns, "spoof", map[string]interface{}{"k": "precious"})
	spoof.SetLabels(map[string]string{mapping.UpsyncOwnerLabel: f.name})
	spoof.SetAnnotations(map[string]string{mapping.UpsyncedAnnotation: "ConfigMap/" + ns + "/spoof"})
	f.create(f.up, gvrConfigMaps, spoof)

	f.syncerConfig(f.name, upsyncConfigMaps(ns))
	p := f.startSyncer()
	up := f.waitFor(f.up, gvrConfigMaps, ns, "report", upsynced)
	edge, err := f.get(f.down, gvrConfigMaps, ns, "report")
	if err != nil {
		t.Fatal(err)
	}
	if got := mapping.UpsyncedFrom(up); got != string(edge.GetUID()) {
		t.Errorf("the copy records edge UID %q, want %q", got, edge.GetUID())
	}
	f.waitEvent(f.up, ns, "spoof", "UpsyncNotDeleted", mapping.UpsyncSourceUIDAnnotation)
	eventually(t, 10*time.Second, "the unproven mark in the log", func() (bool, string) {
		return strings.Contains(p.logText(), "Not deleting configmaps "+ns+"/spoof upstream"), "not logged"
	})

	// A real copy goes with its edge object: logged, and an Event.
	f.delete(f.down, gvrConfigMaps, ns, "report")
	f.waitGone(f.up, gvrConfigMaps, ns, "report")
	f.waitEvent(f.up, ns, "report", "UpsyncDeleted", "the edge object is gone")
	logged := false
	for _, line := range strings.Split(p.logText(), "\n") {
		logged = logged || strings.Contains(line, `"Deleted upsynced copy upstream"`) && strings.Contains(line, `reason="the edge object is gone"`)
	}
	if !logged {
		t.Error("the deletion upstream is not logged with its reason")
	}

	// After a restart (the syncer finds its label upstream), still not deleted.
	p.stop()
	p = f.startSyncer()
	eventually(t, 30*time.Second, "the restarted syncer to look at the spoof", func() (bool, string) {
		return strings.Contains(p.logText(), "Not deleting configmaps "+ns+"/spoof upstream"), "not yet"
	})
	if o, err := f.get(f.up, gvrConfigMaps, ns, "spoof"); err != nil || o.GetDeletionTimestamp() != nil {
		t.Fatalf("the unproven copy was deleted: %v", err)
	}
}

// TestUpsyncWriteLoopBacksOff: another controller upstream
// keeps reverting an upsynced copy. The syncer finds the loop, names the other field manager (Event,
// ObjectsSynced) and backs off instead of rewriting the copy many times a second.
func TestUpsyncWriteLoopBacksOff(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", ns, nil))
	f.create(f.down, gvrConfigMaps, configMap(ns, "fought", map[string]interface{}{"k": "edge"}))
	f.syncerConfig(f.name, upsyncConfigMaps(ns))
	p := f.startSyncer(withArgs("--heartbeat-period=1s"))
	f.waitFor(f.up, gvrConfigMaps, ns, "fought", dataEquals("k", "edge"))

	f.revertAgainAndAgain(f.up, ns, "fought")
	f.expectLoopBackoff(p, "upsync", ns, "fought")
}

// revertAgainAndAgain plays another controller on one side: whenever the ConfigMap's data is not its
// own, it writes its own back (field manager "reverter"), until the test ends.
func (f *fixture) revertAgainAndAgain(c clients, ns, name string) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			o, err := c.dyn.Resource(gvrConfigMaps).Namespace(ns).Get(f.ctx, name, metav1.GetOptions{})
			if err != nil || o.Object["data"].(map[string]interface{})["k"] == "theirs" {
				continue
			}
			o.Object["data"] = map[string]interface{}{"k": "theirs"}
			_, _ = c.dyn.Resource(gvrConfigMaps).Namespace(ns).Update(f.ctx, o, metav1.UpdateOptions{FieldManager: "reverter"})
		}
	}()
	f.t.Cleanup(func() { close(stop); <-done })
}

// expectLoopBackoff checks that the syncer found the loop in a direction, backs off (no more
// updates for a quiet window while the other controller writes on), and says who it fights: the
// ObjectsSynced condition and a WriteLoop Event on the upstream object, naming the field manager.
func (f *fixture) expectLoopBackoff(p *syncerProc, direction, ns, name string) {
	f.t.Helper()
	loop := fmt.Sprintf(`kubestellar_syncer_writes_total{direction=%q,resource="configmaps",result="loop"}`, direction)
	updated := fmt.Sprintf(`kubestellar_syncer_writes_total{direction=%q,resource="configmaps",result="updated"}`, direction)
	eventually(f.t, 30*time.Second, "the loop found", func() (bool, string) {
		return p.metrics()[loop] >= 1, fmt.Sprintf("%v loops, %v updates", p.metrics()[loop], p.metrics()[updated])
	})
	const quietWindow = 10 * time.Second
	before := p.metrics()[updated]
	consistently(f.t, quietWindow, "no more writes while backing off", func() (bool, string) {
		now := p.metrics()[updated]
		return now == before, fmt.Sprintf("updates went from %v to %v", before, now)
	})
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		st, _, msg := conditionOf(o, "ObjectsSynced")
		return st == "False" && strings.Contains(msg, "write loop with field manager reverter"), fmt.Sprintf("ObjectsSynced %s %q", st, msg)
	})
	f.waitEvent(f.up, ns, name, "WriteLoop", "reverter")
}

// TestHeadlessServiceBecomesClusterIP: upstream, a headless Service is replaced
// by one with a cluster IP (a kube-apiserver refuses that change in place, so users delete and
// recreate it; here while the syncer is down, so it cannot see the gap). The edge would keep
// clusterIP None without an error; the syncer replaces the Service, with an Event, and the way back
// works too.
func TestHeadlessServiceBecomesClusterIP(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	svc := func(headless bool) *unstructured.Unstructured {
		spec := map[string]interface{}{
			"selector": map[string]interface{}{"app": "web"},
			"ports":    []interface{}{map[string]interface{}{"port": int64(80), "protocol": "TCP"}},
		}
		if headless {
			spec["clusterIP"] = "None"
		}
		return obj("v1", "Service", ns, "web", map[string]interface{}{"spec": spec})
	}
	clusterIP := func(o *unstructured.Unstructured) string {
		ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP")
		return ip
	}
	f.create(f.up, gvrServices, svc(true))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "services")))
	p := f.startSyncer()
	first := f.waitFor(f.down, gvrServices, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		return clusterIP(o) == "None", "clusterIP " + clusterIP(o)
	})
	for _, headless := range []bool{false, true} {
		p.stop()
		f.delete(f.up, gvrServices, ns, "web")
		f.waitGone(f.up, gvrServices, ns, "web")
		f.create(f.up, gvrServices, svc(headless))
		p = f.startSyncer()
		f.waitFor(f.down, gvrServices, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
			ip := clusterIP(o)
			return o.GetUID() != first.GetUID() && (ip == "None") == headless && ip != "", fmt.Sprintf("uid %s clusterIP %q", o.GetUID(), ip)
		})
		first, _ = f.get(f.down, gvrServices, ns, "web")
	}
	f.waitEvent(f.up, ns, "web", "Recreating", "headless")
}
