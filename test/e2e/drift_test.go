package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/syncer/test/support"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/test/testenv"
)

// TestDriftReport: under edge.kubestellar.io/drift: Report, a technician's change at the edge (the
// command of a running Deployment's container, made with kubectl patch) stays. Upstream sees it
// within seconds: label drifted.edge.kubestellar.io/<target> with the drift's id, a Warning Event
// Drifted naming the field, the edge's value and kubectl as who changed it; the edge copy carries the
// hold's note for the technician; the gauge counts it. Upstream changes meanwhile are held. Once the
// drift is acknowledged upstream, the object converges: the upstream command and change arrive, the
// note and label go. A drift policy that is not one is said (Event DriftPolicyInvalid) and drift is
// corrected.
func TestDriftReport(t *testing.T) {
	if env.Node == nil {
		support.Skip(t, "the bed has no node (E2E_NODE=0)")
	}
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("ns")
	web := workload("Deployment", ns, "web", 1, "", testAppContainer(testenv.TestAppImage, "sleep", "3600"))
	web.SetAnnotations(map[string]string{"edge.kubestellar.io/drift": "Report"})
	f.create(f.up, gvrDeployments, web)
	odd := configMap(ns, "odd", map[string]interface{}{"mode": "one"})
	odd.SetAnnotations(map[string]string{"edge.kubestellar.io/drift": "Sometimes"})
	f.create(f.up, gvrConfigMaps, odd)
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("apps", "v1", "deployments"), resource("", "v1", "configmaps")))
	p := f.startSyncer(f.ownConfigs())
	f.waitFor(f.down, gvrDeployments, ns, "web", nil)
	f.waitFor(f.down, gvrConfigMaps, ns, "odd", dataEquals("mode", "one"))
	f.waitEvent(f.up, ns, "odd", "DriftPolicyInvalid", `drift policy "Sometimes" is neither Correct nor Report`)

	command := func(o *unstructured.Unstructured) string {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if len(containers) == 0 {
			return ""
		}
		return fmt.Sprint(containers[0].(map[string]interface{})["command"])
	}
	patch := `[{"op":"replace","path":"/spec/template/spec/containers/0/command","value":["sleep","3601"]}]`
	if out, err := kubectlCommand(f.ctx, env.Downstream.Kubeconfig, "patch", "deployment/web", "-n", ns, "--type=json", "-p", patch); err != nil {
		t.Fatalf("kubectl patch at the edge: %v\n%s", err, out)
	}
	label := "drifted.edge.kubestellar.io/" + f.name
	up := f.waitFor(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		return o.GetLabels()[label] != "", fmt.Sprintf("labels %v", o.GetLabels())
	})
	id := up.GetLabels()[label]
	f.waitEvent(f.up, ns, "web", "Drifted", `"path":"spec.template.spec.containers[name=app].command","edge":"[\"sleep\",\"3601\"]","manager":"kubectl-patch"`)
	down, err := f.get(f.down, gvrDeployments, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if note := down.GetAnnotations()["edge.kubestellar.io/drift-held"]; !strings.HasPrefix(note, id+" spec.template.spec.containers[name=app].command") {
		t.Errorf("the edge copy's note %q: want the drift's id %s and its field", note, id)
	}
	if n := p.metrics()[`kubestellar_syncer_drift_held_objects{}`]; n != 1 {
		t.Errorf("drift_held_objects %v, want 1", n)
	}

	// An upstream change is held: the hotfix stays, the change does not arrive.
	f.update(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) {
		a := o.GetAnnotations()
		a["example.com/revision"] = "2"
		o.SetAnnotations(a)
	})
	consistently(t, 3*time.Second, "the drifted edge copy keeps its hotfix, the upstream change held", func() (bool, string) {
		o, err := f.get(f.down, gvrDeployments, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		rev := o.GetAnnotations()["example.com/revision"]
		return command(o) == "[sleep 3601]" && rev == "", fmt.Sprintf("command %s, revision %q", command(o), rev)
	})

	// Acknowledged: the object converges.
	f.update(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) {
		a := o.GetAnnotations()
		a["edge.kubestellar.io/acknowledge-drift"] = f.name + "=" + id
		o.SetAnnotations(a)
	})
	f.waitFor(f.down, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		rev, note := o.GetAnnotations()["example.com/revision"], o.GetAnnotations()["edge.kubestellar.io/drift-held"]
		return command(o) == "[sleep 3600]" && rev == "2" && note == "", fmt.Sprintf("command %s, revision %q, note %q", command(o), rev, note)
	})
	f.waitFor(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		v, ok := o.GetLabels()[label]
		return !ok, "label " + v
	})
	f.waitEvent(f.up, ns, "web", "DriftReleased", "acknowledged upstream")
	if n := p.metrics()[`kubestellar_syncer_drift_held_objects{}`]; n != 0 {
		t.Errorf("drift_held_objects %v after the acknowledgement, want 0", n)
	}
}

// TestDriftUndone: under drift policy Report a technician scales an edge Deployment up (held), an
// upstream change arrives meanwhile (held too), and the technician scales it back to what the syncer
// wrote: the hold ends from the site's side, without an acknowledgement — DriftReleased upstream, the
// notes gone at the edge, the label gone upstream — and the held upstream change is applied. The pods
// of the Deployment never run (no node matches them): only the object matters.
func TestDriftUndone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("ns")
	web := workload("Deployment", ns, "web", 1, "", testAppContainer(testenv.TestAppImage, "sleep", "3600"))
	_ = unstructured.SetNestedStringMap(web.Object, map[string]string{"example.com/no-such-node": "x"}, "spec", "template", "spec", "nodeSelector")
	web.SetAnnotations(map[string]string{"edge.kubestellar.io/drift": "Report"})
	f.create(f.up, gvrDeployments, web)
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("apps", "v1", "deployments")))
	p := f.startSyncer(f.ownConfigs())
	f.waitFor(f.down, gvrDeployments, ns, "web", hasMark)

	scale := func(n string) {
		t.Helper()
		if out, err := kubectlCommand(f.ctx, env.Downstream.Kubeconfig, "scale", "deployment/web", "-n", ns, "--replicas="+n); err != nil {
			t.Fatalf("kubectl scale at the edge: %v\n%s", err, out)
		}
	}
	scale("3")
	label := "drifted.edge.kubestellar.io/" + f.name
	f.waitFor(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		return o.GetLabels()[label] != "", fmt.Sprintf("labels %v", o.GetLabels())
	})
	held := f.waitFor(f.down, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		a := o.GetAnnotations()
		return a["edge.kubestellar.io/drift-held"] != "" && a["edge.kubestellar.io/drift-put-back"] != "", fmt.Sprintf("annotations %v", a)
	})
	if pb := held.GetAnnotations()["edge.kubestellar.io/drift-put-back"]; pb != `[{"field":["spec","replicas"],"value":1}]` {
		t.Errorf("put-back note %s: want spec.replicas with the value the syncer wrote, 1", pb)
	}

	f.update(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) {
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["example.com/release"] = "2"
		o.SetLabels(l)
	})
	consistently(t, 2*time.Second, "the upstream change held while the edge is scaled up", func() (bool, string) {
		o, err := f.get(f.down, gvrDeployments, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		replicas, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		return replicas == 3 && o.GetLabels()["example.com/release"] == "", fmt.Sprintf("replicas %d, labels %v", replicas, o.GetLabels())
	})

	scale("1") // undone at the site
	f.waitFor(f.down, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		a := o.GetAnnotations()
		replicas, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		return o.GetLabels()["example.com/release"] == "2" && replicas == 1 && a["edge.kubestellar.io/drift-held"] == "" && a["edge.kubestellar.io/drift-put-back"] == "",
			fmt.Sprintf("replicas %d, labels %v, annotations %v", replicas, o.GetLabels(), a)
	})
	f.waitFor(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		v, ok := o.GetLabels()[label]
		return !ok, "label " + v
	})
	f.waitEvent(f.up, ns, "web", "DriftReleased", "the drifted fields were put back at the edge")
	if n := p.metrics()[`kubestellar_syncer_drift_held_objects{}`]; n != 0 {
		t.Errorf("drift_held_objects %v after the hotfix was undone, want 0", n)
	}
	// Drift again after the hold: held anew (the syncer took the field back and watches it again).
	scale("2")
	f.waitFor(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		return o.GetLabels()[label] != "", fmt.Sprintf("labels %v", o.GetLabels())
	})
}
