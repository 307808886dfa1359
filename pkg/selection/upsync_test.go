package selection

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/problem"
)

func TestUpsyncMatches(t *testing.T) {
	sel, _ := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{Upsync: []edgev1.UpsyncSet{
		{APIGroup: "wgpolicyk8s.io", Resources: []string{"policyreports", "clusterpolicyreports"}, Namespaces: []string{"policy"}, Names: []string{"*"}},
		{APIGroup: "", Resources: []string{"*"}, Namespaces: []string{"*"}, Names: []string{"edge-report"}},
		{APIGroup: "example.com", Resources: []string{"widgets"}, Namespaces: []string{}, Names: []string{"*"}}, // no namespace: nothing namespaced
	}})})
	polr := schema.GroupResource{Group: "wgpolicyk8s.io", Resource: "policyreports"}
	cpolr := schema.GroupResource{Group: "wgpolicyk8s.io", Resource: "clusterpolicyreports"}
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	for _, tc := range []struct {
		gr              schema.GroupResource
		namespace, name string
		want            bool
	}{
		{polr, "policy", "any", true},
		{polr, "kyverno", "any", false},
		{cpolr, "", "cluster-wide", true}, // cluster-scoped: namespaces do not apply
		{configMaps, "anywhere", "edge-report", true},
		{configMaps, "anywhere", "other", false},
		{deployments, "anywhere", "edge-report", false}, // other group
		{widgets, "ns", "w", false},
		{widgets, "", "w", true},
	} {
		if got := sel.UpsyncMatches(obj(tc.gr, tc.namespace, tc.name)); got != tc.want {
			t.Errorf("UpsyncMatches(%s, %q, %q) = %v, want %v", tc.gr, tc.namespace, tc.name, got, tc.want)
		}
	}
	if !sel.UpsyncMentions(polr, "") || sel.UpsyncMentions(deployments, "") {
		t.Error("UpsyncMentions wrong")
	}
	var none *Selection
	if none.UpsyncMatches(obj(polr, "policy", "x")) {
		t.Error("nil selection matches")
	}
}

func TestResolveUpsync(t *testing.T) {
	sel, _ := Merge([]*edgev1.SyncerConfig{cfg("a", edgev1.SyncerConfigSpec{Upsync: []edgev1.UpsyncSet{
		{APIGroup: "", Resources: []string{"*"}, Namespaces: []string{"*"}, Names: []string{"*"}},
		{APIGroup: "apps", Resources: []string{"deployments"}, Namespaces: []string{"x"}, Names: []string{"*"}},
		{APIGroup: "edge-only.example.com", Resources: []string{"gizmos"}, Namespaces: []string{"x"}, Names: []string{"*"}},
		{APIGroup: "apiextensions.k8s.io", Resources: []string{"customresourcedefinitions"}, Names: []string{"*"}},
		{APIGroup: "nowhere.example.com", Resources: []string{"things"}, Names: []string{"*"}},
	}})})
	// The edge also serves a resource the upstream does not.
	down := index()
	edgeOnly := APIResource{GVR: schema.GroupVersionResource{Group: "edge-only.example.com", Version: "v1", Resource: "gizmos"}, Kind: "Gizmo", Namespaced: true,
		Verbs: index().byGR[configMaps]["v1"].Verbs}
	down.byGR[edgeOnly.GVR.GroupResource()] = map[string]APIResource{"v1": edgeOnly}
	down.byGroup[edgeOnly.GVR.Group] = []APIResource{edgeOnly}

	got, problems := ResolveUpsync(sel, index(), down)
	if _, ok := got[configMaps]; !ok {
		t.Error("configmaps not resolved from the core wildcard")
	}
	if _, ok := got[NamespacesResource]; ok {
		t.Error("namespaces expanded from a wildcard")
	}
	if _, ok := got[schema.GroupResource{Resource: "bindings"}]; ok {
		t.Error("create-only bindings resolved")
	}
	if r, ok := got[deployments]; !ok || !r.Upstream.HasStatus {
		t.Errorf("deployments: %+v (status subresource must be known)", r)
	}
	all := strings.Join(problem.Strings(problems), "\n")
	for _, want := range []string{"gizmos", "not upstream", "CustomResourceDefinitions is not supported", `"things" is not served at the edge`} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if _, ok := got[edgeOnly.GVR.GroupResource()]; ok {
		t.Error("an edge-only resource resolved")
	}
}

func TestReturnsStatus(t *testing.T) {
	off := false
	sel, _ := Merge([]*edgev1.SyncerConfig{
		cfg("quiet", edgev1.SyncerConfigSpec{ReturnStatus: &off, NamespaceScope: edgev1.NamespaceScopeDownsyncs{
			Namespaces: []string{"a", "b"}, Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1"}}}}),
		cfg("loud", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{
			Namespaces: []string{"b"}, Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1"}}}}),
	})
	if !sel.Matches(obj(configMaps, "a", "x")) || !sel.Matches(obj(configMaps, "b", "x")) {
		t.Fatal("both namespaces must be downsynced")
	}
	if sel.ReturnsStatus(obj(configMaps, "a", "x")) {
		t.Error("status returned for an object only the returnStatus=false config selects")
	}
	if !sel.ReturnsStatus(obj(configMaps, "b", "x")) {
		t.Error("status not returned for an object a default config selects too")
	}
	on, _ := Merge([]*edgev1.SyncerConfig{cfg("quiet", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{
		Namespaces: []string{"a", "b"}, Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1"}}}})})
	if sel.Equal(on) {
		t.Error("switching status return off must change the selection")
	}
}

// TestPropagatesDeletion: an object only propagateDeletion=false configs select keeps its edge copy;
// one that a default config selects too does not (union semantics, like returnStatus).
func TestPropagatesDeletion(t *testing.T) {
	off := false
	cms := []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1"}}
	sel, _ := Merge([]*edgev1.SyncerConfig{
		cfg("keep", edgev1.SyncerConfigSpec{PropagateDeletion: &off, NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a", "b"}, Resources: cms}}),
		cfg("default", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"b"}, Resources: cms}}),
	})
	if sel.PropagatesDeletion(obj(configMaps, "a", "x")) {
		t.Error("deletion propagates for an object only the propagateDeletion=false config selects")
	}
	if !sel.PropagatesDeletion(obj(configMaps, "b", "x")) {
		t.Error("deletion does not propagate for an object a default config selects too")
	}
	all, _ := Merge([]*edgev1.SyncerConfig{cfg("keep", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a", "b"}, Resources: cms}})})
	if !all.PropagatesDeletion(obj(configMaps, "a", "x")) {
		t.Error("deletion must propagate by default")
	}
	keepAll, _ := Merge([]*edgev1.SyncerConfig{cfg("keep", edgev1.SyncerConfigSpec{PropagateDeletion: &off, NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a", "b"}, Resources: cms}})})
	if keepAll.Equal(all) {
		t.Error("switching deletion propagation off must change the selection")
	}
}

func TestStatusProjection(t *testing.T) {
	off := false
	res := func(sr *edgev1.StatusReturn) edgev1.NamespaceScopeDownsyncResource {
		return edgev1.NamespaceScopeDownsyncResource{GroupResource: gr("", "configmaps"), APIVersion: "v1", EntryPolicy: edgev1.EntryPolicy{StatusReturn: sr}}
	}
	sel, problems := Merge([]*edgev1.SyncerConfig{
		// a: ready only, capped; b: ready and phase (from two configs); c: nothing; d: all and off
		cfg("narrow", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a", "b"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{res(&edgev1.StatusReturn{Fields: []string{"ready", "ready"}, MaxBytes: 100})}}}),
		cfg("phase", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"b"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{res(&edgev1.StatusReturn{Fields: []string{"phase"}, MaxBytes: 200})}}}),
		cfg("off", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"c", "d"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{res(&edgev1.StatusReturn{Enabled: &off})}}}),
		cfg("all", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"d"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{res(nil)}}}),
		cfg("bad", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"e"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{res(&edgev1.StatusReturn{Fields: []string{"a..b"}})}}}),
	})
	for ns, want := range map[string]string{
		"a": "false|100|ready", "b": "false|200|phase,ready", "c": "false|0|", "d": "true|0|", "e": "false|0|",
	} {
		if got := sel.StatusProjection(obj(configMaps, ns, "x")).Key(); got != want {
			t.Errorf("namespace %s: projection %s, want %s", ns, got, want)
		}
	}
	if !sel.Matches(obj(configMaps, "c", "x")) || sel.ReturnsStatus(obj(configMaps, "c", "x")) {
		t.Error("an entry with status return off: its objects must be downsynced, their status not returned")
	}
	if len(problems) != 1 || !strings.Contains(problems[0].String(), `"a..b" is not a field name`) {
		t.Errorf("problems %v: want the bad field reported", problems)
	}
	same, _ := Merge([]*edgev1.SyncerConfig{cfg("narrow", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a", "b"},
		Resources: []edgev1.NamespaceScopeDownsyncResource{res(nil)}}})})
	narrow, _ := Merge([]*edgev1.SyncerConfig{cfg("narrow", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a", "b"},
		Resources: []edgev1.NamespaceScopeDownsyncResource{res(&edgev1.StatusReturn{Fields: []string{"ready"}})}}})})
	if same.Equal(narrow) {
		t.Error("narrowing the status returned must change the selection")
	}
}

// Retained fields: the union of the entries selecting an object; a path that is not one is a problem
// of its config, and its entry still selects.
func TestRetainedFields(t *testing.T) {
	res := func(fields ...string) edgev1.NamespaceScopeDownsyncResource {
		return edgev1.NamespaceScopeDownsyncResource{GroupResource: gr("", "configmaps"), APIVersion: "v1", EntryPolicy: edgev1.EntryPolicy{RetainFields: fields}}
	}
	sel, problems := Merge([]*edgev1.SyncerConfig{
		cfg("one", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a", "b"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{res("data.mode", "data[x.y]")}}}),
		cfg("two", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"b"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{res("data.mode", "metadata.labels[team]", "spec..x")}}}),
		cfg("plain", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"c"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{res()}}}),
	})
	for ns, want := range map[string]string{"a": "data.mode,data[x.y]", "b": "data.mode,data[x.y],metadata.labels[team]", "c": ""} {
		if got := mapping.PathsKey(sel.RetainedFields(obj(configMaps, ns, "x"))); got != want {
			t.Errorf("namespace %s: retained %q, want %q", ns, got, want)
		}
	}
	if len(problems) != 1 || !strings.Contains(problems[0].String(), `retainFields: "spec..x" is not a field path`) {
		t.Errorf("problems %v: want the bad path reported", problems)
	}
	if !sel.Matches(obj(configMaps, "b", "x")) {
		t.Error("an entry with a bad path must still select")
	}
	plain, _ := Merge([]*edgev1.SyncerConfig{cfg("one", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a", "b"},
		Resources: []edgev1.NamespaceScopeDownsyncResource{res()}}})})
	retaining, _ := Merge([]*edgev1.SyncerConfig{cfg("one", edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a", "b"},
		Resources: []edgev1.NamespaceScopeDownsyncResource{res("data.mode")}}})})
	if plain.Equal(retaining) {
		t.Error("retaining a field must change the selection")
	}
}

// A SyncerConfig's pause holds what it alone selects, until the earliest end among the paused configs
// selecting an object; a malformed time is a problem of its config, which is then not paused.
func TestConfigPauses(t *testing.T) {
	res := []edgev1.NamespaceScopeDownsyncResource{{GroupResource: gr("", "configmaps"), APIVersion: "v1"}}
	paused := func(name, until string, namespaces ...string) *edgev1.SyncerConfig {
		c := cfg(name, edgev1.SyncerConfigSpec{NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: namespaces, Resources: res}})
		if until != "" {
			c.Annotations = map[string]string{mapping.PausedUntilAnnotation: until}
		}
		return c
	}
	sel, problems := Merge([]*edgev1.SyncerConfig{
		paused("early", "2026-11-27T10:00:00Z", "a", "b"),
		paused("late", "2026-11-27T12:00:00Z", "b", "c", "d"),
		paused("plain", "", "d"),
		paused("bad", "tomorrow", "e"),
	})
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for ns, want := range map[string]string{"a": "10:00", "b": "10:00", "c": "12:00", "d": "", "e": ""} {
		until, ok := sel.PausedUntil(obj(configMaps, ns, "x"), now)
		got := ""
		if ok {
			got = until.Format("15:04")
		}
		if got != want {
			t.Errorf("namespace %s: paused until %q, want %q", ns, got, want)
		}
	}
	if _, ok := sel.PausedUntil(obj(configMaps, "b", "x"), now.Add(90*time.Minute)); ok {
		t.Error("after the early config's pause ended, it selects b: not paused")
	}
	if len(problems) != 1 || !strings.Contains(problems[0].String(), `"tomorrow" is not an RFC 3339 time`) {
		t.Errorf("problems %v", problems)
	}
	unpaused, _ := Merge([]*edgev1.SyncerConfig{paused("early", "", "a", "b")})
	pausedOnly, _ := Merge([]*edgev1.SyncerConfig{paused("early", "2026-11-27T10:00:00Z", "a", "b")})
	if unpaused.Equal(pausedOnly) {
		t.Error("pausing a config must change the selection")
	}
}
