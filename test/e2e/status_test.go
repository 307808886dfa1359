package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var gvrJobs = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}

// withoutStatusSubresource turns widgetCRD into a CRD whose status is an ordinary field.
func withoutStatusSubresource(crd *unstructured.Unstructured) *unstructured.Unstructured {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		delete(v.(map[string]interface{}), "subresources")
	}
	_ = unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
	return crd
}

// writeStatus sets .status on a side, through the status subresource when there is one.
func (f *fixture) writeStatus(c clients, gvr schema.GroupVersionResource, namespace, name string, subresource bool, status map[string]interface{}) {
	f.t.Helper()
	o, err := f.get(c, gvr, namespace, name)
	if err != nil {
		f.t.Fatal(err)
	}
	o.Object["status"] = status
	client := c.dyn.Resource(gvr).Namespace(namespace)
	if subresource {
		_, err = client.UpdateStatus(f.ctx, o, metav1.UpdateOptions{})
	} else {
		_, err = client.Update(f.ctx, o, metav1.UpdateOptions{})
	}
	if err != nil {
		f.t.Fatalf("writing status of %s %s/%s: %v", gvr.Resource, namespace, name, err)
	}
}

func nestedEquals(want interface{}, path ...string) func(*unstructured.Unstructured) (bool, string) {
	return func(o *unstructured.Unstructured) (bool, string) {
		got, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("%v = %v, want %v", path, got, want)
	}
}

// TestStatusReturn: the status written at the edge comes back upstream for the kinds the original
// syncer failed on (Deployment, Service) and for Jobs and custom resources with and without a status
// subresource. Neither direction's writes trigger the other's (counted from the syncer's metrics).
func TestStatusReturn(t *testing.T) {
	f := newFixture(t)
	group := f.name + ".e2e.example.com"
	plainGroup := "plain-" + group
	for _, crd := range []*unstructured.Unstructured{widgetCRD(group, nil), withoutStatusSubresource(widgetCRD(plainGroup, nil))} {
		name := crd.GetName()
		f.create(f.up, gvrCRDs, crd)
		t.Cleanup(func() { f.delete(f.up, gvrCRDs, "", name); f.delete(f.down, gvrCRDs, "", name) })
		f.waitFor(f.up, gvrCRDs, "", name, established)
	}
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	plainWidgets := schema.GroupVersionResource{Group: plainGroup, Version: "v1", Resource: "widgets"}
	ns := f.namespace("ns")
	f.create(f.up, gvrDeployments, deployment(ns, "web", 2))
	upLB := f.create(f.up, gvrServices, obj("v1", "Service", ns, "lb", map[string]interface{}{"spec": map[string]interface{}{
		"type": "LoadBalancer", "ports": []interface{}{map[string]interface{}{"port": int64(80)}}, "selector": map[string]interface{}{"app": "web"}}}))
	// A kube upstream defaults the Service's status to the edge's initial one ({loadBalancer: {}}); kcp
	// serves Services from a CRD, without defaults, so that initial status is one more to return.
	wantSvcStatusWrites := 1.0
	if _, defaulted := upLB.Object["status"]; !defaulted {
		wantSvcStatusWrites = 2
	}
	f.create(f.up, gvrJobs, obj("batch/v1", "Job", ns, "once", map[string]interface{}{"spec": map[string]interface{}{
		"template": map[string]interface{}{"spec": map[string]interface{}{
			"restartPolicy": "Never",
			"containers":    []interface{}{map[string]interface{}{"name": "main", "image": "registry.invalid/job:1"}},
		}}}}))
	for _, gvr := range []schema.GroupVersionResource{widgets, plainWidgets} {
		f.create(f.up, gvr, obj(gvr.Group+"/v1", "Widget", ns, "w", map[string]interface{}{"spec": map[string]interface{}{"size": int64(1)}}))
	}
	f.syncerConfig(f.name, map[string]interface{}{
		"namespaceScope": map[string]interface{}{"namespaces": []interface{}{ns}, "resources": []interface{}{
			resource("apps", "v1", "deployments"), resource("", "v1", "services"), resource("batch", "v1", "jobs"),
			resource(group, "v1", "widgets"), resource(plainGroup, "v1", "widgets"),
		}},
		"clusterScope": []interface{}{map[string]interface{}{"group": "apiextensions.k8s.io", "apiVersion": "v1", "resource": "customresourcedefinitions",
			"objects": []interface{}{"widgets." + group, "widgets." + plainGroup}}},
	})
	p := f.startSyncer()

	// Deployments and Jobs: the edge's controller manager writes their status.
	f.waitFor(f.down, gvrDeployments, ns, "web", hasMark)
	up := f.waitFor(f.up, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		r, _, _ := unstructured.NestedInt64(o.Object, "status", "replicas")
		return r == 2, fmt.Sprintf("upstream status.replicas = %d", r)
	})
	if g, _, _ := unstructured.NestedInt64(up.Object, "status", "observedGeneration"); g < 1 {
		t.Errorf("upstream Deployment status.observedGeneration = %d", g)
	}
	f.waitFor(f.up, gvrJobs, ns, "once", func(o *unstructured.Unstructured) (bool, string) {
		s, _, _ := unstructured.NestedString(o.Object, "status", "startTime")
		return s != "", "upstream Job has no status.startTime"
	})

	// Services and custom resources: the test plays the edge controller.
	f.waitFor(f.down, gvrServices, ns, "lb", hasMark)
	ingress := []interface{}{map[string]interface{}{"ip": "203.0.113.10"}}
	f.writeStatus(f.down, gvrServices, ns, "lb", true, map[string]interface{}{"loadBalancer": map[string]interface{}{"ingress": ingress}})
	f.waitFor(f.up, gvrServices, ns, "lb", func(o *unstructured.Unstructured) (bool, string) {
		got, _, _ := unstructured.NestedSlice(o.Object, "status", "loadBalancer", "ingress")
		if len(got) != 1 {
			return false, fmt.Sprintf("upstream ingress %v", got)
		}
		return got[0].(map[string]interface{})["ip"] == "203.0.113.10", fmt.Sprintf("upstream ingress %v", got)
	})
	for _, c := range []struct {
		gvr         schema.GroupVersionResource
		subresource bool
	}{{widgets, true}, {plainWidgets, false}} {
		f.waitFor(f.down, c.gvr, ns, "w", hasMark)
		f.writeStatus(f.down, c.gvr, ns, "w", c.subresource, map[string]interface{}{"phase": "Ready", "seen": int64(1)})
		f.waitFor(f.up, c.gvr, ns, "w", nestedEquals("Ready", "status", "phase"))
		f.writeStatus(f.down, c.gvr, ns, "w", c.subresource, map[string]interface{}{"phase": "Degraded"})
		upW := f.waitFor(f.up, c.gvr, ns, "w", nestedEquals("Degraded", "status", "phase"))
		if _, found, _ := unstructured.NestedFieldNoCopy(upW.Object, "status", "seen"); found {
			t.Errorf("%s: status.seen removed at the edge is still upstream", c.gvr.Group)
		}
		if s, _, _ := unstructured.NestedInt64(upW.Object, "spec", "size"); s != 1 {
			t.Errorf("%s: upstream spec.size changed to %d by status return", c.gvr.Group, s)
		}
	}

	// No ping-pong: once quiet, nobody writes. One status write per edge status of the Service the
	// upstream lacked, and no downsync update for any of it.
	writes := func() map[string]float64 {
		out := map[string]float64{}
		for k, v := range p.metrics() {
			if strings.HasPrefix(k, "kubestellar_syncer_writes_total{") {
				out[k] = v
			}
		}
		return out
	}
	p.waitSettled()
	// Quiet window: for its whole length, nobody writes.
	const quietWindow = 4 * time.Second
	before := writes()
	consistently(t, quietWindow, "no writes while nothing changes", func() (bool, string) {
		now := writes()
		return fmt.Sprint(now) == fmt.Sprint(before), fmt.Sprintf("writes went from %v to %v", before, now)
	})
	svcStatus := before[`kubestellar_syncer_writes_total{direction="status",resource="services",result="updated"}`]
	if svcStatus != wantSvcStatusWrites {
		t.Errorf("status writes for the Service = %v, want %v (%v)", svcStatus, wantSvcStatusWrites, before)
	}
	for _, r := range []string{"deployments.apps", "services", "jobs.batch", "widgets." + group, "widgets." + plainGroup} {
		if n := before[fmt.Sprintf(`kubestellar_syncer_writes_total{direction="downsync",resource=%q,result="updated"}`, r)]; n != 0 {
			t.Errorf("downsync updated %s %v times: status return made downsync write", r, n)
		}
	}
	for _, r := range []string{"widgets." + group, "widgets." + plainGroup} {
		if n := before[fmt.Sprintf(`kubestellar_syncer_writes_total{direction="status",resource=%q,result="updated"}`, r)]; n != 2 {
			t.Errorf("status writes for %s = %v, want 2 (two status changes)", r, n)
		}
	}
	// CRD status belongs to the upstream apiserver: never returned.
	for _, k := range []string{`kubestellar_syncer_writes_total{direction="status",resource="customresourcedefinitions.apiextensions.k8s.io",result="updated"}`,
		`kubestellar_syncer_writes_total{direction="status",resource="namespaces",result="updated"}`} {
		if before[k] != 0 {
			t.Errorf("%s = %v", k, before[k])
		}
	}
}

// TestStatusReturnSwitchedOff: a SyncerConfig with returnStatus: false downsyncs without writing
// status back; switching it on returns the status.
func TestStatusReturnSwitchedOff(t *testing.T) {
	f := newFixture(t)
	group := f.name + ".e2e.example.com"
	crd := widgetCRD(group, nil)
	for _, side := range []clients{f.up, f.down} {
		f.create(side, gvrCRDs, crd.DeepCopy())
		t.Cleanup(func() { f.delete(side, gvrCRDs, "", crd.GetName()) })
		f.waitFor(side, gvrCRDs, "", crd.GetName(), established)
	}
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	ns := f.namespace("ns")
	f.create(f.up, widgets, obj(group+"/v1", "Widget", ns, "w", map[string]interface{}{"spec": map[string]interface{}{"size": int64(1)}}))
	spec := nsScope([]string{ns}, resource(group, "v1", "widgets"))
	spec["returnStatus"] = false
	f.syncerConfig(f.name, spec)
	f.startSyncer()
	f.waitFor(f.down, widgets, ns, "w", hasMark)
	f.writeStatus(f.down, widgets, ns, "w", true, map[string]interface{}{"phase": "Ready"})
	consistently(t, 3*time.Second, "no status upstream while status return is off", func() (bool, string) {
		o, err := f.get(f.up, widgets, ns, "w")
		if err != nil {
			return false, err.Error()
		}
		_, found, _ := unstructured.NestedFieldNoCopy(o.Object, "status")
		return !found, fmt.Sprintf("upstream status %v", o.Object["status"])
	})
	spec["returnStatus"] = true
	f.syncerConfig(f.name, spec)
	f.waitFor(f.up, widgets, ns, "w", nestedEquals("Ready", "status", "phase"))
}
