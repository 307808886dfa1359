package selection

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/problem"
)

// FromEdgeSyncConfig converts a legacy EdgeSyncConfig into the SyncerConfig that selects the same
// objects, so that both kinds merge into one Selection (release-0.14 went the other way):
//   - a downSyncedResources entry with a namespace becomes a namespacedObjects entry
//     (objectsByNamespace [{namespace, names: [name]}]); one without, a clusterScope entry
//     (objects [name]). "*" keeps its meaning in both.
//   - an upSyncedResources entry becomes an upsync entry: apiGroup group, kinds [kind], namespaces
//     [namespace] (none when empty: cluster-scoped objects), names [name]. Upsync has no version:
//     the edge's is used.
//   - conversions are carried as they are.
//
// Entries name their resource by kind (resource is left empty), resolved against discovery as a
// SyncerConfig entry's kind is; labelSelector and annotationSelector are carried too. An entry
// without a name selects nothing and is left out, reported as EmptyEntry; a config without entries
// is reported as EmptyConfig. The result has the EdgeSyncConfig's metadata; fields maps each entry of
// the result ("clusterScope[0]") to the EdgeSyncConfig entry it comes from ("downSyncedResources[2]"),
// so that problems point at what the user wrote.
func FromEdgeSyncConfig(esc *edgev1.EdgeSyncConfig) (cfg *edgev1.SyncerConfig, fields map[string]string, problems []problem.Problem) {
	cfg = &edgev1.SyncerConfig{ObjectMeta: *esc.DeepCopy()}
	fields = map[string]string{}
	spec := &cfg.Spec
	report := func(kind problem.Kind, field, reason string) {
		problems = append(problems, problem.Problem{Kind: kind, ConfigKind: problem.EdgeSyncConfig, Config: esc.Name, Field: field, Reason: reason})
	}
	if len(esc.Spec.DownSyncedResources) == 0 && len(esc.Spec.UpSyncedResources) == 0 && len(esc.Spec.Conversions) == 0 {
		report(problem.EmptyConfig, "", "selects nothing: no downSyncedResources, upSyncedResources or conversions entries")
	}
	for i, r := range esc.Spec.DownSyncedResources {
		field := fmt.Sprintf("downSyncedResources[%d]", i)
		if r.Name == "" {
			report(problem.EmptyEntry, field, "name is empty: the entry selects nothing (\"*\" selects every object)")
			continue
		}
		if r.Namespace == "" {
			fields[fmt.Sprintf("clusterScope[%d]", len(spec.ClusterScope))] = field
			spec.ClusterScope = append(spec.ClusterScope, edgev1.ClusterScopeDownsyncResource{
				GroupResource: metav1.GroupResource{Group: r.Group}, Kind: r.Kind, APIVersion: r.Version, Objects: []string{r.Name},
				LabelSelector: r.LabelSelector, AnnotationSelector: r.AnnotationSelector,
			})
			continue
		}
		fields[fmt.Sprintf("namespacedObjects[%d]", len(spec.NamespacedObjects))] = field
		spec.NamespacedObjects = append(spec.NamespacedObjects, edgev1.NamespaceScopeDownsyncObjects{
			GroupResource: metav1.GroupResource{Group: r.Group}, Kind: r.Kind, APIVersion: r.Version,
			ObjectsByNamespace: []edgev1.NamespaceAndNames{{Namespace: r.Namespace, Names: []string{r.Name}}},
			LabelSelector:      r.LabelSelector, AnnotationSelector: r.AnnotationSelector,
		})
	}
	for i, r := range esc.Spec.UpSyncedResources {
		field := fmt.Sprintf("upSyncedResources[%d]", i)
		if r.Name == "" {
			report(problem.EmptyEntry, field, "name is empty: the entry selects nothing (\"*\" selects every object)")
			continue
		}
		u := edgev1.UpsyncSet{APIGroup: r.Group, Kinds: []string{r.Kind}, Names: []string{r.Name},
			LabelSelector: r.LabelSelector, AnnotationSelector: r.AnnotationSelector}
		if r.Namespace != "" {
			u.Namespaces = []string{r.Namespace}
		}
		fields[fmt.Sprintf("upsync[%d]", len(spec.Upsync))] = field
		spec.Upsync = append(spec.Upsync, u)
	}
	spec.Conversions = append([]edgev1.Conversion(nil), esc.Spec.Conversions...)
	return cfg, fields, problems
}
