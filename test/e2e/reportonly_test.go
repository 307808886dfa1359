package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestReportOnly: an edge that already runs 1,000 ConfigMaps, made there without the syncer, is
// attached with --report-only --adopt-existing to a mailbox holding the same 1,000, of which 10
// differ. The syncer writes nothing at the edge and reports exactly those 10, each with its diff
// (data.k, the edge's value and upstream's), on the SyncerConfig (status.syncTargets[].report,
// condition ReportOnly) and whole at /report. Restarted without --report-only, it applies the
// upstream state: the 10 change, all 1,000 carry its mark.
func TestReportOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", ns, nil)) // the edge's own; deleted with the test's
	const n = 1000
	differs := func(i int) bool { return i%100 == 7 }
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("cm-%04d", i)
		f.create(f.down, gvrConfigMaps, configMap(ns, name, map[string]interface{}{"k": fmt.Sprintf("v-%d", i)}))
		up := fmt.Sprintf("v-%d", i)
		if differs(i) {
			up = "changed"
		}
		f.create(f.up, gvrConfigMaps, configMap(ns, name, map[string]interface{}{"k": up}))
	}
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	start := time.Now()
	p := f.startSyncer(f.ownConfigs(), withArgs("--report-only", "--adopt-existing", "-v=2"))

	var report struct {
		Creates, Updates, Deletes, Conflicts, Refused int
		Objects                                       []struct {
			Action, Object string
			Changes        []struct{ Path, Edge, Upstream string }
		}
	}
	f.waitForWithin(2*time.Minute, f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		entries, _, _ := unstructured.NestedSlice(o.Object, "status", "syncTargets")
		for _, e := range entries {
			m := e.(map[string]interface{})
			if m["name"] != f.name || m["report"] == nil {
				continue
			}
			data, _ := json.Marshal(m["report"])
			_ = json.Unmarshal(data, &report)
			status, reason, _ := conditionOf(o, "ReportOnly")
			return report.Updates == 10 && status == "True" && reason == "ReportOnly", string(data)
		}
		return false, "no report"
	})
	t.Logf("report of %d objects (%d updates) on the SyncerConfig %.1fs after the syncer started (a heartbeat period is 20s)",
		n, report.Updates, time.Since(start).Seconds())
	if report.Creates+report.Deletes+report.Conflicts+report.Refused != 0 || len(report.Objects) != 10 {
		t.Errorf("report %+v: want exactly the 10 updates", report)
	}
	for _, o := range report.Objects {
		var i int
		if _, err := fmt.Sscanf(o.Object, "configmaps "+ns+"/cm-%04d", &i); err != nil || !differs(i) || o.Action != "update" ||
			len(o.Changes) != 1 || o.Changes[0].Path != "data.k" || o.Changes[0].Edge != fmt.Sprintf(`"v-%d"`, i) || o.Changes[0].Upstream != `"changed"` {
			t.Errorf("reported %+v", o)
		}
	}
	whole, err := httpGet("http://" + p.metricsAddr + "/report")
	if err != nil || strings.Count(whole, `"action": "update"`) != 10 {
		t.Errorf("/report: %v\n%.2000s", err, whole)
	}
	m := p.metrics()
	for _, result := range []string{"created", "updated", "handed-over", "deleted"} {
		if v := m[`kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="`+result+`"}`]; v != 0 {
			t.Errorf("writes_total %s = %v in report-only mode", result, v)
		}
	}
	if marked := edgeCopies(f, ns); marked != 0 {
		t.Errorf("%d edge ConfigMaps carry the syncer's mark in report-only mode", marked)
	}

	// Off: the upstream state is applied.
	p.stop()
	f.startSyncer(f.ownConfigs(), withArgs("--adopt-existing", "-v=2"))
	eventually(t, 2*time.Minute, "the 1,000 taken over and the 10 updated", func() (bool, string) {
		list, err := f.down.dyn.Resource(gvrConfigMaps).Namespace(ns).List(f.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		marked, changed := 0, 0
		for _, o := range list.Items {
			if o.GetAnnotations()["edge.kubestellar.io/downsynced"] != "" {
				marked++
			}
			if k, _, _ := unstructured.NestedString(o.Object, "data", "k"); k == "changed" {
				changed++
			}
		}
		return marked == n && changed == 10, fmt.Sprintf("%d marked, %d changed", marked, changed)
	})
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		status, _, _ := conditionOf(o, "ReportOnly")
		return status == "", "ReportOnly " + status
	})
}
