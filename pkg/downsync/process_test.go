package downsync

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/framework/fakeinformers"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/selection"
)

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func u(apiVersion, kind, ns, name string, data map[string]interface{}) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion, "kind": kind}}
	o.SetNamespace(ns)
	o.SetName(name)
	if data != nil {
		o.Object["data"] = data
	}
	return o
}

// view is a Selection over a real merged selection and a fixed resource table.
type view struct {
	sel       *selection.Selection
	resources map[schema.GroupResource]Resource
}

func (v *view) Resource(gr schema.GroupResource) (Resource, bool) {
	r, ok := v.resources[gr]
	return r, ok
}
func (v *view) Matches(o selection.Object) bool { return v.sel.Matches(o) }
func (v *view) Mentions(gr schema.GroupResource, kind string) bool {
	return v.sel.Mentions(gr, kind)
}
func (v *view) NamesExplicitly(o selection.Object) bool { return v.sel.NamesExplicitly(o) }
func (v *view) PolicyOf(o selection.Object, now time.Time) selection.Policy {
	return v.sel.PolicyOf(o, now)
}
func (v *view) Resources() []Resource {
	var out []Resource
	for _, r := range v.resources {
		if !r.Upstream.Empty() {
			out = append(out, r)
		}
	}
	return out
}

// selecting is a view selecting every ConfigMap in the given namespaces, served on both sides.
func selecting(namespaces ...string) *view {
	sel, _ := selection.Merge([]*edgev1.SyncerConfig{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: namespaces,
			Resources: []edgev1.NamespaceScopeDownsyncResource{{GroupResource: metav1.GroupResource{Resource: "configmaps"}, APIVersion: "v1"}}},
	}}})
	return &view{sel: sel, resources: map[schema.GroupResource]Resource{
		cmGVR.GroupResource():        {Upstream: cmGVR, Downstream: cmGVR, Namespaced: true},
		namespaceGVR.GroupResource(): {Upstream: namespaceGVR, Downstream: namespaceGVR},
	}}
}

type harness struct {
	c       *Controller
	down    *dynamicfake.FakeDynamicClient
	m       *metrics.Metrics
	upCache fakeinformers.Informers
}

// newHarness preloads the caches of both sides (the downstream cache with the owned objects only, as
// the real label-filtered informer would) and a fake downstream client holding every object given.
func newHarness(t *testing.T, v *view, up, down []*unstructured.Unstructured) *harness {
	t.Helper()
	var downObjs []runtime.Object
	var upCMs, upNS, downCMs, downNS []*unstructured.Unstructured
	for _, o := range up {
		if o.GetKind() == "Namespace" {
			upNS = append(upNS, o)
		} else {
			upCMs = append(upCMs, o)
		}
	}
	for _, o := range down {
		downObjs = append(downObjs, o.DeepCopy())
		switch {
		case o.GetKind() == "Namespace":
			downNS = append(downNS, o)
		case mapping.OwnedDownstream(o) && mapping.OwnerOf(o) == "t": // the informer's label selector
			downCMs = append(downCMs, o)
		}
	}
	kinds := map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", namespaceGVR: "NamespaceList"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, downObjs...)
	client.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.PatchAction).GetPatchType() != types.ApplyPatchType {
			return false, nil, nil // the tracker applies other patches
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(a.(clienttesting.PatchAction).GetPatch()); err != nil {
			return true, nil, err
		}
		return true, o, nil
	})
	m := metrics.New(prometheus.NewRegistry())
	upCache := fakeinformers.Informers{cmGVR: fakeinformers.With(upCMs...), namespaceGVR: fakeinformers.With(upNS...)}
	c, err := NewController(Config{
		Downstream:          client,
		UpstreamInformers:   upCache,
		DownstreamInformers: fakeinformers.Informers{cmGVR: fakeinformers.With(downCMs...), namespaceGVR: fakeinformers.With(downNS...)},
		Selection:           v,
		Metrics:             m,
		Mapping:             mapping.Options{OwnerLabelValue: "t"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{c: c, down: client, m: m, upCache: upCache}
}

func (h *harness) actions() []string {
	var out []string
	for _, a := range h.down.Actions() {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

// claimOnly tells whether an apply carries the object's identity and mark alone (claimUnmanaged).
func claimOnly(t *testing.T, patch []byte) bool {
	o := &unstructured.Unstructured{}
	if err := o.UnmarshalJSON(patch); err != nil {
		t.Fatal(err)
	}
	meta, _ := o.Object["metadata"].(map[string]interface{})
	return len(o.Object) == 3 && len(meta) == 4 && len(o.GetAnnotations()) == 1 && mapping.OwnedDownstream(o)
}

func owned(t *testing.T, up *unstructured.Unstructured) *unstructured.Unstructured {
	d, err := mapping.ToDownstream(up, mapping.Options{OwnerLabelValue: "t"})
	if err != nil {
		t.Fatal(err)
	}
	d.SetUID("down-uid")
	return d
}

var (
	upCM    = u("v1", "ConfigMap", "a", "x", map[string]interface{}{"k": "v"})
	nsA     = u("v1", "Namespace", "", "a", nil)
	key     = framework.Key{GVR: cmGVR, Namespace: "a", Name: "x"}
	unowned = u("v1", "ConfigMap", "a", "x", map[string]interface{}{"k": "theirs"})
)

func objs(os ...*unstructured.Unstructured) []*unstructured.Unstructured { return os }

// upsyncMarked is an upstream object carrying upsync's mark: as upsync writes it (proven, with the
// edge UID), or as made by hand (no edge UID).
func upsyncMarked(t *testing.T, o *unstructured.Unstructured, proven bool) *unstructured.Unstructured {
	t.Helper()
	edge := o.DeepCopy()
	edge.SetUID("edge-uid")
	up, err := mapping.ToUpstream(edge, mapping.Options{OwnerLabelValue: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if !proven {
		a := up.GetAnnotations()
		delete(a, mapping.UpsyncSourceUIDAnnotation)
		up.SetAnnotations(a)
	}
	return up
}

func TestProcess(t *testing.T) {
	drifted := owned(t, upCM)
	drifted.Object["data"] = map[string]interface{}{"k": "edited"}
	others, err := mapping.ToDownstream(upCM, mapping.Options{OwnerLabelValue: "other-edge"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		view     *view
		up, down []*unstructured.Unstructured
		want     []string
		result   string // writes_total result label that must be 1
		requeue  bool
	}{
		{name: "new object is created with one request", view: selecting("a"), up: objs(upCM, nsA), down: objs(nsA),
			want: []string{"create configmaps"}, result: metrics.Created},
		{name: "up to date: no request", view: selecting("a"), up: objs(upCM, nsA), down: objs(nsA, owned(t, upCM))},
		{name: "drifted: applied again", view: selecting("a"), up: objs(upCM, nsA), down: objs(nsA, drifted),
			want: []string{"patch configmaps"}, result: metrics.Updated},
		{name: "waits for its namespace without a request", view: selecting("a"), up: objs(upCM, nsA)},
		{name: "unowned object is not overwritten", view: selecting("a"), up: objs(upCM, nsA), down: objs(nsA, unowned),
			want: []string{"create configmaps", "get configmaps"}, result: metrics.Conflict, requeue: true},
		{name: "another sync target's object is a conflict, not taken back", view: selecting("a"), up: objs(upCM, nsA), down: objs(nsA, others),
			want: []string{"create configmaps", "get configmaps"}, result: metrics.Conflict, requeue: true},
		{name: "own object without its owner label is put back (drift)", view: selecting("a"), up: objs(upCM, nsA), down: objs(nsA, func() *unstructured.Unstructured {
			d := owned(t, upCM)
			d.SetLabels(nil)
			d.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: framework.DefaultFieldManager, Operation: metav1.ManagedFieldsOperationApply,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:k":{}}}`)}}})
			return d
		}()), want: []string{"create configmaps", "get configmaps", "patch configmaps"}, result: metrics.Updated},
		{name: "the release-0.14 syncer's object without managedFields (it cleared them): claimed, then applied", view: selecting("a"), up: objs(upCM, nsA),
			down: objs(nsA, func() *unstructured.Unstructured {
				d := owned(t, upCM)
				d.SetLabels(nil)
				return d
			}()), want: []string{"create configmaps", "get configmaps", "patch configmaps", "patch configmaps"}, result: metrics.Updated},
		{name: "the release-0.14 syncer's object: its fields handed over, then applied", view: selecting("a"), up: objs(upCM, nsA), down: objs(nsA, func() *unstructured.Unstructured {
			d := owned(t, upCM)
			d.SetLabels(nil)
			d.SetResourceVersion("7")
			d.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: LegacyFieldManager, Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:k":{}}}`)}}})
			return d
		}()), want: []string{"create configmaps", "get configmaps", "patch configmaps", "patch configmaps"}, result: metrics.Updated},
		{name: "deselected owned object is deleted", view: selecting("b"), up: objs(upCM, nsA), down: objs(nsA, owned(t, upCM)),
			want: []string{"delete configmaps"}, result: metrics.Deleted},
		{name: "deleted upstream: deleted downstream", view: selecting("a"), up: objs(nsA), down: objs(nsA, owned(t, upCM)),
			want: []string{"delete configmaps"}, result: metrics.Deleted},
		{name: "unowned object is never deleted", view: selecting("b"), up: objs(nsA), down: objs(nsA, unowned)},
		{name: "another sync target's object is never deleted", view: selecting("b"), up: objs(nsA), down: objs(nsA, others)},
		{name: "another workspace's object is never deleted", view: selecting("b"), up: objs(nsA), down: objs(nsA, func() *unstructured.Unstructured {
			d, err := mapping.ToDownstream(upCM, mapping.Options{OwnerLabelValue: "t", Cluster: "other-workspace"})
			if err != nil {
				t.Fatal(err)
			}
			return d
		}())},
		{name: "deleted upstream, kept at the edge (propagateDeletion false)", view: selecting("a"), up: objs(nsA), down: objs(nsA, func() *unstructured.Unstructured {
			d := owned(t, upCM)
			d.SetAnnotations(map[string]string{mapping.DownsyncedAnnotation: "ConfigMap/a/x", mapping.PropagateDeletionAnnotation: "false"})
			return d
		}())},
		{name: "a copy upsync made is not downsynced, silently", view: selecting("a"), up: objs(upsyncMarked(t, upCM, true), nsA), down: objs(nsA)},
		{name: "an upsync mark nothing proves is not downsynced, and reported", view: selecting("a"), up: objs(upsyncMarked(t, upCM, false), nsA), down: objs(nsA),
			result: metrics.Conflict},
		{name: "an upsync mark naming another object is no mark: downsynced", view: selecting("a"), up: objs(func() *unstructured.Unstructured {
			o := upsyncMarked(t, u("v1", "ConfigMap", "a", "original", map[string]interface{}{"k": "v"}), true)
			o.SetName("x")
			return o
		}(), nsA), down: objs(nsA), want: []string{"create configmaps"}, result: metrics.Created},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.view, tc.up, tc.down)
			var upBefore *unstructured.Unstructured // the cache holds tc.up's objects themselves
			for _, o := range tc.up {
				if o.GetKind() == "ConfigMap" && o.GetName() == "x" {
					upBefore = o.DeepCopy()
				}
			}
			requeue, err := h.c.process(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, h.actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if (requeue > 0) != tc.requeue {
				t.Errorf("requeueAfter = %v", requeue)
			}
			if tc.result != "" {
				if got := testutil.ToFloat64(h.m.Writes.WithLabelValues(metrics.Downsync, "configmaps", tc.result)); got != 1 {
					t.Errorf("writes_total{result=%s} = %v, want 1", tc.result, got)
				}
			}
			for _, a := range h.down.Actions() {
				if p, ok := a.(clienttesting.PatchAction); ok && p.GetPatchType() == types.ApplyPatchType && !strings.Contains(string(p.GetPatch()), mapping.OwnerLabel) &&
					!claimOnly(t, p.GetPatch()) {
					t.Errorf("applied object lacks the owner label: %s", p.GetPatch())
				}
				if c, ok := a.(clienttesting.CreateActionImpl); ok {
					o := c.GetObject().(*unstructured.Unstructured)
					if mapping.OwnerOf(o) != "t" || c.CreateOptions.FieldManager != framework.DefaultFieldManager || c.CreateOptions.FieldValidation != metav1.FieldValidationStrict {
						t.Errorf("create without the owner label, the field manager or strict validation: %v, %+v", o.GetLabels(), c.CreateOptions)
					}
				}
				if d, ok := a.(clienttesting.DeleteAction); ok {
					if pre := d.GetDeleteOptions().Preconditions; pre == nil || pre.UID == nil || *pre.UID != "down-uid" {
						t.Errorf("delete without the UID precondition: %+v", d.GetDeleteOptions())
					}
					if p := d.GetDeleteOptions().PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
						t.Errorf("delete without background propagation (dependents would be orphaned): %+v", d.GetDeleteOptions())
					}
				}
			}
			if cached, _ := framework.GetFromCache(h.upCache[cmGVR], "a", "x"); cached != nil && !cmp.Equal(cached.Object, upBefore.Object) {
				t.Errorf("the cache's object was mutated: %v", cached.Object)
			}
		})
	}
}

// TestProcessHoldsWhenAPIMissingUpstream: a resource the config names but the upstream does not
// serve (a leftover for resolution) is never deleted downstream.
func TestProcessHoldsWhenAPIMissingUpstream(t *testing.T) {
	v := selecting("a")
	v.resources[cmGVR.GroupResource()] = Resource{Downstream: cmGVR, Namespaced: true} // not read upstream
	h := newHarness(t, v, objs(nsA), objs(nsA, owned(t, upCM)))
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if a := h.actions(); len(a) != 0 {
		t.Fatalf("actions %v, want none", a)
	}
}

// TestConflictClearedWhenResourceLeaves is the regression test of a conflict that outlived its
// resource: once the resource leaves the selection nothing processes the key again, so Prune must
// forget it, or Ready stays False for good.
func TestConflictClearedWhenResourceLeaves(t *testing.T) {
	v := selecting("a")
	h := newHarness(t, v, objs(upCM, nsA), objs(nsA, unowned))
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.c.Writes().Conflicts().Problems(5); n != 1 {
		t.Fatalf("conflicts = %d, want 1", n)
	}
	h.c.Prune()
	if n, _ := h.c.Writes().Conflicts().Problems(5); n != 1 {
		t.Fatalf("a conflict of a selected object was pruned: %d", n)
	}
	delete(v.resources, cmGVR.GroupResource()) // the config no longer names ConfigMaps
	h.c.Prune()
	if n, ex := h.c.Writes().Conflicts().Problems(5); n != 0 {
		t.Fatalf("conflicts after the resource left = %d %v, want 0", n, ex)
	}
}

// TestSystemObjectsOnlyWhenNamed: kcp's (or any apiserver's) own kube-root-ca.crt in a namespace the
// config selects whole is never written over the edge's own, nor is it a conflict; named explicitly,
// it is synced like any object.
func TestSystemObjectsOnlyWhenNamed(t *testing.T) {
	rootCA := u("v1", "ConfigMap", "a", "kube-root-ca.crt", map[string]interface{}{"ca.crt": "upstream CA"})
	edgeCA := u("v1", "ConfigMap", "a", "kube-root-ca.crt", map[string]interface{}{"ca.crt": "edge CA"})
	caKey := framework.Key{GVR: cmGVR, Namespace: "a", Name: "kube-root-ca.crt"}

	h := newHarness(t, selecting("a"), objs(rootCA, nsA), objs(nsA, edgeCA))
	if _, err := h.c.process(context.Background(), caKey); err != nil {
		t.Fatal(err)
	}
	if a := h.actions(); len(a) != 0 {
		t.Errorf("wildcard: actions %v, want none", a)
	}
	if n, _ := h.c.Writes().Conflicts().Problems(5); n != 0 {
		t.Errorf("wildcard: %d conflicts, want none", n)
	}

	named := selecting("a")
	named.sel, _ = selection.Merge([]*edgev1.SyncerConfig{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: edgev1.SyncerConfigSpec{
		NamespacedObjects: []edgev1.NamespaceScopeDownsyncObjects{{GroupResource: metav1.GroupResource{Resource: "configmaps"}, APIVersion: "v1",
			ObjectsByNamespace: []edgev1.NamespaceAndNames{{Namespace: "a", Names: []string{"kube-root-ca.crt"}}}}},
	}}})
	h = newHarness(t, named, objs(rootCA, nsA), objs(nsA))
	if _, err := h.c.process(context.Background(), caKey); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"create configmaps"}, h.actions()); diff != "" {
		t.Errorf("named: actions (-want +got):\n%s", diff)
	}
}

// TestImmutableChangeRecreates: a change the edge refuses as immutable deletes the owned object (its
// deletion brings the key back and it is created anew), unless the upstream object opts out.
func TestImmutableChangeRecreates(t *testing.T) {
	drifted := owned(t, upCM)
	drifted.Object["data"] = map[string]interface{}{"k": "old"}
	immutableErr := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x",
		field.ErrorList{field.Invalid(field.NewPath("data"), "v", "field is immutable")})
	for _, tc := range []struct {
		name string
		up   *unstructured.Unstructured
		want []string
		err  bool
	}{
		{name: "recreated", up: upCM, want: []string{"patch configmaps", "delete configmaps"}},
		{name: "opted out", up: func() *unstructured.Unstructured {
			o := upCM.DeepCopy()
			o.SetAnnotations(map[string]string{mapping.RecreateAnnotation: "false"})
			return o
		}(), want: []string{"patch configmaps"}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, selecting("a"), objs(tc.up, nsA), objs(nsA, drifted))
			h.down.PrependReactor("patch", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, immutableErr
			})
			_, err := h.c.process(context.Background(), key)
			if (err != nil) != tc.err {
				t.Fatalf("err %v", err)
			}
			if diff := cmp.Diff(tc.want, h.actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProcessFollowsSelectors: with a kind entry and a labelSelector, an upstream object is applied
// while its labels match and its edge copy deleted once they stop matching; Relevant agrees.
func TestProcessFollowsSelectors(t *testing.T) {
	sel, problems := selection.Merge([]*edgev1.SyncerConfig{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"a"},
			Resources: []edgev1.NamespaceScopeDownsyncResource{{Kind: "ConfigMap", APIVersion: "v1",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}},
	}}})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	v := selecting("a")
	v.sel = sel
	web := upCM.DeepCopy()
	web.SetLabels(map[string]string{"app": "web"})
	other := upCM.DeepCopy()
	other.SetLabels(map[string]string{"app": "db"})
	for _, tc := range []struct {
		name     string
		up, down *unstructured.Unstructured
		want     []string
		relevant bool
	}{
		{"matching labels: created", web, nil, []string{"create configmaps"}, true},
		{"labels stopped matching: edge copy deleted", other, owned(t, web), []string{"delete configmaps"}, false},
		{"never matched: nothing", other, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			down := objs(nsA)
			if tc.down != nil {
				down = append(down, tc.down)
			}
			h := newHarness(t, v, objs(tc.up, nsA), down)
			if got := h.c.Relevant(key); got != tc.relevant {
				t.Errorf("Relevant = %v, want %v", got, tc.relevant)
			}
			if _, err := h.c.process(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, h.actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCreateRacesAnObjectThatGoes: the name was taken when the create was sent and is free when the
// object in the way is read: an error, so that the key is retried (and created then).
func TestCreateRacesAnObjectThatGoes(t *testing.T) {
	h := newHarness(t, selecting("a"), objs(upCM, nsA), objs(nsA))
	h.down.PrependReactor("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(cmGVR.GroupResource(), "x")
	})
	if _, err := h.c.process(context.Background(), key); err == nil {
		t.Fatal("no error, want one to retry")
	}
	if diff := cmp.Diff([]string{"create configmaps", "get configmaps"}, h.actions()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

// TestOtherSyncersNamespaceKept: the edge's Namespaces are watched whole, so a namespace another
// sync target wrote (two syncers sharing an edge, each with its own mailbox) reaches this syncer,
// which selects nothing there: it must leave it, not delete it as deselected.
func TestOtherSyncersNamespaceKept(t *testing.T) {
	nsB := u("v1", "Namespace", "", "b", nil)
	theirs, err := mapping.ToDownstream(nsB, mapping.Options{OwnerLabelValue: "other-edge"})
	if err != nil {
		t.Fatal(err)
	}
	theirs.SetUID("down-uid")
	h := newHarness(t, selecting("a"), objs(nsA), objs(nsA, theirs))
	if _, err := h.c.process(context.Background(), framework.Key{GVR: namespaceGVR, Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if got := h.actions(); len(got) != 0 {
		t.Errorf("another sync target's namespace: actions %v, want none", got)
	}
}

// TestCreatedObjectHandedOver: an object the syncer made by a plain create carries its fields under
// an update entry; before its first apply they are handed to the apply entry. Where the cache
// recorded the entry's place, a JSON patch renames it (one request); where the rename is refused,
// or no place is known, the object is read and client-go's csaupgrade merges the entries.
func TestCreatedObjectHandedOver(t *testing.T) {
	created := func(entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		up := upCM.DeepCopy()
		up.Object["data"] = map[string]interface{}{"k": "old"}
		d := owned(t, up)
		d.SetResourceVersion("7")
		d.SetManagedFields(entries)
		return d
	}
	update := metav1.ManagedFieldsEntry{Manager: framework.DefaultFieldManager, Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:k":{}}}`)}}
	apply := update
	apply.Operation, apply.FieldsV1 = metav1.ManagedFieldsOperationApply, &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:other":{}}}`)}
	other := update
	other.Manager = "kubectl-edit"
	for _, tc := range []struct {
		name    string
		down    *unstructured.Unstructured
		refuse  bool // the rename patch is refused (the entry moved)
		want    []string
		renamed bool // a rename patch was sent
		merged  bool // a csaupgrade patch was sent
	}{
		{name: "the create's entry alone: renamed, then applied", down: created(other, update),
			want: []string{"patch configmaps", "patch configmaps"}, renamed: true},
		{name: "the rename refused: read, merged, applied", down: created(other, update), refuse: true,
			want: []string{"patch configmaps", "get configmaps", "patch configmaps", "patch configmaps"}, renamed: true, merged: true},
		{name: "an apply entry beside it: read, merged, applied", down: created(apply, update),
			want: []string{"get configmaps", "patch configmaps", "patch configmaps"}, merged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, selecting("a"), objs(upCM, nsA), objs(nsA, tc.down))
			h.c.cfg.DownstreamInformers.(fakeinformers.Informers)[cmGVR] = fakeinformers.With(mapping.Slim(tc.down, framework.DefaultFieldManager))
			var renamed, merged bool
			h.down.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
				p := a.(clienttesting.PatchAction)
				if p.GetPatchType() != types.JSONPatchType {
					return false, nil, nil
				}
				if strings.Contains(string(p.GetPatch()), `"op":"test"`) {
					renamed = true
					if !strings.Contains(string(p.GetPatch()), `/metadata/managedFields/1/operation`) {
						t.Errorf("rename patch at the wrong place: %s", p.GetPatch())
					}
					if tc.refuse {
						return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil)
					}
					return true, tc.down, nil
				}
				merged = true
				if !strings.Contains(string(p.GetPatch()), `"operation":"Apply"`) || strings.Contains(string(p.GetPatch()), `"manager":"kubestellar-syncer","operation":"Update"`) {
					t.Errorf("merge patch keeps the update entry: %s", p.GetPatch())
				}
				return true, tc.down, nil
			})
			if _, err := h.c.process(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, h.actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if renamed != tc.renamed || merged != tc.merged {
				t.Errorf("renamed %v, merged %v; want %v, %v", renamed, merged, tc.renamed, tc.merged)
			}
			if got := testutil.ToFloat64(h.m.Writes.WithLabelValues(metrics.Downsync, "configmaps", metrics.HandedOver)); got != 1 {
				t.Errorf("writes_total{result=handed-over} = %v, want 1", got)
			}
		})
	}
}

// TestRefusalRecorded: a write the edge refuses for good records the refused upstream generation and
// the edge's reason for status return, and tells it; a transient failure does not; the next write
// that lands forgets it and tells that too.
func TestRefusalRecorded(t *testing.T) {
	up := upCM.DeepCopy()
	up.SetGeneration(4)
	h := newHarness(t, selecting("a"), objs(up, nsA), objs(nsA))
	var told []framework.Key
	h.c.cfg.OnRefused = func(k framework.Key) { told = append(told, k) }
	fail := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", field.ErrorList{field.Invalid(field.NewPath("data"), "v", "refused by policy")})
	h.down.PrependReactor("create", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if fail == nil {
			return false, nil, nil
		}
		return true, nil, fail
	})
	if _, err := h.c.process(context.Background(), key); err == nil {
		t.Fatal("a refused create: no error")
	}
	g, msg, ok := h.c.Refused(key)
	if !ok || g != 4 || !strings.Contains(msg, "refused by policy") || len(told) != 1 {
		t.Fatalf("Refused: %d %q %v; told %v; want generation 4 with the edge's reason, told once", g, msg, ok, told)
	}
	fail = apierrors.NewServiceUnavailable("edge down")
	h.c.refusals.forget(key)
	if _, err := h.c.process(context.Background(), key); err == nil {
		t.Fatal("an unavailable edge: no error")
	}
	if _, _, ok := h.c.Refused(key); ok {
		t.Error("a transient failure was recorded as a refusal")
	}
	fail = nil
	h.c.refusals.set(key, 4, "earlier")
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := h.c.Refused(key); ok || len(told) != 2 {
		t.Errorf("after a write that landed: refused %v, told %v; want forgotten and told", ok, told)
	}
}

// TestRefusalsPruned: Prune forgets the refusals of resources no longer selected, or selected at
// another version, and keeps the others.
func TestRefusalsPruned(t *testing.T) {
	h := newHarness(t, selecting("a"), objs(upCM, nsA), objs(nsA))
	other := key
	other.GVR.Version = "v2"
	h.c.refusals.set(key, 1, "denied")
	h.c.refusals.set(other, 1, "denied")
	h.c.Prune()
	if _, _, ok := h.c.Refused(key); !ok {
		t.Error("a selected resource's refusal was pruned")
	}
	if _, _, ok := h.c.Refused(other); ok {
		t.Error("a refusal at a version no longer read stayed")
	}
}

// refusingDeletions is a deletion breaker that holds every deletion (and says it tripped once).
type refusingDeletions struct {
	asked, forgotten int
	forgot           []framework.Key
}

func (r *refusingDeletions) Allow(framework.Key, int) (bool, time.Duration, bool) {
	r.asked++
	return false, 0, r.asked == 1
}
func (r *refusingDeletions) Forget(k framework.Key) { r.forgotten++; r.forgot = append(r.forgot, k) }

// TestDeletionHeldByTheBreaker: a deletion the breaker holds is not made, and the engine is told once
// that holding started; a wanted object is written as ever, and its key forgotten by the breaker.
func TestDeletionHeldByTheBreaker(t *testing.T) {
	h := newHarness(t, selecting("b"), objs(upCM, nsA), objs(nsA, owned(t, upCM)))
	breaker, told := &refusingDeletions{}, 0
	h.c.cfg.Deletions, h.c.cfg.OnDeletionsHeld = breaker, func() { told++ }
	for i := 0; i < 2; i++ {
		if _, err := h.c.process(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	if a := h.actions(); len(a) != 0 || breaker.asked != 2 || told != 1 {
		t.Errorf("actions %v, breaker asked %d times, told %d times; want no deletion, asked twice, told once", a, breaker.asked, told)
	}
	wanted := newHarness(t, selecting("a"), objs(upCM, nsA), objs(nsA))
	wanted.c.cfg.Deletions = breaker
	if _, err := wanted.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if a := wanted.actions(); len(a) != 1 || !slices.Contains(breaker.forgot, key) {
		t.Errorf("actions %v, forgotten %v; want the object created and its key forgotten", a, breaker.forgot)
	}
}
