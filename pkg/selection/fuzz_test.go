package selection

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
)

// FuzzParseAndMerge feeds arbitrary SyncerConfig JSON through the syncer's parsing and merging. It
// must never panic, and what parses must keep its promises: every object a namespacedObjects entry
// names explicitly is selected and named explicitly; every resource an entry names with a resource
// is requested; a config that names nothing is reported, never silently empty; and merging is
// independent of the configs' order.
func FuzzParseAndMerge(f *testing.F) {
	f.Add(`{"metadata":{"name":"a"},"spec":{"namespaceScope":{"namespaces":["ns"],"resources":[{"group":"","resource":"configmaps","apiVersion":"v1"}]}}}`)
	f.Add(`{"metadata":{"name":"b"},"spec":{"namespacedObjects":[{"group":"apps","resource":"deployments","objectsByNamespace":[{"namespace":"x","names":["web","*"]}]}],"clusterScope":[{"group":"","resource":"namespaces","objects":[]}]}}`)
	f.Add(`{"metadata":{"name":"c"},"spec":{"upsync":[{"apiGroup":"*","resources":["*"],"namespaces":["*"],"names":["*"]}],"returnStatus":false}}`)
	f.Add(`{"metadata":{"name":"d"},"spec":{"clusterScope":[{"resource":""}],"namespacedObjects":[{"resource":"x","objectsByNamespace":[{"namespace":"","names":["n"]}]}]}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var raw map[string]interface{}
		if err := json.Unmarshal([]byte(s), &raw); err != nil || raw == nil {
			return
		}
		raw["apiVersion"], raw["kind"] = "edge.kubestellar.io/v2alpha1", "SyncerConfig"
		cfg, err := edgev1.FromUnstructured(raw)
		if err != nil {
			return // malformed: reported by the resolver, never a panic
		}
		other := &edgev1.SyncerConfig{}
		other.Name = "zz-other"
		sel, problems := Merge([]*edgev1.SyncerConfig{cfg, other})
		swapped, _ := Merge([]*edgev1.SyncerConfig{other, cfg})
		if !sel.Equal(swapped) {
			t.Fatal("merging depends on the configs' order")
		}
		emptyReported := false
		for _, p := range problems {
			if p.Config == other.Name {
				emptyReported = true
			}
		}
		if !emptyReported {
			t.Fatal("an empty config was not reported")
		}
		requested := map[schema.GroupResource]bool{}
		for _, r := range sel.Requests() {
			requested[schema.GroupResource{Group: r.Group, Resource: r.Resource}] = true
		}
		for _, entry := range cfg.Spec.NamespacedObjects {
			gr := schema.GroupResource{Group: entry.Group, Resource: entry.Resource}
			if entry.Resource == "" || entry.Kind != "" || entry.LabelSelector != nil || entry.AnnotationSelector != nil {
				continue // named by kind, or narrowed by selectors: not every name is selected
			}
			if !requested[gr] {
				t.Fatalf("resource %s named but not requested", gr)
			}
			for _, byNS := range entry.ObjectsByNamespace {
				if byNS.Namespace == "" {
					continue
				}
				for _, name := range byNS.Names {
					ns := byNS.Namespace
					if ns == wildcard {
						ns = "any-namespace"
					}
					if !sel.Matches(obj(gr, ns, name)) || (name != wildcard && !sel.NamesExplicitly(obj(gr, ns, name))) {
						t.Fatalf("%s %s/%s is named but not selected (or not explicitly)", gr, ns, name)
					}
				}
			}
		}
	})
}
