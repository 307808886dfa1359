package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/kubestellar/syncer/test/support"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/test/testenv"
)

var gvrHPAs = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}

// TestRetainFields: a field an entry retains is the edge's. The edge copy starts with the upstream
// value; a technician's change of it at the edge stays, through upstream changes of other fields,
// which still arrive; the syncer writes nothing for the retained change; once the entry no longer
// retains the field, the upstream value comes back. A retained path naming no field (a typo) is said
// once (Warning Event RetainedFieldAbsent).
func TestRetainFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.up, gvrConfigMaps, configMap(ns, "settings", map[string]interface{}{"mode": "normal", "level": "1"}))
	entry := resource("", "v1", "configmaps")
	entry["retainFields"] = []interface{}{"data.mode", "data.mdoe"}
	f.syncerConfig(f.name, nsScope([]string{ns}, entry))
	p := f.startSyncer(f.ownConfigs())
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", dataEquals("mode", "normal"))
	f.waitEvent(f.up, ns, "settings", "RetainedFieldAbsent", `retainFields "data.mdoe" names no field of this object`)
	p.waitSettled()

	updates := func() float64 {
		return p.metrics()[`kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="updated"}`]
	}
	before := updates()
	f.update(f.down, gvrConfigMaps, ns, "settings", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "hotfix", "data", "mode")
	})
	consistently(t, 3*time.Second, "the edge's change of a retained field stays", func() (bool, string) {
		o, err := f.get(f.down, gvrConfigMaps, ns, "settings")
		if err != nil {
			return false, err.Error()
		}
		mode, _, _ := unstructured.NestedString(o.Object, "data", "mode")
		return mode == "hotfix" && updates() == before, fmt.Sprintf("mode %q, %v updates since", mode, updates()-before)
	})

	f.update(f.up, gvrConfigMaps, ns, "settings", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "2", "data", "level")
		_ = unstructured.SetNestedField(o.Object, "changed-upstream", "data", "mode")
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", dataEquals("level", "2"))
	if o, err := f.get(f.down, gvrConfigMaps, ns, "settings"); err != nil {
		t.Fatal(err)
	} else if mode, _, _ := unstructured.NestedString(o.Object, "data", "mode"); mode != "hotfix" {
		t.Errorf("an upstream update changed the retained field at the edge to %q", mode)
	}

	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", dataEquals("mode", "changed-upstream"))
}

// TestAutoscalerOwnsReplicas: a HorizontalPodAutoscaler at the edge scales a downsynced Deployment
// (the edge's kube-controller-manager brings it up to the autoscaler's minimum, which needs no
// metrics), and a technician scales it with `kubectl scale`: the syncer, which applies the upstream
// replicas otherwise, fights neither, and changes to other fields upstream still arrive. Once the
// autoscaler goes, the upstream replicas come back.
func TestAutoscalerOwnsReplicas(t *testing.T) {
	if env.Node == nil {
		support.Skip(t, "the bed has no node (E2E_NODE=0)")
	}
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.up, gvrDeployments, workload("Deployment", ns, "web", 1, "", testAppContainer(testenv.TestAppImage, "sleep", "3600")))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("apps", "v1", "deployments")))
	p := f.startSyncer(f.ownConfigs())
	f.waitFor(f.down, gvrDeployments, ns, "web", replicasAre(1))

	f.create(f.down, gvrHPAs, obj("autoscaling/v2", "HorizontalPodAutoscaler", ns, "web", map[string]interface{}{"spec": map[string]interface{}{
		"scaleTargetRef": map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
		"minReplicas":    int64(2), "maxReplicas": int64(4),
	}}))
	f.waitForWithin(podTimeout, f.down, gvrDeployments, ns, "web", replicasAre(2))
	p.waitSettled()
	updates := func() float64 {
		return p.metrics()[`kubestellar_syncer_writes_total{direction="downsync",resource="deployments.apps",result="updated"}`]
	}
	before := updates()
	stays := func(n int64) {
		t.Helper()
		consistently(t, 5*time.Second, fmt.Sprintf("the edge's %d replicas stay", n), func() (bool, string) {
			o, err := f.get(f.down, gvrDeployments, ns, "web")
			if err != nil {
				return false, err.Error()
			}
			ok, why := replicasAre(n)(o)
			return ok && updates() == before, fmt.Sprintf("%s; %v updates since", why, updates()-before)
		})
	}
	stays(2)

	if out, err := kubectlCommand(f.ctx, env.Downstream.Kubeconfig, "scale", "deployment/web", "-n", ns, "--replicas=3"); err != nil {
		t.Fatalf("kubectl scale at the edge: %v\n%s", err, out)
	}
	stays(3)

	f.update(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) {
		a := o.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a["example.com/revision"] = "2"
		o.SetAnnotations(a)
	})
	f.waitFor(f.down, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		rev := o.GetAnnotations()["example.com/revision"]
		ok, why := replicasAre(3)(o)
		return rev == "2" && ok, fmt.Sprintf("annotation %q; %s", rev, why)
	})

	f.delete(f.down, gvrHPAs, ns, "web")
	f.waitFor(f.down, gvrDeployments, ns, "web", replicasAre(1))
}

// replicasAre checks a workload's spec.replicas.
func replicasAre(n int64) func(*unstructured.Unstructured) (bool, string) {
	return func(o *unstructured.Unstructured) (bool, string) {
		r, found, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		return found && r == n, "spec.replicas " + strconv.FormatInt(r, 10)
	}
}
