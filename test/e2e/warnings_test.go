package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubestellar/syncer/test/support"

	"github.com/kubestellar/syncer/test/testenv"
)

// TestEdgeWarningsUpstream: why a workload does not run at the edge is shown by `kubectl describe`
// upstream, on the user's own object, with Pods that really fail on the edge's node:
//   - a Deployment whose image cannot be pulled: ErrImagePull or ImagePullBackOff, naming the sync
//     target and the Pod;
//   - a Deployment whose container exits at once: CrashLoopBackOff (a container state) or BackOff
//     (the kubelet's Event);
//   - a Deployment the syncer did not write, failing the same way in the same namespace: nothing
//     upstream.
func TestEdgeWarningsUpstream(t *testing.T) {
	if env.Node == nil {
		support.Skip(t, "the bed has no node (E2E_NODE=0)")
	}
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.up, gvrDeployments, workload("Deployment", ns, "pull", 1, "", testAppContainer(testenv.UnpullableImage)))
	f.create(f.up, gvrDeployments, workload("Deployment", ns, "crash", 1, "", testAppContainer(testenv.TestAppImage, "sh", "-c", "exit 3")))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("apps", "v1", "deployments")))
	p := f.startSyncer(f.ownConfigs())
	// Not the syncer's: in the namespace it made, failing as "pull" does.
	f.waitForWithin(podTimeout, f.down, gvrDeployments, ns, "pull", nil)
	f.create(f.down, gvrDeployments, workload("Deployment", ns, "local", 1, "", testAppContainer(testenv.UnpullableImage)))

	described := func(name string, reasons ...string) {
		t.Helper()
		eventually(t, podTimeout, "kubectl describe upstream of "+name+" shows "+strings.Join(reasons, " or "), func() (bool, string) {
			out, err := kubectlCommand(f.ctx, upstream.Kubeconfig, "describe", "deployment/"+name, "-n", ns)
			if err != nil {
				return false, fmt.Sprintf("%v: %s", err, out)
			}
			for _, r := range reasons {
				if strings.Contains(out, r) && strings.Contains(out, "sync target "+f.name+": Pod "+ns+"/"+name+"-") {
					return true, ""
				}
			}
			return false, out + "\nedge pods: " + podStates(f.ctx, ns, "")
		})
	}
	described("pull", "ErrImagePull", "ImagePullBackOff")
	described("crash", "CrashLoopBackOff", "BackOff")

	// The edge's own Deployment has failed as long as "pull" has by now; nothing of it went upstream.
	eventually(t, podTimeout, "the edge's own Deployment failing", func() (bool, string) {
		states := podStates(f.ctx, ns, "app=local")
		return strings.Contains(states, "ErrImagePull") || strings.Contains(states, "ImagePullBackOff"), states
	})
	events, err := kubectlCommand(f.ctx, upstream.Kubeconfig, "get", "events", "-n", ns, "-o", "custom-columns=OBJECT:.involvedObject.name,MESSAGE:.message")
	if err != nil {
		t.Fatalf("kubectl get events upstream: %v\n%s", err, events)
	}
	if strings.Contains(events, "local") {
		t.Errorf("upstream Events name the edge's own Deployment, which the syncer did not write:\n%s", events)
	}
	if told := p.metrics()[`kubestellar_syncer_edge_warnings_total{result="told"}`]; told < 2 {
		t.Errorf("kubestellar_syncer_edge_warnings_total{result=\"told\"} = %v; want at least the two told above", told)
	}
}
