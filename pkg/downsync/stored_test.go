package downsync

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// TestEdgeStorageBound: what the syncer's copies hold at the edge is counted as they are written
// (each copy's size on it, as its mark) and, past --max-edge-bytes, a write that would grow it is
// held: not written, said once (Warning Event EdgeStorageFull, ObjectsSynced); a copy that shrinks
// still goes; copies seen at the edge by their mark (kept ones, after a restart) count, and a
// deleted one frees its room.
func TestEdgeStorageBound(t *testing.T) {
	ctx := context.Background()
	big := u("v1", "ConfigMap", "a", "y", map[string]interface{}{"k": strings.Repeat("v", 400)})
	keyY := framework.Key{GVR: cmGVR, Namespace: "a", Name: "y"}
	h := newHarness(t, selecting("a"), objs(upCM, big, nsA), objs(nsA))
	events := record.NewFakeRecorder(10)
	h.c.writes = framework.NewWrites("downsync", framework.DefaultFieldManager, h.m, events)
	h.c.stored = newStored(0, h.m.EdgeStoredBytes)
	if _, err := h.c.process(ctx, key); err != nil {
		t.Fatal(err)
	}
	written, err := h.down.Resource(cmGVR).Namespace("a").Get(ctx, "x", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	size, err := strconv.ParseInt(written.GetAnnotations()[mapping.StoredBytesAnnotation], 10, 64)
	if err != nil || size < 100 || h.c.stored.total != size || testutil.ToFloat64(h.m.EdgeStoredBytes) != float64(size) {
		t.Fatalf("stored-bytes mark %q, counted %d, gauge %v", written.GetAnnotations()[mapping.StoredBytesAnnotation], h.c.stored.total, testutil.ToFloat64(h.m.EdgeStoredBytes))
	}

	// Room for x and a little more: y (about 400 bytes more than x) does not fit beside x, and is held,
	// said once; alone it would.
	h.c.stored.limit = size + 450
	for i := 0; i < 2; i++ {
		if _, err := h.c.process(ctx, keyY); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.down.Resource(cmGVR).Namespace("a").Get(ctx, "y", metav1.GetOptions{}); err == nil {
		t.Error("y written past the bound")
	}
	n, problems := h.c.Full().Problems(5)
	if n != 1 || !strings.Contains(problems[0].Reason, "--max-edge-bytes") || len(events.Events) != 1 || !strings.Contains(<-events.Events, "Warning EdgeStorageFull") {
		t.Errorf("held: failures %d %v, %d Events; want one of each", n, problems, len(events.Events))
	}
	// x may always be written again at its size; once it is gone from the edge, y fits.
	if ok, _ := h.c.stored.reserve(key, size); !ok {
		t.Error("a copy that does not grow was held")
	}
	h.c.stored.set(key, 0)
	if _, err := h.c.process(ctx, keyY); err != nil {
		t.Fatal(err)
	}
	if _, err := h.down.Resource(cmGVR).Namespace("a").Get(ctx, "y", metav1.GetOptions{}); err != nil {
		t.Errorf("y not written with room for it: %v", err)
	}
	if n, _ := h.c.Full().Problems(5); n != 0 {
		t.Errorf("%d failures after y was written", n)
	}

	// A copy the edge cache shows with its mark counts (a kept one, after a restart): no room for x.
	h.c.stored = newStored(size+450, h.m.EdgeStoredBytes)
	h.c.stored.observe(keyY, big.DeepCopy()) // no mark: not counted
	if h.c.stored.total != 0 {
		t.Errorf("a copy without a mark counted %d", h.c.stored.total)
	}
	marked := big.DeepCopy()
	marked.SetAnnotations(map[string]string{mapping.StoredBytesAnnotation: strconv.FormatInt(size+450, 10)})
	h.c.stored.observe(keyY, marked)
	if ok, would := h.c.stored.reserve(key, size); ok {
		t.Errorf("x admitted beside a kept copy that fills the bound: would hold %d over %d", would, h.c.stored.limit)
	}
}

// TestEdgeStorageCountsOwnCopies: the edge's caches hold other syncers' copies too (every Namespace
// is watched): only this syncer's count.
func TestEdgeStorageCountsOwnCopies(t *testing.T) {
	h := newHarness(t, selecting("a"), objs(nsA), objs(nsA))
	handler := h.c.Handler(context.Background(), true, cmGVR)
	copyOf := func(owner string) *unstructured.Unstructured {
		d := owned(t, upCM)
		d.SetLabels(map[string]string{mapping.OwnerLabel: owner})
		ann := d.GetAnnotations()
		ann[mapping.StoredBytesAnnotation] = "1000"
		d.SetAnnotations(ann)
		return d
	}
	handler.OnAdd(copyOf("another-target"), false)
	if h.c.stored.total != 0 {
		t.Errorf("another syncer's copy counted: %d", h.c.stored.total)
	}
	handler.OnAdd(copyOf("t"), false)
	if h.c.stored.total != 1000 {
		t.Errorf("this syncer's copy counted %d, want 1000", h.c.stored.total)
	}
	handler.OnDelete(copyOf("t"))
	if h.c.stored.total != 0 {
		t.Errorf("after its deletion: %d", h.c.stored.total)
	}
}
