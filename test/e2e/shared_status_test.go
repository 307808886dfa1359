package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestStatusOfASharedObject: two sync targets, each with an edge of its own, run one upstream object
// (a LoadBalancer Service; the test plays each edge's load-balancer controller). Its status comes
// back only while exactly one of them runs it, so it never flaps between the edges:
//   - target a alone: a's status is returned, and the object names a as running it;
//   - target b too: both are named, neither returns status (a changed status at either edge stays
//     there), each syncer says so (Event StatusShared, condition ObjectsSynced on its SyncerConfig);
//   - b's config is deleted (b's copy goes, its resource no longer selected): b is no longer named,
//     and a's status comes back.
func TestStatusOfASharedObject(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	edge2, err := env.StartEdge(f.ctx, "edge-"+f.name)
	if err != nil {
		t.Fatal(err)
	}
	down2 := mustClients(edge2)
	ns := f.namespace("ns")
	f.create(f.up, gvrServices, obj("v1", "Service", ns, "lb", map[string]interface{}{"spec": map[string]interface{}{
		"type": "LoadBalancer", "ports": []interface{}{map[string]interface{}{"port": int64(80)}}}}))
	const targetLabel = "e2e.kubestellar.io/target"
	a, b := f.name+"-a", f.name+"-b"
	start := func(target, edgeKubeconfig string) *syncerProc {
		f.syncerConfig(target, nsScope([]string{ns}, resource("", "v1", "services")))
		f.update(f.up, gvrSyncerConfig, "", target, withLabel(targetLabel, target))
		return f.startSyncer(withArgs("--sync-target-name="+target, "--downstream-kubeconfig="+edgeKubeconfig, "--heartbeat-period=1s",
			"--syncer-config-selector="+testLabel+"="+f.name+","+targetLabel+"="+target))
	}
	ingress := func(ip string) map[string]interface{} {
		return map[string]interface{}{"loadBalancer": map[string]interface{}{"ingress": []interface{}{map[string]interface{}{"ip": ip}}}}
	}
	upIP := func(o *unstructured.Unstructured) string {
		list, _, _ := unstructured.NestedSlice(o.Object, "status", "loadBalancer", "ingress")
		if len(list) != 1 {
			return ""
		}
		ip, _ := list[0].(map[string]interface{})["ip"].(string)
		return ip
	}
	ipIs := func(want string) func(*unstructured.Unstructured) (bool, string) {
		return func(o *unstructured.Unstructured) (bool, string) {
			return upIP(o) == want, fmt.Sprintf("upstream ingress %q, labels %v", upIP(o), o.GetLabels())
		}
	}

	start(a, env.Downstream.Kubeconfig)
	f.waitFor(f.down, gvrServices, ns, "lb", hasMark)
	f.writeStatus(f.down, gvrServices, ns, "lb", true, ingress("203.0.113.1"))
	up := f.waitFor(f.up, gvrServices, ns, "lb", ipIs("203.0.113.1"))
	if _, ok := up.GetLabels()["executing.edge.kubestellar.io/"+a]; !ok {
		t.Errorf("upstream labels %v: want a named as running it", up.GetLabels())
	}

	// b runs it too: both named; the status upstream stays a's first one, whatever either edge says.
	start(b, edge2.Kubeconfig)
	f.waitFor(down2, gvrServices, ns, "lb", hasMark)
	f.writeStatus(down2, gvrServices, ns, "lb", true, ingress("203.0.113.2"))
	f.waitFor(f.up, gvrServices, ns, "lb", func(o *unstructured.Unstructured) (bool, string) {
		_, byA := o.GetLabels()["executing.edge.kubestellar.io/"+a]
		_, byB := o.GetLabels()["executing.edge.kubestellar.io/"+b]
		return byA && byB, fmt.Sprintf("labels %v", o.GetLabels())
	})
	f.writeStatus(f.down, gvrServices, ns, "lb", true, ingress("203.0.113.3"))
	consistently(t, 3*time.Second, "the status of a shared object stays", func() (bool, string) {
		o, err := f.get(f.up, gvrServices, ns, "lb")
		if err != nil {
			return false, err.Error()
		}
		return upIP(o) == "203.0.113.1", fmt.Sprintf("upstream ingress %q: a status was returned while two targets run it", upIP(o))
	})
	for _, target := range []string{a, b} {
		f.waitFor(f.up, gvrSyncerConfig, "", target, func(o *unstructured.Unstructured) (bool, string) {
			status, reason, msg := conditionOf(o, "ObjectsSynced")
			return status == "False" && reason == "SyncFailures" && strings.Contains(msg, "lb"), fmt.Sprintf("ObjectsSynced %s %s: %s", status, reason, msg)
		})
	}
	events, err := kubectlCommand(f.ctx, upstream.Kubeconfig, "get", "events", "-n", ns, "--field-selector=reason=StatusShared", "-o", "custom-columns=MSG:.message")
	if err != nil || !strings.Contains(events, "its status is returned only while one does") {
		t.Errorf("upstream Events StatusShared: %v\n%s", err, events)
	}

	// b's config goes: b's copy goes, b is no longer named, a's status comes back.
	f.delete(f.up, gvrSyncerConfig, "", b)
	f.waitFor(f.up, gvrServices, ns, "lb", func(o *unstructured.Unstructured) (bool, string) {
		_, byB := o.GetLabels()["executing.edge.kubestellar.io/"+b]
		return !byB && upIP(o) == "203.0.113.3", fmt.Sprintf("upstream ingress %q, labels %v", upIP(o), o.GetLabels())
	})
}

// TestTwoSyncersOneConfig: the syncers of two sync targets (each with an edge of its own) read one
// SyncerConfig. Each keeps its heartbeat and conditions in its own entry of status.syncTargets, the
// config's own conditions sum them up, and `kubectl get syncerconfig` lists both targets; once one
// stops, its entry goes stale and the sum is the other's.
func TestTwoSyncersOneConfig(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	edge2, err := env.StartEdge(f.ctx, "edge-"+f.name)
	if err != nil {
		t.Fatal(err)
	}
	ns := f.namespace("ns")
	f.create(f.up, gvrConfigMaps, configMap(ns, "app", map[string]interface{}{"k": "v"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	x, y := f.name+"-x", f.name+"-y"
	f.startSyncer(f.ownConfigs(), withArgs("--sync-target-name="+x, "--heartbeat-period=1s", "--heartbeat-refresh-period=2s"))
	py := f.startSyncer(f.ownConfigs(), withArgs("--sync-target-name="+y, "--heartbeat-period=1s", "--heartbeat-refresh-period=2s", "--downstream-kubeconfig="+edge2.Kubeconfig))

	entries := func(o *unstructured.Unstructured) map[string]string {
		out := map[string]string{}
		list, _, _ := unstructured.NestedSlice(o.Object, "status", "syncTargets")
		for _, e := range list {
			m, _ := e.(map[string]interface{})
			name, _ := m["name"].(string)
			conds, _ := m["conditions"].([]interface{})
			for _, c := range conds {
				if cm, _ := c.(map[string]interface{}); cm["type"] == "Ready" {
					out[name], _ = cm["status"].(string)
				}
			}
		}
		return out
	}
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		e := entries(o)
		status, _, msg := conditionOf(o, "Ready")
		return e[x] == "True" && e[y] == "True" && status == "True" && msg == "Ready for sync targets "+x+", "+y+".",
			fmt.Sprintf("entries %v, Ready %s %q", e, status, msg)
	})
	out, err := kubectlCommand(f.ctx, upstream.Kubeconfig, "get", "syncerconfig", f.name, "-o", "custom-columns=TARGETS:.status.syncTargets[*].name")
	if err != nil || !(strings.Contains(out, x+","+y) || strings.Contains(out, y+","+x)) {
		t.Errorf("kubectl get syncerconfig: %v\n%s\nwant both targets listed", err, out)
	}
	// y stops: its entry stays, stale; the config's conditions are x's.
	py.stop()
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		status, _, msg := conditionOf(o, "Ready")
		return status == "True" && msg != "Ready for sync targets "+x+", "+y+".", fmt.Sprintf("Ready %s %q", status, msg)
	})
}
