package downsync

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/framework/fakeinformers"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// TestTooLarge: an upstream object the cache holds as a TooLargeStub is not written, the edge copy is
// left as it is, and it is said once: a Warning Event ObjectTooLarge naming the sizes and a failure in
// ObjectsSynced; under the limit again, it is written and the failure goes.
func TestTooLarge(t *testing.T) {
	stub := mapping.TooLargeStub(upCM, 70000, 65536)
	h := newHarness(t, selecting("a"), objs(stub, nsA), objs(nsA, owned(t, upCM)))
	h.c.cfg.MaxObjectBytes = 65536
	events := record.NewFakeRecorder(10)
	h.c.writes = framework.NewWrites("downsync", framework.DefaultFieldManager, h.m, events)
	for i := 0; i < 2; i++ {
		if _, err := h.c.process(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	if n, problems := h.c.Withheld().Problems(5); len(h.actions()) != 0 || n != 1 || !strings.Contains(problems[0].Reason, "70000 bytes, over the 65536") {
		t.Errorf("actions %v, failures %d %v; want nothing written and one failure", h.actions(), n, problems)
	}
	if len(events.Events) != 1 || !strings.Contains(<-events.Events, "Warning ObjectTooLarge Sync target") {
		t.Errorf("%d Events, want one ObjectTooLarge", len(events.Events))
	}

	// Under the limit again: written, and the failure goes.
	changed := upCM.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, "w", "data", "k")
	h.upCache[cmGVR] = fakeinformers.With(changed)
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.c.Withheld().Problems(5); n != 0 || len(h.actions()) == 0 {
		t.Errorf("under the limit: actions %v, failures %d; want it written, no failure", h.actions(), n)
	}
}
