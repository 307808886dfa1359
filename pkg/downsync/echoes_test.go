package downsync

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// TestEchoNotQueued: the edge event of downsync's own write (the resourceVersion the write returned)
// is not queued; any other event of the key is, and forgets the write.
func TestEchoNotQueued(t *testing.T) {
	h := newHarness(t, selecting("a"), objs(upCM, nsA), objs(nsA))
	handler := h.c.Handler(context.Background(), true, cmGVR)
	at := func(rv string) interface{} {
		o := owned(t, upCM)
		o.SetResourceVersion(rv)
		return o
	}
	h.c.echoes.wrote(key, "5")
	handler.OnAdd(at("5"), false)
	if n := h.c.queue.Len(); n != 0 {
		t.Fatalf("the echo of its own write was queued (%d keys)", n)
	}
	handler.OnAdd(at("5"), false) // forgotten: a second event at that version is not the echo
	if n := h.c.queue.Len(); n != 1 {
		t.Fatalf("queue holds %d keys, want 1", n)
	}

	h = newHarness(t, selecting("a"), objs(upCM, nsA), objs(nsA))
	handler = h.c.Handler(context.Background(), true, cmGVR)
	h.c.echoes.wrote(key, "5")
	edited := at("6").(*unstructured.Unstructured)
	edited.Object["data"] = map[string]interface{}{"k": "edited"}
	handler.OnUpdate(at("5"), edited) // someone else wrote after downsync
	if n := h.c.queue.Len(); n != 1 {
		t.Fatalf("a later version was not queued (%d keys)", n)
	}
	if h.c.echoes.echo(key, "5") {
		t.Error("the write is still remembered after another event of the key")
	}
	h.c.echoes.wrote(key, "7")
	handler.OnDelete(at("7"))
	if n := h.c.queue.Len(); n != 1 { // the key was already queued: still one
		t.Fatalf("queue holds %d keys after a deletion, want 1", n)
	}
	if h.c.echoes.echo(key, "7") {
		t.Error("the write is still remembered after its deletion")
	}
}

// TestEchoesShrink: the map of writes awaiting their echo is made anew once mostly drained after a
// large backlog (Go maps keep their peak size), keeping what is left.
func TestEchoesShrink(t *testing.T) {
	var e echoes
	for i := 0; i < 2000; i++ {
		e.wrote(framework.Key{Name: fmt.Sprint(i)}, "1")
	}
	for i := 0; i < 1900; i++ {
		if !e.echo(framework.Key{Name: fmt.Sprint(i)}, "1") {
			t.Fatalf("write %d not recognised", i)
		}
	}
	if len(e.rvs) != 100 || e.peak.Most() != 2000/8 {
		t.Errorf("after draining 1,900 of 2,000: %d entries, peak %d; want 100, and the map made anew at 250", len(e.rvs), e.peak.Most())
	}
	if !e.echo(framework.Key{Name: "1999"}, "1") {
		t.Error("an entry kept through the shrink was lost")
	}
}

// TestEchoForgottenWhenProcessedAgain: a write is an echo only while it is the key's last decision.
// Here the key is processed again on an edge cache that does not hold the write yet (the edge's
// informer re-listing after an outage) and the upstream object is gone: nothing to delete in the
// cache. When the re-list then brings the object at the written version, it must be queued, or the
// edge copy stays behind for good.
func TestEchoForgottenWhenProcessedAgain(t *testing.T) {
	h := newHarness(t, selecting("a"), objs(nsA), objs(nsA))
	h.c.echoes.wrote(key, "5")
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	o := owned(t, upCM)
	o.SetResourceVersion("5")
	h.c.Handler(context.Background(), true, cmGVR).OnAdd(o, false)
	if n := h.c.queue.Len(); n != 1 {
		t.Fatalf("the object the write made, arriving after the key was processed again, was not queued (%d keys)", n)
	}
}

// TestOrphans: an owned edge object whose upstream object is gone is an orphan, unless its key is
// being processed or it is kept on purpose (create-only); an owned object with its upstream object,
// and an unowned one, are not.
func TestOrphans(t *testing.T) {
	createOnly := owned(t, u("v1", "ConfigMap", "a", "kept", map[string]interface{}{"k": "v"}))
	createOnly.SetAnnotations(map[string]string{mapping.DownsyncedAnnotation: mapping.MarkOf(createOnly), mapping.OverwriteAnnotation: "false"})
	gone := owned(t, u("v1", "ConfigMap", "a", "gone", map[string]interface{}{"k": "v"}))
	h := newHarness(t, selecting("a"), objs(upCM, nsA), objs(nsA, owned(t, upCM), gone, createOnly))
	want := []framework.Key{{GVR: cmGVR, Namespace: "a", Name: "gone"}}
	if diff := cmp.Diff(want, h.c.Orphans()); diff != "" {
		t.Errorf("orphans (-want +got):\n%s", diff)
	}
	h.c.queue.Add(want[0])
	if got := h.c.Orphans(); len(got) != 0 {
		t.Errorf("a key being processed is an orphan: %v", got)
	}
}
