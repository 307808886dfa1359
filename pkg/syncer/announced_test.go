package syncer

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/framework/fakeinformers"
)

// crd is a CRD as the API caches keep it: name, resourceVersion, conditions.
func crd(name, rv string, established bool) *unstructured.Unstructured {
	status := "False"
	if established {
		status = "True"
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Established", "status": status}}}}}
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

// TestResolverRetriesWhileDiscoveryIsBehind: the edge's CRD is Established but its discovery does not
// show widgets yet (the apiserver's discovery lags its CRD status). No event will follow, so the
// resolve asks to be run again, later each time, until discovery shows it; then the resource is
// served downstream and nothing more is asked. A CRD discovery never shows is given up on after a
// bounded number of tries, and tried again when it changes.
func TestResolverRetriesWhileDiscoveryIsBehind(t *testing.T) {
	b := newBed()
	b.configs = []*unstructured.Unstructured{syncerConfig("w", clusterScope("example.com", "widgets"))}
	b.upDisc.widgets = true
	edgeCRDs := fakeinformers.With(crd("widgets.example.com", "1", false))
	b.r.apis = announced{up: fakeinformers.With(crd("widgets.example.com", "5", true)), down: edgeCRDs}

	s := b.resolve(t)
	if b.r.retryIn != 0 {
		t.Errorf("retry in %v while the edge's CRD is not Established (its own event brings the next resolve)", b.r.retryIn)
	}
	if r := s.resources[widgetGVR.GroupResource()]; r == nil || r.ServedDownstream() {
		t.Fatalf("widgets before the edge serves them: %+v", r)
	}

	edgeCRDs.Add(crd("widgets.example.com", "2", true))
	var waits []time.Duration
	for range announcedTries + 2 {
		b.resolve(t)
		waits = append(waits, b.r.retryIn)
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 30 * time.Second, 0, 0}
	if len(waits) != len(want) {
		t.Fatalf("waits %v", waits)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("retries while discovery is behind: %v, want %v", waits, want)
		}
	}

	edgeCRDs.Add(crd("widgets.example.com", "3", true)) // changed: tried again
	if b.resolve(t); b.r.retryIn != announcedRetryFirst {
		t.Errorf("after the CRD changed: retry in %v, want %v", b.r.retryIn, announcedRetryFirst)
	}
	b.downDisc.widgets = true
	s = b.resolve(t)
	if b.r.retryIn != 0 {
		t.Errorf("retry in %v once discovery shows widgets", b.r.retryIn)
	}
	if r := s.resources[widgetGVR.GroupResource()]; r == nil || !r.ServedDownstream() {
		t.Errorf("widgets not served downstream once discovered: %+v", r)
	}
	if _, ok := b.down.specs[widgetGVR]; !ok {
		t.Error("widgets not watched at the edge once discovered")
	}
}
