package downsync

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/selection"
)

func pausedAt(o *unstructured.Unstructured, until string) *unstructured.Unstructured {
	o = o.DeepCopy()
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[mapping.PausedUntilAnnotation] = until
	o.SetAnnotations(a)
	return o
}

// A pause on the upstream object, on the edge copy or on the SyncerConfig holds every write for the
// object, its deletion included, until its end, when the key comes back; a malformed or past pause
// pauses nothing and is said once.
func TestPauses(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	changed := u("v1", "ConfigMap", "a", "x", map[string]interface{}{"k": "new"})
	edge := owned(t, upCM)
	pausedConfig := selecting("a")
	pausedConfig.sel, _ = selection.Merge([]*edgev1.SyncerConfig{{ObjectMeta: metav1.ObjectMeta{Name: "c",
		Annotations: map[string]string{mapping.PausedUntilAnnotation: "2026-11-27T09:30:00Z"}}, Spec: edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: metav1.GroupResource{Resource: "configmaps"}, APIVersion: "v1"}}},
	}}})
	for _, tc := range []struct {
		name       string
		v          *view
		up, down   []*unstructured.Unstructured
		resumeIn   time.Duration // 0: not paused
		event      string
		writesMade bool
	}{
		{name: "upstream object", v: selecting("a"), up: objs(pausedAt(changed, "2026-11-27T10:00:00Z"), nsA), down: objs(edge, nsA),
			resumeIn: time.Hour, event: "Normal Paused"},
		{name: "edge copy", v: selecting("a"), up: objs(changed, nsA), down: objs(pausedAt(edge, "2026-11-27T09:10:00Z"), nsA),
			resumeIn: 10 * time.Minute, event: "Normal Paused"},
		{name: "both: the later end", v: selecting("a"), up: objs(pausedAt(changed, "2026-11-27T10:00:00Z"), nsA),
			down: objs(pausedAt(edge, "2026-11-27T11:00:00Z"), nsA), resumeIn: 2 * time.Hour, event: "Normal Paused"},
		{name: "config", v: pausedConfig, up: objs(changed, nsA), down: objs(edge, nsA), resumeIn: 30 * time.Minute, event: "Normal Paused"},
		{name: "config holds a deletion", v: pausedConfig, up: objs(nsA), down: objs(edge, nsA), resumeIn: 30 * time.Minute, event: ""},
		{name: "malformed", v: selecting("a"), up: objs(pausedAt(changed, "tomorrow"), nsA), down: objs(edge, nsA),
			event: "Warning PauseInvalid", writesMade: true},
		{name: "past", v: selecting("a"), up: objs(pausedAt(changed, "2026-11-27T08:00:00Z"), nsA), down: objs(edge, nsA),
			event: "Warning PauseInvalid", writesMade: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.v, tc.up, tc.down)
			rec := record.NewFakeRecorder(10)
			h.c.writes = framework.NewWrites("downsync", framework.DefaultFieldManager, h.m, rec)
			h.c.cfg.Now = func() time.Time { return now }
			var told []framework.Key
			h.c.cfg.OnPauseChanged = func(k framework.Key) { told = append(told, k) }
			after, err := h.c.process(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			if wrote := len(h.actions()) > 0; wrote != tc.writesMade {
				t.Errorf("writes %v, want any: %v", h.actions(), tc.writesMade)
			}
			until, paused := h.c.PausedUntil(key)
			if tc.resumeIn > 0 {
				if !paused || until.Sub(now) != tc.resumeIn || after != mapping.ResumeAfter(now.Add(tc.resumeIn), now) || len(told) != 1 {
					t.Errorf("paused %v until %v, looked at again after %v, status told %d times; want paused for %v", paused, until, after, len(told), tc.resumeIn)
				}
			} else if paused {
				t.Errorf("paused until %v", until)
			}
			var events []string
			for len(rec.Events) > 0 {
				events = append(events, <-rec.Events)
			}
			if tc.event != "" && (len(events) != 1 || !strings.HasPrefix(events[0], tc.event)) {
				t.Errorf("events %q, want one %q", events, tc.event)
			}
			// Processed again: nothing said twice.
			if _, err := h.c.process(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			if len(rec.Events) > 0 {
				t.Errorf("said again: %q", <-rec.Events)
			}
			if !paused {
				return
			}
			// The pause ends: the object resumes, and says so.
			now = now.Add(tc.resumeIn)
			defer func() { now = now.Add(-tc.resumeIn) }()
			if _, err := h.c.process(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			if _, still := h.c.PausedUntil(key); still || len(h.actions()) == 0 || len(told) != 2 {
				t.Errorf("after the pause: still paused %v, writes %v, status told %d times", still, h.actions(), len(told))
			}
			if tc.event != "" && (len(rec.Events) == 0 || !strings.HasPrefix(<-rec.Events, "Normal Resumed")) {
				t.Error("no Resumed Event")
			}
		})
	}
}

// Under a report-only SyncerConfig, the edge copy of an object deleted upstream is not deleted: its
// deletion is reported.
func TestReportOnlyConfigHoldsDeletion(t *testing.T) {
	v := selecting("a")
	v.sel, _ = selection.Merge([]*edgev1.SyncerConfig{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: edgev1.SyncerConfigSpec{ReportOnly: true,
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: metav1.GroupResource{Resource: "configmaps"}, APIVersion: "v1"}}},
	}}})
	h := newHarness(t, v, objs(nsA), objs(owned(t, upCM), nsA))
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if a := h.actions(); len(a) != 0 {
		t.Errorf("writes under a report-only config: %v", a)
	}
	if e := h.c.cfg.Report.Entries(); len(e) != 1 || e[0].Action != "delete" {
		t.Errorf("report %+v: want the deletion", e)
	}
}
