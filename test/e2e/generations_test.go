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

// TestStatusGenerations: the generations status return writes upstream are upstream generations the
// edge has observed, so that `kubectl rollout status` and `kubectl wait` upstream work as in one
// cluster, on a Deployment whose Pods really run on the edge's node:
//   - updated twice before the syncer starts (upstream generation 3, the edge copy created at 1):
//     rollout status upstream completes, status.observedGeneration 3;
//   - updated again: until the edge has observed its new generation, upstream reads 3 (or nothing),
//     never an edge number; then 4, and the rollout completes again;
//   - updated while the syncer is stopped, then started again: 5;
//   - an update the edge refuses (an admission policy at the edge): upstream observes generation 6
//     with Progressing False (ProgressDeadlineExceeded) naming the sync target and the edge's reason,
//     so `kubectl rollout status` upstream fails at once instead of waiting for ever; the rest of the
//     status is what the edge runs (generation 5). Once the edge takes it, generation 6 rolls out.
func TestStatusGenerations(t *testing.T) {
	if env.Node == nil {
		support.Skip(t, "the bed has no node (E2E_NODE=0)")
	}
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.up, gvrDeployments, workload("Deployment", ns, "web", 1, "", testAppContainer(testenv.TestAppImage, "sleep", "3600")))
	round := func(n string) func(*unstructured.Unstructured) {
		return func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, n, "spec", "template", "metadata", "annotations", "round")
		}
	}
	f.update(f.up, gvrDeployments, ns, "web", round("2"))
	f.update(f.up, gvrDeployments, ns, "web", round("3"))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("apps", "v1", "deployments")))
	p := f.startSyncer(f.ownConfigs()) // it runs beside other tests
	f.rolledOutUpstream(ns, "web", 3, 1)

	// The upstream's observedGeneration moves from 3 to 4 only once the edge observed its generation 2.
	f.update(f.up, gvrDeployments, ns, "web", round("4"))
	eventually(t, podTimeout, "upstream status.observedGeneration 4", func() (bool, string) {
		up, err := f.get(f.up, gvrDeployments, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		g, has, _ := unstructured.NestedInt64(up.Object, "status", "observedGeneration")
		switch {
		case has && g != 3 && g != 4:
			t.Fatalf("upstream status.observedGeneration %d: not an upstream generation the edge ran (3, then 4)", g)
		case g == 4:
			down, err := f.get(f.down, gvrDeployments, ns, "web")
			if err != nil {
				return false, err.Error()
			}
			// A sanity check only (the edge has usually moved on by the time it is read); the unit tests
			// of mapping.ReturnedStatus pin the translation.
			if eg, _, _ := unstructured.NestedInt64(down.Object, "status", "observedGeneration"); eg < 2 {
				t.Fatalf("upstream says generation 4 was observed while the edge observed its generation %d only", eg)
			}
			return true, ""
		}
		return false, fmt.Sprintf("upstream status.observedGeneration %d (present: %v)", g, has)
	})
	f.rolledOutUpstream(ns, "web", 4, 2)

	// A restart knows nothing but what the edge copy records.
	p.stop()
	f.update(f.up, gvrDeployments, ns, "web", round("5"))
	f.startSyncer(f.ownConfigs()) // stopped when the test ends
	f.rolledOutUpstream(ns, "web", 5, 3)

	// The edge refuses generation 6: upstream says so, and kubectl rollout status fails with it.
	lift := f.denyDeploymentsAtEdge(ns, "round", "6")
	f.update(f.up, gvrDeployments, ns, "web", round("6"))
	f.waitFor(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		status, reason, msg := conditionOf(o, "Progressing")
		return statusInt(o, "observedGeneration") == 6 && status == "False" && reason == "ProgressDeadlineExceeded" &&
				strings.Contains(msg, "sync target "+f.name+" refuses generation 6") && strings.Contains(msg, "refused by the edge's policy") &&
				strings.Contains(msg, "(it runs generation 5)"),
			fmt.Sprintf("upstream status %v", o.Object["status"])
	})
	out, err := kubectlCommand(f.ctx, upstream.Kubeconfig, "rollout", "status", "deployment/web", "-n", ns, "--timeout=30s")
	if err == nil || !strings.Contains(out, "exceeded its progress deadline") {
		t.Errorf("kubectl rollout status upstream of a generation the edge refuses: %v\n%s\nwant it to fail at once", err, out)
	}
	if up, err := f.get(f.up, gvrDeployments, ns, "web"); err != nil || statusInt(up, "readyReplicas") != 1 {
		t.Errorf("upstream status beside the refusal: %v %v; want the edge's running replica", up.Object["status"], err)
	}

	// Taken once the edge allows it (downsync retries with backoff, up to a minute apart): the edge's
	// own status replaces the refusal, and generation 6 rolls out.
	lift()
	f.waitForWithin(podTimeout, f.down, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		return o.GetGeneration() == 4, fmt.Sprintf("edge generation %d", o.GetGeneration())
	})
	f.waitFor(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		_, reason, _ := conditionOf(o, "Progressing")
		return reason != "ProgressDeadlineExceeded", fmt.Sprintf("upstream status %v", o.Object["status"])
	})
	f.rolledOutUpstream(ns, "web", 6, 4)
}

// rolledOutUpstream checks, with kubectl against the upstream, that a Deployment's rollout completes
// (`kubectl rollout status`) and that it is Available (`kubectl wait`), at upstream generation
// upGen, whose edge copy is at generation edgeGen; status.observedGeneration is upGen upstream.
func (f *fixture) rolledOutUpstream(namespace, name string, upGen, edgeGen int64) {
	f.t.Helper()
	start := time.Now()
	if out, err := kubectlCommand(f.ctx, upstream.Kubeconfig, "rollout", "status", "deployment/"+name, "-n", namespace,
		"--timeout="+podTimeout.String()); err != nil {
		up, _ := f.get(f.up, gvrDeployments, namespace, name)
		f.t.Fatalf("kubectl rollout status upstream of generation %d: %v\n%s\nupstream generation %d, status %v; edge pods: %s",
			upGen, err, out, up.GetGeneration(), up.Object["status"], podStates(f.ctx, namespace, "app="+name))
	}
	if out, err := kubectlCommand(f.ctx, upstream.Kubeconfig, "wait", "--for=condition=Available", "deployment/"+name, "-n", namespace,
		"--timeout=30s"); err != nil {
		f.t.Fatalf("kubectl wait --for=condition=Available upstream: %v\n%s", err, out)
	}
	f.t.Logf("generation %d rolled out upstream, as kubectl sees it, %.1fs after the check began", upGen, time.Since(start).Seconds())
	up, err := f.get(f.up, gvrDeployments, namespace, name)
	if err != nil {
		f.t.Fatal(err)
	}
	down, err := f.get(f.down, gvrDeployments, namespace, name)
	if err != nil {
		f.t.Fatal(err)
	}
	if up.GetGeneration() != upGen || statusInt(up, "observedGeneration") != upGen || down.GetGeneration() != edgeGen {
		f.t.Errorf("upstream generation %d, status.observedGeneration %d; edge generation %d; want %d, %d and %d",
			up.GetGeneration(), statusInt(up, "observedGeneration"), down.GetGeneration(), upGen, upGen, edgeGen)
	}
}

// denyDeploymentsAtEdge makes the edge refuse Deployments of namespace whose pod template carries
// the annotation key=value (denyAtEdge, the policy named after the test); lift lifts it.
func (f *fixture) denyDeploymentsAtEdge(namespace, key, value string) (lift func()) {
	f.t.Helper()
	expr := fmt.Sprintf("object.metadata.namespace != '%s' || !has(object.spec.template.metadata.annotations) || "+
		"!('%s' in object.spec.template.metadata.annotations) || object.spec.template.metadata.annotations['%s'] != '%s'",
		namespace, key, key, value)
	probe := workload("Deployment", namespace, "probe", 1, "", testAppContainer(testenv.TestAppImage))
	_ = unstructured.SetNestedField(probe.Object, value, "spec", "template", "metadata", "annotations", key)
	return f.denyAtEdge(f.name, "apps", []string{"deployments"}, expr, gvrDeployments, probe)
}
