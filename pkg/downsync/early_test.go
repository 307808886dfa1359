package downsync

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/framework"
)

// TestEarlyObjectsWrittenNeverDeleted: before the upstream cache has synced, an object streamed in
// early is created at the edge, while nothing is deleted (an owned edge object whose upstream
// counterpart has not streamed in yet may well be upstream) and the edge copy of an unselected early
// object is neither updated nor deleted before the complete cache shows it; once the cache syncs, the early copies go.
func TestEarlyObjectsWrittenNeverDeleted(t *testing.T) {
	other := u("v1", "ConfigMap", "a", "y", map[string]interface{}{"k": "v"})
	unselected := u("v1", "ConfigMap", "b", "z", map[string]interface{}{"k": "v"}) // namespace b is not selected
	stale := owned(t, unselected)
	stale.Object["data"] = map[string]interface{}{"k": "old"}
	nsB := u("v1", "Namespace", "", "b", nil)
	h := newHarness(t, selecting("a"), objs(nsA), objs(nsA, nsB, owned(t, other), stale))
	delete(h.upCache, cmGVR) // the upstream ConfigMap informer has not synced
	ctx := context.Background()

	if _, err := h.c.process(ctx, key); err != nil {
		t.Fatal(err)
	}
	if got := h.actions(); len(got) != 0 {
		t.Fatalf("before anything streamed in: actions %v, want none", got)
	}

	early := h.c.Early(context.Background(), cmGVR)
	early(upCM)
	early(unselected)
	if n := h.c.queue.Len(); n != 1 {
		t.Fatalf("queue holds %d keys after a selected and an unselected early object, want 1", n)
	}
	// Kept while selected, say, and deselected since: process must not write it either.
	h.c.early.add(cmGVR, unselected)
	for _, k := range []framework.Key{key, {GVR: cmGVR, Namespace: "a", Name: "y"}, {GVR: cmGVR, Namespace: "b", Name: "z"}} {
		if _, err := h.c.process(ctx, k); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	if diff := cmp.Diff([]string{"create configmaps"}, h.actions()); diff != "" {
		t.Errorf("actions (-want +got): only the create of a/x\n%s", diff)
	}

	h.c.EarlyDone(cmGVR)
	if o := h.c.early.get(cmGVR, "a", "x"); o != nil {
		t.Errorf("early copy kept after EarlyDone")
	}
}

// TestEarlyLimit: no more than EarlyLimit objects are kept; the early copy is the caller's object
// copied (the informer stores and transforms the original next).
func TestEarlyLimit(t *testing.T) {
	h := newHarness(t, selecting("a"), nil, objs(nsA))
	delete(h.upCache, cmGVR)
	early := h.c.Early(context.Background(), cmGVR)
	for i := 0; i < EarlyLimit; i++ { // another tenant's objects (namespace b) take no room
		early(u("v1", "ConfigMap", "b", fmt.Sprintf("cm-%d", i), map[string]interface{}{"k": "v"}))
	}
	var first *unstructured.Unstructured
	for i := 0; i <= EarlyLimit; i++ {
		o := u("v1", "ConfigMap", "a", fmt.Sprintf("cm-%d", i), map[string]interface{}{"k": "v"})
		if first == nil {
			first = o
		}
		early(o)
	}
	if h.c.early.n != EarlyLimit || h.c.queue.Len() != EarlyLimit {
		t.Errorf("kept %d, enqueued %d; want %d each", h.c.early.n, h.c.queue.Len(), EarlyLimit)
	}
	if h.c.early.get(cmGVR, "a", fmt.Sprintf("cm-%d", EarlyLimit)) != nil {
		t.Errorf("the object past the limit was kept")
	}
	first.Object["data"] = map[string]interface{}{"k": "changed"}
	if got := h.c.early.get(cmGVR, "a", "cm-0").Object["data"]; !cmp.Equal(got, map[string]interface{}{"k": "v"}) {
		t.Errorf("early copy shares the caller's object: data %v", got)
	}
	h.c.EarlyDone(cmGVR)
	if h.c.early.n != 0 {
		t.Errorf("count %d after EarlyDone, want 0", h.c.early.n)
	}
}

// TestEarlyIgnoredOnceSynced: a relist of a synced informer streams its objects again; they come
// through the informer's events as usual and are not kept.
func TestEarlyIgnoredOnceSynced(t *testing.T) {
	h := newHarness(t, selecting("a"), objs(upCM, nsA), objs(nsA))
	h.c.Early(context.Background(), cmGVR)(upCM)
	if h.c.early.n != 0 || h.c.queue.Len() != 0 {
		t.Errorf("synced informer: kept %d, enqueued %d; want none", h.c.early.n, h.c.queue.Len())
	}
}

// TestWaitingObjectEnqueuesItsNamespace: an object whose namespace is not at the edge yet puts the
// namespace's key in the queue (ahead of others: framework.Queue.AddWaited), so that the namespaces
// objects wait for are created first.
func TestWaitingObjectEnqueuesItsNamespace(t *testing.T) {
	h := newHarness(t, selecting("a"), objs(upCM, nsA), nil)
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if got := h.actions(); len(got) != 0 {
		t.Errorf("actions %v, want none while the namespace is missing", got)
	}
	if n := h.c.queue.Len(); n != 1 {
		t.Errorf("queue holds %d keys, want the namespace's", n)
	}
}
