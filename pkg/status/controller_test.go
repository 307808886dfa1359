package status

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/framework/fakeinformers"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/selection"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

type view struct {
	hasStatus, returns bool
}

func (v view) Resource(gr schema.GroupResource) (Resource, bool) {
	return Resource{Upstream: widgets, Downstream: widgets, UpstreamHasStatus: v.hasStatus}, gr == widgets.GroupResource()
}
func (v view) ReturnsStatus(selection.Object) bool { return v.returns }

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
	}
	return o
}

func TestProcess(t *testing.T) {
	ready := map[string]interface{}{"phase": "Ready"}
	for _, tc := range []struct {
		name               string
		down, up           *unstructured.Unstructured
		hasStatus, returns bool
		want               string
	}{
		{name: "subresource: status written through it", down: widget(ready, true), up: widget(nil, false), hasStatus: true, returns: true, want: "update/status"},
		{name: "no subresource: plain update", down: widget(ready, true), up: widget(nil, false), returns: true, want: "update/"},
		{name: "equal: nothing written", down: widget(ready, true), up: widget(ready, false), hasStatus: true, returns: true, want: ""},
		{name: "switched off", down: widget(ready, true), up: widget(nil, false), hasStatus: true, want: ""},
		{name: "edge object not downsynced", down: widget(ready, false), up: widget(nil, false), hasStatus: true, returns: true, want: ""},
		{name: "no status at the edge", down: widget(nil, true), up: widget(ready, false), hasStatus: true, returns: true, want: ""},
		{name: "gone upstream", down: widget(ready, true), hasStatus: true, returns: true, want: ""},
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
				Upstream: client, Metrics: metrics.New(prometheus.NewRegistry()), Selection: view{tc.hasStatus, tc.returns},
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
			if tc.want != "" {
				o := client.Actions()[0].(interface{ GetObject() runtime.Object }).GetObject().(*unstructured.Unstructured)
				if p, _, _ := unstructured.NestedString(o.Object, "status", "phase"); p != "Ready" {
					t.Errorf("written status %v", o.Object["status"])
				}
				if s, _, _ := unstructured.NestedInt64(o.Object, "spec", "size"); s != 1 || o.GetAnnotations()[mapping.DownsyncedAnnotation] != "" {
					t.Errorf("status return changed more than status: %v", o.Object)
				}
			}
		})
	}
}
