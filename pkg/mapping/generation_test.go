package mapping

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// generationObject is an object of generation gen whose status is status; applied, when not "", is
// its UpstreamGenerationAnnotation.
func generationObject(gen int64, applied string, status map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment"}}
	u.SetName("web")
	u.SetGeneration(gen)
	if applied != "" {
		u.SetAnnotations(map[string]string{UpstreamGenerationAnnotation: applied})
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func observed(g int64, conditions ...map[string]interface{}) map[string]interface{} {
	s := map[string]interface{}{"replicas": int64(2)}
	if g >= 0 {
		s["observedGeneration"] = g
	}
	if len(conditions) > 0 {
		list := make([]interface{}, len(conditions))
		for i, c := range conditions {
			list[i] = c
		}
		s["conditions"] = list
	}
	return s
}

func condition(typ string, g int64) map[string]interface{} {
	c := map[string]interface{}{"type": typ, "status": "True"}
	if g >= 0 {
		c["observedGeneration"] = g
	}
	return c
}

// TestReturnedStatus: the edge's generations are returned in upstream terms: the upstream generation
// the edge copy carries once the edge has observed the copy's generation; before that the upstream's
// own lower value or none; never one the edge has not observed.
func TestReturnedStatus(t *testing.T) {
	for _, tc := range []struct {
		name     string
		down, up *unstructured.Unstructured
		want     interface{}
	}{{
		name: "observed: the upstream generation the copy carries",
		down: generationObject(1, "3", observed(1, condition("Available", 1))),
		up:   generationObject(3, "", nil),
		want: observed(3, condition("Available", 3)),
	}, {
		name: "observed past the edge's generation (never lower than the copy's)",
		down: generationObject(2, "4", observed(2, condition("Ready", 2))),
		up:   generationObject(5, "", observed(3)),
		want: observed(4, condition("Ready", 4)),
	}, {
		name: "behind: the upstream's own values, which the edge had observed",
		down: generationObject(3, "6", observed(2, condition("Available", 2), condition("Progressing", 2))),
		up:   generationObject(6, "", observed(5, condition("Available", 4))),
		want: observed(5, condition("Available", 4), condition("Progressing", -1)),
	}, {
		name: "behind with nothing upstream: left out",
		down: generationObject(2, "2", observed(1, condition("Available", 1))),
		up:   generationObject(2, "", nil),
		want: observed(-1, condition("Available", -1)),
	}, {
		name: "behind a recreated copy: the upstream's value is not below what it carries, left out",
		down: generationObject(2, "7", observed(1)),
		up:   generationObject(7, "", observed(7)),
		want: observed(-1),
	}, {
		name: "a copy written without the annotation: the upstream's value when it is a generation it had",
		down: generationObject(5, "", observed(5, condition("Available", 5))),
		up:   generationObject(3, "", observed(2, condition("Available", 9))),
		want: observed(2, condition("Available", -1)),
	}, {
		name: "an unreadable annotation counts as none",
		down: generationObject(1, "x", observed(1)),
		up:   generationObject(3, "", nil),
		want: observed(-1),
	}, {
		name: "an upstream resource without generations: as the edge has it",
		down: generationObject(4, "", observed(4, condition("Ready", 4))),
		up:   generationObject(0, "", nil),
		want: observed(4, condition("Ready", 4)),
	}, {
		name: "a status without generations",
		down: generationObject(1, "2", map[string]interface{}{"phase": "Active", "conditions": []interface{}{"odd"}}),
		up:   generationObject(2, "", nil),
		want: map[string]interface{}{"phase": "Active", "conditions": []interface{}{"odd"}},
	}, {
		name: "no status",
		down: generationObject(1, "2", nil),
		up:   generationObject(2, "", observed(2)),
		want: nil,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			down, up := tc.down.DeepCopy(), tc.up.DeepCopy()
			got := ReturnedStatus(down, up)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReturnedStatus (-want +got):\n%s", diff)
			}
			if !reflect.DeepEqual(down.Object, tc.down.Object) || !reflect.DeepEqual(up.Object, tc.up.Object) {
				t.Error("ReturnedStatus modified its input")
			}
		})
	}
}

// TestToDownstreamCarriesUpstreamGeneration: the edge copy carries the upstream generation, and a
// new upstream generation changes its digest (so it is applied, with the content it goes with);
// not for a resource without a status subresource (Options.Generation false).
func TestToDownstreamCarriesUpstreamGeneration(t *testing.T) {
	up := generationObject(3, "", nil)
	up.SetNamespace("ns")
	a, err := ToDownstream(up, Options{OwnerLabelValue: "edge", Generation: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.GetAnnotations()[UpstreamGenerationAnnotation]; got != "3" {
		t.Errorf("annotation %q, want 3", got)
	}
	up.SetGeneration(4)
	b, _ := ToDownstream(up, Options{OwnerLabelValue: "edge", Generation: true})
	if a.GetAnnotations()[HashAnnotation] == b.GetAnnotations()[HashAnnotation] {
		t.Error("a new upstream generation kept the digest")
	}
	if d, _ := ToDownstream(up, Options{OwnerLabelValue: "edge"}); d.GetAnnotations()[UpstreamGenerationAnnotation] != "" {
		t.Errorf("without Options.Generation: annotations %v", d.GetAnnotations())
	}
	up.SetGeneration(0)
	up.SetAnnotations(map[string]string{UpstreamGenerationAnnotation: "9"}) // not the source's to say
	c, _ := ToDownstream(up, Options{OwnerLabelValue: "edge", Generation: true})
	if _, ok := c.GetAnnotations()[UpstreamGenerationAnnotation]; ok {
		t.Errorf("an object without a generation: annotations %v", c.GetAnnotations())
	}
}

// TestRefusedStatus: a refused generation is observed with a condition that stops the waiting: a
// Deployment's Progressing False (ProgressDeadlineExceeded, replacing the edge's), another kind's
// Stalled True; the rest of the status is kept, and a condition already upstream keeps its times.
func TestRefusedStatus(t *testing.T) {
	now := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	deployment := generationObject(6, "", nil)
	edge := map[string]interface{}{"observedGeneration": int64(5), "readyReplicas": int64(1), "conditions": []interface{}{
		map[string]interface{}{"type": "Available", "status": "True"},
		map[string]interface{}{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
	}}
	got := RefusedStatus(runtime.DeepCopyJSONValue(edge), deployment, 6, "refused", now).(map[string]interface{})
	want := map[string]interface{}{"observedGeneration": int64(6), "readyReplicas": int64(1), "conditions": []interface{}{
		map[string]interface{}{"type": "Available", "status": "True"},
		map[string]interface{}{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "refused",
			"lastTransitionTime": "2026-11-27T15:00:00Z", "lastUpdateTime": "2026-11-27T15:00:00Z"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Deployment (-want +got):\n%s", diff)
	}
	// Written again later: the same condition upstream keeps its times, so nothing changes.
	deployment.Object["status"] = got
	again := RefusedStatus(runtime.DeepCopyJSONValue(edge), deployment, 6, "refused", now.Add(time.Hour))
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("written again (-want +got):\n%s", diff)
	}

	widget := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget"}}
	widget.SetGeneration(2)
	got = RefusedStatus(nil, widget, 2, "forbidden", now).(map[string]interface{})
	want = map[string]interface{}{"observedGeneration": int64(2), "conditions": []interface{}{
		map[string]interface{}{"type": "Stalled", "status": "True", "reason": "EdgeRefused", "message": "forbidden",
			"observedGeneration": int64(2), "lastTransitionTime": "2026-11-27T15:00:00Z"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("another kind, no status (-want +got):\n%s", diff)
	}
}

// TestRefusedStatusTimes: a refusal whose message changes (a retry meets another error text) keeps
// its transition time, as the status is the same; a Deployment's update time moves.
func TestRefusedStatusTimes(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	up := generationObject(6, "", nil)
	up.Object["status"] = RefusedStatus(nil, up, 6, "first", t0)
	got := RefusedStatus(nil, up, 6, "second", t0.Add(time.Minute)).(map[string]interface{})
	c := got["conditions"].([]interface{})[0].(map[string]interface{})
	if c["lastTransitionTime"] != "2026-11-27T15:00:00Z" || c["lastUpdateTime"] != "2026-11-27T15:01:00Z" || c["message"] != "second" {
		t.Errorf("condition %v: want the first transition time, a new update time and the new message", c)
	}
}

// TestWithoutRefusal: a refusal said for a sync target is taken back (its condition and the
// generation it claimed), other conditions and other targets' refusals stay; nothing to take back is
// false.
func TestWithoutRefusal(t *testing.T) {
	up := generationObject(2, "", map[string]interface{}{"observedGeneration": int64(2), "conditions": []interface{}{
		map[string]interface{}{"type": "Ready", "status": "False"},
		map[string]interface{}{"type": "Stalled", "status": "True", "message": RefusalPrefix("edge-1") + "2: denied"},
	}})
	got, ok := WithoutRefusal(up, "edge-1")
	want := map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": "False"}}}
	if diff := cmp.Diff(want, got); !ok || diff != "" {
		t.Errorf("WithoutRefusal %v (-want +got):\n%s", ok, diff)
	}
	if _, ok := WithoutRefusal(up, "edge-2"); ok {
		t.Error("another sync target's refusal taken back")
	}
	if _, ok := WithoutRefusal(generationObject(2, "", nil), "edge-1"); ok {
		t.Error("no status: something taken back")
	}
}
