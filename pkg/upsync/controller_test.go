package upsync

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/framework/fakeinformers"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/selection"
)

var reports = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}

type view struct {
	res      Resource
	selected bool
}

func (v view) Resource(gr schema.GroupResource) (Resource, bool) {
	return v.res, gr == reports.GroupResource()
}
func (v view) UpsyncMatches(o selection.Object) bool {
	return v.selected && o.Namespace == "policy"
}
func (v view) UpsyncNamesExplicitly(selection.Object) bool { return false }
func (v view) Resources() []Resource                       { return []Resource{v.res} }

func report(namespace, name string, fail int64) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
		"summary": map[string]interface{}{"fail": fail}}}
	o.SetNamespace(namespace)
	o.SetName(name)
	o.SetUID(types.UID("edge-uid-" + namespace + "-" + name))
	return o
}

// spoofed is an upstream object made by hand to look like an upsynced copy: the mark and the
// owner label, but no edge UID (copied from a copy with `kubectl get -o yaml`, or typed).
func spoofed(t *testing.T, down *unstructured.Unstructured, owner string) *unstructured.Unstructured {
	up := upCopy(t, down)
	annotations := up.GetAnnotations()
	delete(annotations, mapping.UpsyncSourceUIDAnnotation)
	up.SetAnnotations(annotations)
	labels := up.GetLabels()
	labels[mapping.UpsyncOwnerLabel] = owner
	up.SetLabels(labels)
	return up
}

func upCopy(t *testing.T, down *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	up, err := mapping.ToUpstream(down, mapping.Options{OwnerLabelValue: "edge1"})
	if err != nil {
		t.Fatal(err)
	}
	up.SetUID("up-uid")
	up.SetResourceVersion("5")
	return up
}

func TestProcess(t *testing.T) {
	edge := report("policy", "r", 1)
	edgeChanged := report("policy", "r", 2)
	downsynced := report("policy", "r", 1)
	downsynced.SetAnnotations(map[string]string{mapping.DownsyncedAnnotation: "PolicyReport/policy/r"})
	unmarked := report("policy", "r", 9)
	unmarked.SetUID("theirs")
	otherNS := report("kyverno", "r", 1)
	otherSyncers := upCopy(t, edge)
	otherSyncers.SetLabels(map[string]string{mapping.UpsyncOwnerLabel: "edge2"})
	copiedElsewhere := upCopy(t, report("policy", "original", 1)) // the mark names another object
	copiedElsewhere.SetName("r")
	for _, tc := range []struct {
		name      string
		down, up  *unstructured.Unstructured
		selected  bool
		leftover  bool
		want      string // upstream write verbs, comma separated
		wantAfter bool   // a positive requeue delay
		metric    string
	}{
		{name: "new edge object is created upstream", down: edge, selected: true, want: "create", metric: metrics.Created},
		{name: "up to date: no write", down: edge, up: upCopy(t, edge), selected: true, want: ""},
		{name: "changed edge object is updated", down: edgeChanged, up: upCopy(t, edge), selected: true, want: "update", metric: metrics.Updated},
		{name: "unmarked upstream object is a conflict", down: edge, up: unmarked, selected: true, want: "", wantAfter: true, metric: metrics.Conflict},
		{name: "gone at the edge: deleted upstream", up: upCopy(t, edge), selected: true, want: "delete", metric: metrics.Deleted},
		{name: "gone at the edge, unmarked upstream: left alone", up: unmarked, selected: true, want: ""},
		{name: "no longer selected: deleted upstream", down: edge, up: upCopy(t, edge), selected: false, want: "delete", metric: metrics.Deleted},
		{name: "leftover resource: deleted upstream", down: edge, up: upCopy(t, edge), selected: true, leftover: true, want: "delete", metric: metrics.Deleted},
		{name: "gone at the edge, mark without the edge UID: not deleted, reported", up: spoofed(t, edge, "edge1"), selected: true, want: "", metric: metrics.Conflict},
		{name: "no longer selected, mark without the edge UID: not deleted", down: edge, up: spoofed(t, edge, "edge1"), selected: false, want: "", metric: metrics.Conflict},
		{name: "mark without the edge UID, edge object selected: updated (gains the UID)", down: edge, up: spoofed(t, edge, "edge1"), selected: true, want: "update", metric: metrics.Updated},
		{name: "gone at the edge, another syncer's copy: left alone", up: otherSyncers, selected: true, want: ""},
		{name: "another syncer's copy is a conflict", down: edge, up: otherSyncers, selected: true, want: "", wantAfter: true, metric: metrics.Conflict},
		{name: "gone at the edge, mark copied from another object: left alone", up: copiedElsewhere, selected: true, want: ""},
		{name: "mark copied from another object is a conflict", down: edge, up: copiedElsewhere, selected: true, want: "", wantAfter: true, metric: metrics.Conflict},
		{name: "downsynced objects are never upsynced", down: downsynced, selected: true, want: ""},
		{name: "namespace not listed", down: otherNS, selected: true, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var upObjs []runtime.Object
			var upStore, downStore []*unstructured.Unstructured
			if tc.up != nil {
				upObjs = append(upObjs, tc.up.DeepCopy())
				upStore = append(upStore, tc.up)
			}
			if tc.down != nil {
				downStore = append(downStore, tc.down)
			}
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{reports: "PolicyReportList"}, upObjs...)
			m := metrics.New(prometheus.NewRegistry())
			c, err := NewController(Config{
				Upstream: client, Metrics: m, OwnerLabelValue: "edge1",
				UpstreamInformers:   fakeinformers.Informers{reports: fakeinformers.With(upStore...)},
				DownstreamInformers: fakeinformers.Informers{reports: fakeinformers.With(downStore...)},
				Selection:           view{res: Resource{Upstream: reports, Downstream: reports, Namespaced: true, Selected: !tc.leftover}, selected: tc.selected},
			})
			if err != nil {
				t.Fatal(err)
			}
			ns := "policy"
			if tc.down == otherNS {
				ns = "kyverno"
			}
			after, err := c.process(context.Background(), framework.Key{GVR: reports, Namespace: ns, Name: "r"})
			if err != nil {
				t.Fatalf("process: %v", err)
			}
			var verbs []string
			for _, a := range client.Actions() {
				verbs = append(verbs, a.GetVerb())
			}
			if got := strings.Join(verbs, ","); got != tc.want {
				t.Errorf("upstream writes %q, want %q", got, tc.want)
			}
			if (after > 0) != tc.wantAfter {
				t.Errorf("requeue after %v", after)
			}
			if tc.metric != "" {
				if n := testutil.ToFloat64(m.Writes.WithLabelValues(metrics.Upsync, reports.GroupResource().String(), tc.metric)); n != 1 {
					t.Errorf("writes_total{result=%s} = %v, want 1", tc.metric, n)
				}
			}
			if tc.want == "create" || tc.want == "update" {
				got, err := client.Resource(reports).Namespace("policy").Get(context.Background(), "r", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if mapping.ClaimOf(got, "edge1") != mapping.UpsyncedByUs || mapping.UpsyncedFrom(got) != string(tc.down.GetUID()) {
					t.Errorf("written copy lacks the mark or the edge UID: %v", got.GetAnnotations())
				}
				want, _, _ := unstructured.NestedInt64(tc.down.Object, "summary", "fail")
				if n, _, _ := unstructured.NestedInt64(got.Object, "summary", "fail"); n != want {
					t.Errorf("written summary.fail = %d, want %d", n, want)
				}
			}
		})
	}
}

// switchable is a view whose resource can leave the upsync selection.
type switchable struct{ upsynced bool }

func (v *switchable) Resource(gr schema.GroupResource) (Resource, bool) {
	return Resource{Upstream: reports, Downstream: reports, Namespaced: true, Selected: true}, v.upsynced && gr == reports.GroupResource()
}
func (v *switchable) UpsyncMatches(selection.Object) bool         { return v.upsynced }
func (v *switchable) UpsyncNamesExplicitly(selection.Object) bool { return false }
func (v *switchable) Resources() []Resource {
	r, _ := v.Resource(reports.GroupResource())
	return []Resource{r}
}

// TestConflictClearedWhenResourceLeaves is the regression test of an upsync conflict that outlived
// its resource: once the entry is removed nothing processes the key again, so Prune must forget it.
func TestConflictClearedWhenResourceLeaves(t *testing.T) {
	unmarked := report("policy", "r", 9)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{reports: "PolicyReportList"}, unmarked.DeepCopy())
	v := &switchable{upsynced: true}
	c, err := NewController(Config{
		Upstream: client, Metrics: metrics.New(prometheus.NewRegistry()), OwnerLabelValue: "edge1",
		UpstreamInformers:   fakeinformers.Informers{reports: fakeinformers.With(unmarked)},
		DownstreamInformers: fakeinformers.Informers{reports: fakeinformers.With(report("policy", "r", 1))},
		Selection:           v,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.process(context.Background(), framework.Key{GVR: reports, Namespace: "policy", Name: "r"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Writes().Conflicts().Problems(5); n != 1 {
		t.Fatalf("conflicts = %d, want 1", n)
	}
	v.upsynced = false
	c.Prune()
	if n, ex := c.Writes().Conflicts().Problems(5); n != 0 {
		t.Fatalf("conflicts after the resource left = %d %v, want 0", n, ex)
	}
}

// TestSystemObjectsNotUpsyncedByWildcard: the edge's own kube-root-ca.crt is not copied over the
// upstream's by an entry with names ["*"], and is no conflict.
func TestSystemObjectsNotUpsyncedByWildcard(t *testing.T) {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	edgeCA := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]interface{}{"ca.crt": "edge"}}}
	edgeCA.SetNamespace("policy")
	edgeCA.SetName("kube-root-ca.crt")
	upCA := edgeCA.DeepCopy()
	upCA.Object["data"] = map[string]interface{}{"ca.crt": "upstream"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"}, upCA.DeepCopy())
	c, err := NewController(Config{
		Upstream: client, Metrics: metrics.New(prometheus.NewRegistry()), OwnerLabelValue: "edge1",
		UpstreamInformers:   fakeinformers.Informers{cms: fakeinformers.With(upCA)},
		DownstreamInformers: fakeinformers.Informers{cms: fakeinformers.With(edgeCA)},
		Selection:           allConfigMaps{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.process(context.Background(), framework.Key{GVR: cms, Namespace: "policy", Name: "kube-root-ca.crt"}); err != nil {
		t.Fatal(err)
	}
	if a := client.Actions(); len(a) != 0 {
		t.Errorf("upstream actions %v, want none", a)
	}
	if n, _ := c.Writes().Conflicts().Problems(5); n != 0 {
		t.Errorf("%d conflicts, want none", n)
	}
}

// allConfigMaps upsyncs every ConfigMap by a wildcard.
type allConfigMaps struct{}

func (allConfigMaps) Resource(gr schema.GroupResource) (Resource, bool) {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	return Resource{Upstream: cms, Downstream: cms, Namespaced: true, Selected: true}, gr == cms.GroupResource()
}
func (allConfigMaps) UpsyncMatches(selection.Object) bool         { return true }
func (allConfigMaps) UpsyncNamesExplicitly(selection.Object) bool { return false }
func (a allConfigMaps) Resources() []Resource {
	r, _ := a.Resource(schema.GroupResource{Resource: "configmaps"})
	return []Resource{r}
}

// TestLoopBacksOff: another actor upstream reverts the copy after every write; the fifth write of
// the same content within a minute is a loop: counted, reported as a problem, and the key backs off
// instead of writing again.
func TestLoopBacksOff(t *testing.T) {
	edge := report("policy", "r", 1)
	reverted := upCopy(t, edge)
	_ = unstructured.SetNestedField(reverted.Object, int64(7), "summary", "fail") // someone else's value
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{reports: "PolicyReportList"}, reverted.DeepCopy())
	m := metrics.New(prometheus.NewRegistry())
	c, err := NewController(Config{
		Upstream: client, Metrics: m, OwnerLabelValue: "edge1",
		// The cache keeps showing the reverted copy, as it would when the other actor reverts each write.
		UpstreamInformers:   fakeinformers.Informers{reports: fakeinformers.With(reverted)},
		DownstreamInformers: fakeinformers.Informers{reports: fakeinformers.With(edge)},
		Selection:           view{res: Resource{Upstream: reports, Downstream: reports, Namespaced: true, Selected: true}, selected: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	key := framework.Key{GVR: reports, Namespace: "policy", Name: "r"}
	for i := 1; i <= framework.LoopWrites; i++ {
		after, err := c.process(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if (after > 0) != (i == framework.LoopWrites) {
			t.Fatalf("write %d: requeue after %v", i, after)
		}
	}
	if n := testutil.ToFloat64(m.Writes.WithLabelValues(metrics.Upsync, reports.GroupResource().String(), metrics.Loop)); n != 1 {
		t.Errorf("writes_total{result=loop} = %v, want 1", n)
	}
	if n, ex := c.Writes().Loops(5); n != 1 || !strings.Contains(ex[0].Reason, "write loop") {
		t.Errorf("loops = %d %v, want 1", n, ex)
	}
	writes := len(client.Actions())
	if after, err := c.process(context.Background(), key); err != nil || after <= 0 {
		t.Fatalf("while backing off: requeue %v, err %v", after, err)
	}
	if len(client.Actions()) != writes {
		t.Errorf("wrote while backing off: %v", client.Actions()[writes:])
	}
}

// TestOrphans: an upstream copy this syncer made whose edge object is gone is an orphan, unless its
// key is being processed; another syncer's copy, an unproven one, and a copy with its edge object
// are not.
func TestOrphans(t *testing.T) {
	edge := report("policy", "r", 1)
	gone := upCopy(t, report("policy", "gone", 1))
	unproven := spoofed(t, report("policy", "unproven", 1), "edge1")
	other := upCopy(t, report("policy", "other", 1))
	other.SetLabels(map[string]string{mapping.UpsyncOwnerLabel: "edge2"})
	m := metrics.New(prometheus.NewRegistry())
	c, err := NewController(Config{
		Upstream: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Metrics: m, OwnerLabelValue: "edge1",
		UpstreamInformers:   fakeinformers.Informers{reports: fakeinformers.With(upCopy(t, edge), gone, unproven, other)},
		DownstreamInformers: fakeinformers.Informers{reports: fakeinformers.With(edge)},
		Selection:           view{res: Resource{Upstream: reports, Downstream: reports, Namespaced: true, Selected: true}, selected: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []framework.Key{{GVR: reports, Namespace: "policy", Name: "gone"}}
	if diff := cmp.Diff(want, c.Orphans()); diff != "" {
		t.Errorf("orphans (-want +got):\n%s", diff)
	}
	c.queue.Add(want[0])
	if got := c.Orphans(); len(got) != 0 {
		t.Errorf("a key being processed is an orphan: %v", got)
	}
}

// TestReadsTheEdgeKeeps: whatever the mailbox selects, the edge keeps to itself what is in a protected
// namespace (and those Namespaces), ServiceAccount token Secrets, and Secrets unless it lets them be
// upsynced; everything else is read.
func TestReadsTheEdgeKeeps(t *testing.T) {
	secret := func(ns, name, typ string) *unstructured.Unstructured {
		s := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Secret", "type": typ}}
		s.SetNamespace(ns)
		s.SetName(name)
		return s
	}
	cm := report("shop", "r", 1)
	inSystem := report("kube-system", "r", 1)
	protectedNS := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
	protectedNS.SetName("syncer-a")
	secrets, configMaps, namespaces := schema.GroupResource{Resource: "secrets"}, schema.GroupResource{Resource: "configmaps"}, schema.GroupResource{Resource: "namespaces"}
	for _, tc := range []struct {
		gr          schema.GroupResource
		obj         *unstructured.Unstructured
		allowSecret bool
		refused     string
	}{
		{configMaps, cm, false, ""},
		{configMaps, inSystem, false, "namespace kube-system is protected"},
		{namespaces, protectedNS, false, "namespace syncer-a is protected"},
		{secrets, secret("syncer-a", "syncer-a-kubeconfig", "Opaque"), true, "namespace syncer-a is protected"},
		{secrets, secret("shop", "token", "kubernetes.io/service-account-token"), true, "ServiceAccount token"},
		{secrets, secret("shop", "creds", "Opaque"), false, "--upsync-secrets"},
		{secrets, secret("shop", "creds", "Opaque"), true, ""},
	} {
		c := &Controller{cfg: Config{ProtectedNamespaces: sets.New("kube-system", "syncer-a"), Secrets: tc.allowSecret}}
		got := c.refusedRead(tc.gr, tc.obj)
		if (tc.refused == "") != (got == "") || !strings.Contains(got, tc.refused) {
			t.Errorf("%s %s/%s (Secrets allowed %v): refused %q, want %q", tc.gr, tc.obj.GetNamespace(), tc.obj.GetName(), tc.allowSecret, got, tc.refused)
		}
	}
}
