package status

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/framework/fakeinformers"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/selection"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

type view struct {
	hasStatus, returns bool
	// fields, when set, are the only status fields returned.
	fields []string
}

func (v view) Resource(gr schema.GroupResource) (Resource, bool) {
	return Resource{Upstream: widgets, Downstream: widgets, UpstreamHasStatus: v.hasStatus}, gr == widgets.GroupResource()
}
func (v view) StatusProjection(selection.Object) mapping.StatusProjection {
	return mapping.StatusProjection{All: v.returns && v.fields == nil, Fields: v.fields}
}

func widget(status map[string]interface{}, downsynced bool) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget",
		"spec": map[string]interface{}{"size": int64(1)}}}
	o.SetNamespace("ns")
	o.SetName("w")
	o.SetResourceVersion("3")
	if status != nil {
		o.Object["status"] = status
	}
	if downsynced {
		o.SetAnnotations(map[string]string{mapping.DownsyncedAnnotation: "Widget/ns/w"})
	} else {
		o.SetLabels(map[string]string{mapping.ExecutingPrefix + "edge-1": "true"}) // edge-1 runs it
	}
	return o
}

// withAnnotation adds an annotation to o.
func withAnnotation(o *unstructured.Unstructured, key, value string) *unstructured.Unstructured {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	o.SetAnnotations(a)
	return o
}

// runBy makes an upstream widget name the given sync targets as running it, and no other.
func runBy(o *unstructured.Unstructured, targets ...string) *unstructured.Unstructured {
	l := map[string]string{}
	for _, t := range targets {
		l[mapping.ExecutingPrefix+t] = "true"
	}
	o.SetLabels(l)
	return o
}

// withLabel adds a label to o.
func withLabel(o *unstructured.Unstructured, key, value string) *unstructured.Unstructured {
	l := o.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[key] = value
	o.SetLabels(l)
	return o
}

// generation gives o metadata.generation g and, when applied is not "", the upstream generation its
// edge copy carries.
func generation(o *unstructured.Unstructured, g int64, applied string) *unstructured.Unstructured {
	o.SetGeneration(g)
	if applied != "" {
		a := o.GetAnnotations()
		a[mapping.UpstreamGenerationAnnotation] = applied
		o.SetAnnotations(a)
	}
	return o
}

// refusals are the edge's refusals by generation of the one key the tests use.
type refusals map[int64]string

func (r refusals) Refused(framework.Key) (int64, string, bool) {
	for g, msg := range r {
		return g, msg, true
	}
	return 0, "", false
}

func TestProcess(t *testing.T) {
	ready := map[string]interface{}{"phase": "Ready"}
	observed := func(g int64) map[string]interface{} {
		return map[string]interface{}{"phase": "Ready", "observedGeneration": g}
	}
	for _, tc := range []struct {
		name               string
		down, up           *unstructured.Unstructured
		hasStatus, returns bool
		fields             []string
		refused            refusals
		want               string
		// generation is the status.observedGeneration written (0: none).
		generation int64
	}{
		{name: "subresource: status written through it", down: widget(ready, true), up: widget(nil, false), hasStatus: true, returns: true, want: "update/status"},
		{name: "no subresource: plain update", down: widget(ready, true), up: widget(nil, false), returns: true, want: "update/"},
		{name: "equal: nothing written", down: widget(ready, true), up: widget(ready, false), hasStatus: true, returns: true, want: ""},
		{name: "switched off: no longer named as running it", down: widget(ready, true), up: widget(nil, false), hasStatus: true, want: "patch/"},
		{name: "switched off, not named: nothing", down: widget(ready, true), up: runBy(widget(nil, false)), hasStatus: true, want: ""},
		{name: "not named yet: named first", down: widget(ready, true), up: runBy(widget(nil, false)), hasStatus: true, returns: true, want: "patch/"},
		{name: "another target runs it too: not returned", down: widget(ready, true), up: runBy(widget(nil, false), "edge-1", "edge-2"),
			hasStatus: true, returns: true, want: ""},
		{name: "edge copy gone: no longer named", up: widget(nil, false), hasStatus: true, returns: true, want: "patch/"},
		{name: "edge object not downsynced", down: widget(ready, false), up: widget(nil, false), hasStatus: true, returns: true, want: ""},
		{name: "no status at the edge", down: widget(nil, true), up: widget(ready, false), hasStatus: true, returns: true, want: ""},
		{name: "gone upstream", down: widget(ready, true), hasStatus: true, returns: true, want: ""},
		{name: "generations in upstream terms", down: generation(widget(observed(1), true), 1, "3"), up: generation(widget(observed(1), false), 3, ""),
			hasStatus: true, returns: true, want: "update/status", generation: 3},
		{name: "no subresource: generations as the edge has them", down: generation(widget(observed(1), true), 1, "3"), up: generation(widget(nil, false), 3, ""),
			returns: true, want: "update/", generation: 1},
		{name: "a refused generation: observed, and Stalled", down: generation(widget(observed(1), true), 1, "3"), up: generation(widget(observed(3), false), 4, ""),
			refused: refusals{4: "denied"}, hasStatus: true, returns: true, want: "update/status", generation: 4},
		{name: "a stale refusal: as returned", down: generation(widget(observed(1), true), 1, "4"), up: generation(widget(nil, false), 4, ""),
			refused: refusals{3: "denied"}, hasStatus: true, returns: true, want: "update/status", generation: 4},
		{name: "a refused update of a copy without status: said", down: generation(widget(nil, true), 1, "3"), up: generation(widget(nil, false), 4, ""),
			refused: refusals{4: "denied"}, hasStatus: true, returns: true, want: "update/status", generation: 4},
		{name: "a copy without status: another's status upstream left alone", down: generation(widget(nil, true), 1, "3"), up: generation(widget(observed(3), false), 3, ""),
			refused: refusals{}, hasStatus: true, returns: true, want: ""},
		{name: "projected: the fields listed", down: generation(widget(observed(1), true), 1, "3"), up: generation(widget(ready, false), 3, ""),
			hasStatus: true, fields: []string{"observedGeneration"}, want: "update/status", generation: 3},
		{name: "projected: equal in what is returned", down: widget(map[string]interface{}{"phase": "Ready", "other": "x"}, true), up: widget(ready, false),
			hasStatus: true, fields: []string{"phase"}, want: ""},
		{name: "no subresource: an empty status is not returned", down: widget(map[string]interface{}{}, true), up: widget(nil, false),
			returns: true, want: ""},
		{name: "no subresource: nothing of what is listed", down: widget(ready, true), up: widget(nil, false),
			fields: []string{"replicas"}, want: ""},
		{name: "asks what the edge runs, no status: told", down: withAnnotation(widget(nil, true), mapping.UpstreamResourceVersionAnnotation, "7"),
			up: withAnnotation(runBy(widget(nil, false)), mapping.ReportAppliedAnnotation, "true"), returns: true, want: "patch/"},
		{name: "asks what the edge runs, told already: nothing", down: withAnnotation(widget(nil, true), mapping.UpstreamResourceVersionAnnotation, "7"),
			up:      withLabel(withAnnotation(runBy(widget(nil, false)), mapping.ReportAppliedAnnotation, "true"), mapping.AppliedPrefix+"edge-1", "7"),
			returns: true, want: ""},
		{name: "does not ask: not told", down: withAnnotation(widget(nil, true), mapping.UpstreamResourceVersionAnnotation, "7"),
			up: runBy(widget(nil, false)), returns: true, want: ""},
		{name: "asks, its status says it: not told", down: generation(widget(observed(1), true), 1, "3"),
			up:        generation(withAnnotation(widget(observed(1), false), mapping.ReportAppliedAnnotation, "true"), 3, ""),
			hasStatus: true, returns: true, want: "update/status", generation: 3},
		{name: "asks, its status not returned: told", down: withAnnotation(generation(widget(observed(1), true), 1, "3"), mapping.UpstreamResourceVersionAnnotation, "9"),
			up:        generation(withAnnotation(runBy(widget(observed(1), false)), mapping.ReportAppliedAnnotation, "true"), 3, ""),
			hasStatus: true, want: "patch/"},
		{name: "equal in upstream terms: nothing written", down: generation(widget(observed(2), true), 2, "4"), up: generation(widget(observed(4), false), 4, ""),
			hasStatus: true, returns: true, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var upObjs []runtime.Object
			var upStore []*unstructured.Unstructured
			if tc.up != nil {
				upObjs = append(upObjs, tc.up.DeepCopy())
				upStore = append(upStore, tc.up)
			}
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{widgets: "WidgetList"}, upObjs...)
			c, err := NewController(Config{
				Upstream: client, Metrics: metrics.New(prometheus.NewRegistry()), Selection: view{tc.hasStatus, tc.returns, tc.fields}, Refusals: tc.refused, SyncTargetName: "edge-1",
				UpstreamInformers: fakeinformers.Informers{widgets: fakeinformers.With(upStore...)}, DownstreamInformers: fakeinformers.Informers{widgets: fakeinformers.With(tc.down)},
			})
			if err != nil {
				t.Fatal(err)
			}
			cached := tc.up
			var before string
			if cached != nil {
				b, _ := cached.MarshalJSON()
				before = string(b)
			}
			if _, err := c.process(context.Background(), framework.Key{GVR: widgets, Namespace: "ns", Name: "w"}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range client.Actions() {
				got = append(got, a.GetVerb()+"/"+a.GetSubresource())
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("writes %v, want %q", got, tc.want)
			}
			if cached != nil {
				if b, _ := cached.MarshalJSON(); string(b) != before {
					t.Error("the cached upstream object was mutated")
				}
			}
			if tc.want != "" && tc.want != "patch/" {
				o := client.Actions()[0].(interface{ GetObject() runtime.Object }).GetObject().(*unstructured.Unstructured)
				g, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
				wantPhase := "Ready" // the edge's
				if !carriesStatus(tc.down) || (tc.fields != nil && !slices.Contains(tc.fields, "phase")) {
					wantPhase = "" // none, or not returned
				}
				if p, _, _ := unstructured.NestedString(o.Object, "status", "phase"); p != wantPhase || g != tc.generation {
					t.Errorf("written status %v, want phase %q and observedGeneration %d", o.Object["status"], wantPhase, tc.generation)
				}
				stalled := false
				conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
				for _, c := range conds {
					m, _ := c.(map[string]interface{})
					msg, _ := m["message"].(string)
					stalled = stalled || (m["type"] == "Stalled" && m["status"] == "True" && strings.Contains(msg, "sync target edge-1 refuses generation 4: denied"))
				}
				if stalled != (tc.refused != nil && tc.generation == 4 && tc.refused[4] != "") {
					t.Errorf("written conditions %v: Stalled %v, want it for a refusal of the current generation only", conds, stalled)
				}
				if s, _, _ := unstructured.NestedInt64(o.Object, "spec", "size"); s != 1 || o.GetAnnotations()[mapping.DownsyncedAnnotation] != "" {
					t.Errorf("status return changed more than status: %v", o.Object)
				}
			}
		})
	}
}

// TestProcessRefusedCreate: an object the edge refuses to create has no edge copy, and its upstream
// status says why (no target is named as running it: none does).
func TestProcessRefusedCreate(t *testing.T) {
	o := processOnce(t, generation(runBy(widget(nil, false)), 1, ""), nil, refusals{1: "denied"})
	_, reason, msg := conditionOf(o, "Stalled")
	if g, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration"); g != 1 || reason != "EdgeRefused" || !strings.Contains(msg, "(it has no copy)") {
		t.Errorf("written status %v", o.Object["status"])
	}
}

func conditionOf(o *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]interface{}); m["type"] == typ {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
		}
	}
	return status, reason, message
}

// TestProcessRefusalTakenBack: once the edge takes the object, a refusal said upstream goes even
// when the edge copy has no status of its own to return.
func TestProcessRefusalTakenBack(t *testing.T) {
	up := generation(widget(map[string]interface{}{"observedGeneration": int64(1), "conditions": []interface{}{
		map[string]interface{}{"type": "Stalled", "status": "True", "message": mapping.RefusalPrefix("edge-1") + "1: denied"}}}, false), 1, "")
	o := processOnce(t, up, generation(widget(nil, true), 1, "1"), refusals{})
	if st, _, _ := conditionOf(o, "Stalled"); st != "" || o.Object["status"] == nil {
		t.Errorf("written status %v: want the refusal gone", o.Object["status"])
	}
	if _, has, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration"); has {
		t.Errorf("written status %v: the refusal's observedGeneration stayed", o.Object["status"])
	}
}

// processOnce runs the controller once on the widget's key, with up upstream and down (nil: none) at
// the edge, as edge-1 with the edge's refusals r, and returns the one status write it made.
func processOnce(t *testing.T, up, down *unstructured.Unstructured, r refusals) *unstructured.Unstructured {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgets: "WidgetList"}, up.DeepCopy())
	edge := fakeinformers.With()
	if down != nil {
		edge = fakeinformers.With(down)
	}
	c, err := NewController(Config{
		Upstream: client, Metrics: metrics.New(prometheus.NewRegistry()), Selection: view{hasStatus: true, returns: true},
		Refusals: r, SyncTargetName: "edge-1",
		UpstreamInformers: fakeinformers.Informers{widgets: fakeinformers.With(up)}, DownstreamInformers: fakeinformers.Informers{widgets: edge},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.process(context.Background(), framework.Key{GVR: widgets, Namespace: "ns", Name: "w"}); err != nil {
		t.Fatal(err)
	}
	if len(client.Actions()) != 1 {
		t.Fatalf("writes %v, want one status update", client.Actions())
	}
	return client.Actions()[0].(interface{ GetObject() runtime.Object }).GetObject().(*unstructured.Unstructured)
}

// TestReleaseWhenTheResourceLeavesTheSelection: an edge copy deleted after its resource left the
// selection (a leftover) releases its upstream object: one merge patch removing the label that names
// this target as running it.
func TestReleaseWhenTheResourceLeavesTheSelection(t *testing.T) {
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gadgets: "GadgetList", widgets: "WidgetList"})
	c, err := NewController(Config{
		Upstream: client, Metrics: metrics.New(prometheus.NewRegistry()), Selection: view{hasStatus: true, returns: true}, SyncTargetName: "edge-1",
		UpstreamInformers: fakeinformers.Informers{}, DownstreamInformers: fakeinformers.Informers{},
	})
	if err != nil {
		t.Fatal(err)
	}
	gone := widget(nil, true)
	gone.SetAPIVersion("example.com/v1")
	gone.SetKind("Gadget")
	gone.SetAnnotations(map[string]string{mapping.DownsyncedAnnotation: mapping.MarkOf(gone)})
	c.Handler(true, gadgets).OnDelete(gone)
	key := framework.Key{GVR: gadgets, Namespace: "ns", Name: "w"}
	if _, err := c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	actions := client.Actions()
	if len(actions) != 1 || actions[0].GetVerb() != "patch" || actions[0].GetResource() != gadgets {
		t.Fatalf("writes %v; want one patch of the gadget upstream", actions)
	}
	if patch := string(actions[0].(interface{ GetPatch() []byte }).GetPatch()); patch != `{"metadata":{"labels":{"executing.edge.kubestellar.io/edge-1":null}}}` {
		t.Errorf("patch %s", patch)
	}
	if _, err := c.process(context.Background(), key); err != nil || len(client.Actions()) != 1 {
		t.Errorf("processed again: %v, writes %v; want nothing more", err, client.Actions())
	}
	// An edge object of a selected resource is processed as any change, not released.
	c.Handler(true, widgets).OnDelete(widget(nil, true))
	if _, err := c.process(context.Background(), framework.Key{GVR: widgets, Namespace: "ns", Name: "w"}); err != nil || len(client.Actions()) != 1 {
		t.Errorf("a selected resource's edge copy gone (not in the upstream cache): %v, writes %v", err, client.Actions())
	}
}

// TestLabelForbiddenReturnsStatusAnyway: an identity that may not patch the upstream objects (made
// before status return labelled them) still gets their status returned.
func TestLabelForbiddenReturnsStatusAnyway(t *testing.T) {
	up := runBy(widget(nil, false))
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgets: "WidgetList"}, up.DeepCopy())
	client.PrependReactor("patch", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(widgets.GroupResource(), "w", errors.New("no patch"))
	})
	c, err := NewController(Config{
		Upstream: client, Metrics: metrics.New(prometheus.NewRegistry()), Selection: view{hasStatus: true, returns: true}, SyncTargetName: "edge-1",
		UpstreamInformers: fakeinformers.Informers{widgets: fakeinformers.With(up)}, DownstreamInformers: fakeinformers.Informers{widgets: fakeinformers.With(widget(map[string]interface{}{"phase": "Ready"}, true))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.process(context.Background(), framework.Key{GVR: widgets, Namespace: "ns", Name: "w"}); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb()+"/"+a.GetSubresource())
	}
	if strings.Join(verbs, ",") != "patch/,update/status" {
		t.Errorf("writes %v; want the refused label, then the status", verbs)
	}
}
