package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSyncersShareOneUpstream: two syncers (two sync targets, one edge) share one upstream, each
// reading only its own SyncerConfig (--syncer-config-selector on a label), as a namespace per mailbox
// on one kube-apiserver needs. Each syncs its own namespace only, writes its heartbeat on its own
// config only, and neither deletes the other's namespace at the edge (the edge's Namespaces are
// watched whole: a syncer once took the other's for deselected and deleted it).
func TestSyncersShareOneUpstream(t *testing.T) {
	f := newFixture(t)
	const label = "e2e.kubestellar.io/mailbox"
	type mailbox struct {
		target, ns, config string
		p                  *syncerProc
	}
	boxes := []*mailbox{{target: f.name + "-a"}, {target: f.name + "-b"}}
	for _, b := range boxes {
		b.ns = f.namespace(b.target[len(b.target)-1:])
		b.config = b.target
		f.create(f.up, gvrConfigMaps, configMap(b.ns, "app", map[string]interface{}{"for": b.target}))
		f.syncerConfig(b.config, nsScope([]string{b.ns}, resource("", "v1", "configmaps")))
		f.update(f.up, gvrSyncerConfig, "", b.config, withLabel(label, b.target))
	}
	for _, b := range boxes {
		b.p = f.startSyncer(withArgs("--sync-target-name="+b.target, "--syncer-config-selector="+label+"="+b.target, "--heartbeat-period=1s"))
	}
	for _, b := range boxes {
		cm := f.waitFor(f.down, gvrConfigMaps, b.ns, "app", hasMark)
		if got := cm.GetLabels()["edge.kubestellar.io/downsynced-by"]; got != b.target {
			t.Errorf("%s/app is labelled for %q, want %q: a syncer wrote a namespace its config does not select", b.ns, got, b.target)
		}
	}
	// Each syncer read its own config only (a config read by both would be merged into both
	// selections, and its heartbeat and conditions written by both), and each config has a heartbeat.
	for _, b := range boxes {
		f.waitFor(f.up, gvrSyncerConfig, "", b.config, func(o *unstructured.Unstructured) (bool, string) {
			beat, _, _ := unstructured.NestedString(o.Object, "status", "lastSyncerHeartbeatTime")
			return beat != "", "no heartbeat yet"
		})
		log := b.p.logText()
		if !strings.Contains(log, `"Selection changed"`) || !strings.Contains(log, "configs=1 ") || strings.Contains(log, "configs=2 ") {
			t.Errorf("syncer %s did not read exactly its own config (its log's selection lines must say configs=1)", b.target)
		}
	}
	// Both namespaces stay at the edge, with their objects, while both syncers run.
	consistently(t, 5*time.Second, "both edge namespaces stay", func() (bool, string) {
		for _, b := range boxes {
			ns, err := f.get(f.down, gvrNamespaces, "", b.ns)
			if err != nil || ns.GetDeletionTimestamp() != nil {
				return false, fmt.Sprintf("namespace %s: %v (deleting: %v)", b.ns, err, err == nil && ns.GetDeletionTimestamp() != nil)
			}
		}
		return true, ""
	})
}
