package selection

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// TestPolicyOf: what the configs selecting an object say of it, answered at once — each setting as
// the configs that select the object combine it, and nothing from a config that does not select it.
func TestPolicyOf(t *testing.T) {
	no := false
	deployments := metav1.GroupResource{Group: "apps", Resource: "deployments"}
	entry := func(ns string, retain []string, drift string) edgev1.NamespaceScopeDownsyncs {
		return edgev1.NamespaceScopeDownsyncs{Namespaces: []string{ns}, Resources: []edgev1.NamespaceScopeDownsyncResource{
			{GroupResource: deployments, APIVersion: "v1", EntryPolicy: edgev1.EntryPolicy{RetainFields: retain, Drift: drift}}}}
	}
	configs := []*edgev1.SyncerConfig{
		{ObjectMeta: metav1.ObjectMeta{Name: "shop"}, Spec: edgev1.SyncerConfigSpec{NamespaceScope: entry("shop", []string{"spec.replicas"}, "Report")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "shop-too"}, Spec: edgev1.SyncerConfigSpec{NamespaceScope: entry("shop", []string{"metadata.labels[tier]"}, ""),
			PropagateDeletion: &no}},
		{ObjectMeta: metav1.ObjectMeta{Name: "audit"}, Spec: edgev1.SyncerConfigSpec{NamespaceScope: entry("audit", nil, ""), ReportOnly: true}},
		{ObjectMeta: metav1.ObjectMeta{Name: "frozen", Annotations: map[string]string{mapping.PausedUntilAnnotation: "2026-12-08T00:00:00Z"}},
			Spec: edgev1.SyncerConfigSpec{NamespaceScope: entry("frozen", nil, "")}},
	}
	sel, problems := Merge(configs)
	if len(problems) != 0 {
		t.Fatalf("problems %v", problems)
	}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	obj := func(ns string) Object {
		return Object{Resource: schema.GroupResource{Group: "apps", Resource: "deployments"}, Kind: "Deployment", Namespace: ns, Name: "web",
			Labels: labels.Set{}}
	}

	shop := sel.PolicyOf(obj("shop"), now)
	if !shop.Selected || shop.ReportOnly || shop.Drift != mapping.DriftReport || !shop.PausedUntil.IsZero() ||
		mapping.PathsKey(shop.Retain) != "metadata.labels[tier],spec.replicas" || !shop.PropagatesDeletion {
		t.Errorf("shop: %+v; want selected, written, drift Report, both retained fields, deletion propagated by the config that does", shop)
	}
	if audit := sel.PolicyOf(obj("audit"), now); !audit.Selected || !audit.ReportOnly || audit.Drift != mapping.DriftCorrect || len(audit.Retain) != 0 {
		t.Errorf("audit: %+v; want selected, report-only, nothing else", audit)
	}
	frozen := sel.PolicyOf(obj("frozen"), now)
	if !frozen.Selected || !frozen.PausedUntil.Equal(time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("frozen: %+v; want paused until the config's end", frozen)
	}
	if later := sel.PolicyOf(obj("frozen"), now.Add(24*time.Hour)); !later.PausedUntil.IsZero() {
		t.Errorf("frozen after the pause's end: paused until %v", later.PausedUntil)
	}
	if other := sel.PolicyOf(obj("elsewhere"), now); other.Selected || other.ReportOnly || len(other.Retain) != 0 || other.Drift != mapping.DriftCorrect ||
		!other.PausedUntil.IsZero() {
		t.Errorf("an object no config selects: %+v", other)
	}
	var none *Selection
	if p := none.PolicyOf(obj("shop"), now); p.Selected || !p.PropagatesDeletion {
		t.Errorf("no selection: %+v", p)
	}
}
