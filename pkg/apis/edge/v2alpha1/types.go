package v2alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the syncer's configuration objects.
const GroupName = "edge.kubestellar.io"

// SchemeGroupVersion is the group and version of this package's types.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v2alpha1"}

// SyncerConfigResource is the resource that serves SyncerConfig objects upstream.
var SyncerConfigResource = SchemeGroupVersion.WithResource("syncerconfigs")

// EdgeSyncConfigGVR is the resource that serves the legacy EdgeSyncConfig objects upstream.
var EdgeSyncConfigGVR = SchemeGroupVersion.WithResource("edgesyncconfigs")

// Wildcard matches every name, namespace or resource where a list allows it.
const Wildcard = "*"

// SyncerConfig tells a KubeStellar syncer what to downsync from its mailbox workspace to its edge
// cluster and what to upsync from the edge. The syncer reads every SyncerConfig of the workspace
// (cluster-scoped, short name escfg) and selects their union; edits take effect without a restart.
// The spec is that of KubeStellar release-0.14.
type SyncerConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// What this config selects for downsync (namespaceScope, namespacedObjects, clusterScope) and
	// upsync (upsync), and whether status is returned. A config that selects nothing is reported as a
	// warning (condition SelectionValid, reason ResolvedWithWarnings).
	Spec SyncerConfigSpec `json:"spec,omitempty"`
	// Written by the syncer, never by users: the heartbeat and the conditions, every
	// --heartbeat-period (20s by default) while the syncer runs (the leader, when several replicas run
	// with --leader-elect).
	Status SyncerConfigStatus `json:"status,omitempty"`
}

// SyncerConfigSpec is the selection, with the release-0.14 field names.
type SyncerConfigSpec struct {
	// Selects every object of each listed resource in each listed namespace, and the Namespace
	// objects of the listed namespaces themselves (also when no resource is listed). The objects
	// apiservers make in every namespace (ConfigMap kube-root-ca.crt, ServiceAccount default,
	// service-account token Secrets) are left out: they are selected only when namespacedObjects
	// names them. Omitted selects nothing.
	NamespaceScope NamespaceScopeDownsyncs `json:"namespaceScope,omitempty"`
	// Selects namespaced objects by resource, namespace and name. The Namespace object of each
	// namespace listed with a non-empty names list is downsynced too. Omitted or empty selects
	// nothing.
	NamespacedObjects []NamespaceScopeDownsyncObjects `json:"namespacedObjects,omitempty"`
	// Selects cluster-scoped objects by resource and name, CustomResourceDefinitions among them
	// (custom resources are downsynced once their CRD is Established at the edge). Omitted or empty
	// selects nothing.
	ClusterScope []ClusterScopeDownsyncResource `json:"clusterScope,omitempty"`
	// Selects objects at the edge to copy up to the mailbox workspace: created and updated upstream
	// (status included), and deleted there when the edge object goes or leaves the selection. An
	// object is selected by an entry when its group is apiGroup and its resource, namespace
	// (cluster-scoped objects have none) and name are listed. Objects the syncer downsynced are never
	// upsynced, nor are CustomResourceDefinitions (the API must exist upstream at the edge's
	// version); missing upstream namespaces are created. Omitted or empty upsyncs nothing.
	Upsync []UpsyncSet `json:"upsync,omitempty"`
	// Whether the status of the objects this config downsyncs is written back upstream (status
	// return) from the edge's .status; CustomResourceDefinitions and Namespaces never have theirs
	// returned. Omitted means true. The configs are merged as a union: an object selected by several
	// configs has its status returned when any of them omits this field or sets it to true.
	ReturnStatus *bool `json:"returnStatus,omitempty"`
	// Whether the edge copies of the objects this config downsyncs are deleted when the upstream
	// object is deleted or leaves the selection. Omitted means true. With false, the edge copy is
	// kept (marked with the annotation edge.kubestellar.io/propagate-deletion: "false") and left
	// alone once its upstream object is gone. The configs are merged as a union: an object selected
	// by several configs is deleted when any of them omits this field or sets it to true.
	PropagateDeletion *bool `json:"propagateDeletion,omitempty"`
	// Whether the syncer only reports what it would write for the objects this config selects,
	// writing nothing at the edge for them but server-side dry-runs: each object it would create,
	// update (with the fields that would change) or delete is listed in status.syncTargets[].report
	// and logged. An object another config selects without it is written. Omitted means false.
	ReportOnly bool `json:"reportOnly,omitempty"`
	// Renaming rules between the denatured form of objects in the mailbox workspace and their natural
	// form at the edge. Downsync writes an object matching a rule's upstream side in the rule's
	// downstream form (group, version, kind and, where given, name; for a CustomResourceDefinition
	// also its spec.group and names); status return and upsync map back to the upstream form. The
	// rules of every SyncerConfig and EdgeSyncConfig are merged; two rules for one upstream side that
	// disagree are reported (condition SelectionValid) and neither applies. Omitted or empty renames
	// nothing.
	Conversions []Conversion `json:"conversions,omitempty"`
}

// Conversion renames objects between the mailbox workspace (upstream) and the edge (downstream).
// With names, it renames one object: for a CustomResourceDefinition named <plural>.<group>, the
// custom resources of the upstream group are also renamed into the downstream group (so a CRD
// conversion alone renatures both the API and its objects). Without names, it renames every
// object of the upstream group and kind (and version, when given).
type Conversion struct {
	// The denatured form, as the object is in the mailbox workspace.
	Upstream EdgeSyncConfigResource `json:"upstream"`
	// The natural form, as the object is at the edge.
	Downstream EdgeSyncConfigResource `json:"downstream"`
}

// ReturnsStatus is the ReturnStatus field with its default applied.
func (s *SyncerConfigSpec) ReturnsStatus() bool { return s.ReturnStatus == nil || *s.ReturnStatus }

// PropagatesDeletion is the PropagateDeletion field with its default applied.
func (s *SyncerConfigSpec) PropagatesDeletion() bool {
	return s.PropagateDeletion == nil || *s.PropagateDeletion
}

// StatusReturn narrows what of the status of one entry's objects is returned upstream. An object
// selected by several entries gets the union: every field when one of them returns every field, the
// largest cap, nothing only when none returns anything.
type StatusReturn struct {
	// Whether the status of these objects is returned. Omitted means true.
	Enabled *bool `json:"enabled,omitempty"`
	// The fields of .status returned, each a field name or a dotted path (readyReplicas,
	// conditions, loadBalancer.ingress); the rest of the edge's status is not written upstream.
	// Omitted or empty: every field.
	Fields []string `json:"fields,omitempty"`
	// The largest status returned, in bytes of JSON: past it, the largest top-level fields are left
	// out until it fits, and the condition EdgeStatusCut (True, reason TooLarge) names them.
	// Omitted or 0: no cap but the apiserver's.
	MaxBytes int64 `json:"maxBytes,omitempty"`
}

// Returns is the Enabled field with its default applied.
func (r *StatusReturn) Returns() bool { return r == nil || r.Enabled == nil || *r.Enabled }

// NamespaceScopeDownsyncs selects whole namespaces' worth of some resources.
type NamespaceScopeDownsyncs struct {
	// Namespaces whose objects of the listed resources are downsynced; their Namespace objects are
	// downsynced too. "*" means every namespace (and every Namespace object). Omitted or empty means
	// none.
	Namespaces []string `json:"namespaces,omitempty"`
	// Namespaced resources whose objects in the listed namespaces are downsynced. Omitted or empty
	// means none (the Namespace objects are downsynced all the same).
	Resources []NamespaceScopeDownsyncResource `json:"resources,omitempty"`
}

// NamespaceScopeDownsyncResource names one namespaced resource.
type NamespaceScopeDownsyncResource struct {
	// GroupResource names the resource: group is its API group ("" or omitted for the core group),
	// resource its plural lowercase name (e.g. deployments) or "*" for every namespaced resource of
	// the group that can be listed, watched, created, patched and deleted.
	metav1.GroupResource `json:",inline"`
	// Version of the resource, without the group (e.g. v1). When the upstream does not serve it,
	// the group's preferred version is used and a warning is reported (condition SelectionValid); the
	// edge must serve the version used.
	APIVersion string `json:"apiVersion"`
	// Kind of the resource's objects, accepted instead of resource (or beside it, when both name
	// the same resource).
	Kind string `json:"kind,omitempty"`
	// Selects only the objects whose labels match. Omitted selects every object the entry names.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Selects only the objects whose annotations match, written as a label selector over the
	// annotations. Omitted selects every object the entry names.
	AnnotationSelector *metav1.LabelSelector `json:"annotationSelector,omitempty"`
	// How the selected objects are synced beyond being selected: status return, retained fields,
	// drift policy.
	EntryPolicy `json:",inline"`
}

// EntryPolicy is how the objects a downsync entry selects are synced beyond being selected; every
// kind of entry has it (inline).
type EntryPolicy struct {
	// What of the selected objects' status is returned upstream, when the config returns status.
	// Omitted: all of it.
	StatusReturn *StatusReturn `json:"statusReturn,omitempty"`
	// Fields of the selected objects that the edge owns: the syncer sets them when it creates the
	// edge copy and never changes them afterwards, nor counts their changes at the edge as drift.
	// Each a dotted path (spec.replicas); "[*]" after a list field names the field in each element
	// (spec.template.spec.containers[*].image); "[key]" names a map key with dots or slashes
	// (metadata.annotations[example.com/owner]). An object selected by several entries retains the
	// union. spec.replicas of an object a HorizontalPodAutoscaler at the edge scales is retained
	// without saying.
	RetainFields []string `json:"retainFields,omitempty"`
	// What the syncer does when a selected object's edge copy is changed at the edge (drift):
	// Correct puts it back at once; Report leaves it, says so upstream (Event Drifted, label
	// drifted.edge.kubestellar.io/<sync target>) and holds the object's upstream changes until the
	// drift is acknowledged or goes away. An object selected by several entries gets Report if one
	// says so; the annotation edge.kubestellar.io/drift on the object overrides them. Omitted: Correct.
	Drift string `json:"drift,omitempty"`
	// Lets rewrites that empty the selected objects' edge copies (spec.replicas 0; a
	// ConfigMap's or Secret's data emptied) through without the deletion breaker counting them, as it
	// counts them by default. Honoured only where the site lets its mailbox release held deletions
	// (the syncer's --mailbox-releases-deletions); an object selected by several entries is counted
	// unless all of them allow it. Omitted: false.
	AllowEmptying bool `json:"allowEmptying,omitempty"`
}

// NamespaceScopeDownsyncObjects selects objects of one namespaced resource by namespace and name.
type NamespaceScopeDownsyncObjects struct {
	// GroupResource names the resource: group is its API group ("" or omitted for the core group),
	// resource its plural lowercase name (e.g. deployments) or "*" for every namespaced resource of
	// the group that can be listed, watched, created, patched and deleted.
	metav1.GroupResource `json:",inline"`
	// Version of the resource, without the group (e.g. v1). When the upstream does not serve it,
	// the group's preferred version is used and a warning is reported (condition SelectionValid); the
	// edge must serve the version used.
	APIVersion string `json:"apiVersion"`
	// Kind of the resource's objects, accepted instead of resource (or beside it, when both name
	// the same resource).
	Kind string `json:"kind,omitempty"`
	// Selects only the objects whose labels match. Omitted selects every object the entry names.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Selects only the objects whose annotations match, written as a label selector over the
	// annotations. Omitted selects every object the entry names.
	AnnotationSelector *metav1.LabelSelector `json:"annotationSelector,omitempty"`
	// How the selected objects are synced beyond being selected: status return, retained fields,
	// drift policy.
	EntryPolicy `json:",inline"`
	// The objects selected, namespace by namespace. Omitted or empty selects none.
	ObjectsByNamespace []NamespaceAndNames `json:"objectsByNamespace,omitempty"`
}

// NamespaceAndNames lists names in one namespace; an empty list means none, "*" means all.
type NamespaceAndNames struct {
	// Namespace of the objects, or "*" for every namespace. Its Namespace object is downsynced too
	// (every Namespace object, for "*"), unless names is empty.
	Namespace string `json:"namespace"`
	// Names of the objects in that namespace. "*" means every object of the resource there, except
	// the objects apiservers make in every namespace (ConfigMap kube-root-ca.crt, ServiceAccount
	// default, service-account token Secrets), which are selected only when named. Omitted or empty
	// means none.
	Names []string `json:"names,omitempty"`
}

// ClusterScopeDownsyncResource selects objects of one cluster-scoped resource. Objects omitted (nil)
// means all, an empty list means none, "*" means all.
type ClusterScopeDownsyncResource struct {
	// GroupResource names the resource: group is its API group ("" or omitted for the core group),
	// resource its plural lowercase name (e.g. customresourcedefinitions) or "*" for every
	// cluster-scoped resource of the group that can be listed, watched, created, patched and deleted.
	metav1.GroupResource `json:",inline"`
	// Version of the resource, without the group (e.g. v1). When the upstream does not serve it,
	// the group's preferred version is used and a warning is reported (condition SelectionValid); the
	// edge must serve the version used.
	APIVersion string `json:"apiVersion"`
	// Names of the objects. Omitted means every object of the resource; an empty list ([]) means
	// none; "*" means every object.
	Objects []string `json:"objects,omitempty"`
	// Kind of the resource's objects, accepted instead of resource (or beside it, when both name
	// the same resource).
	Kind string `json:"kind,omitempty"`
	// Selects only the objects whose labels match. Omitted selects every object the entry names.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Selects only the objects whose annotations match, written as a label selector over the
	// annotations. Omitted selects every object the entry names.
	AnnotationSelector *metav1.LabelSelector `json:"annotationSelector,omitempty"`
	// How the selected objects are synced beyond being selected: status return, retained fields,
	// drift policy.
	EntryPolicy `json:",inline"`
}

// UpsyncSet selects edge objects to upsync. An empty list means nothing; "*" means all.
type UpsyncSet struct {
	// API group of the objects: "" for the core group, "*" for any group.
	APIGroup string `json:"apiGroup"`
	// Plural lowercase names of the objects' resources in that group. "*" means every resource of the
	// group that can be listed, watched, created, patched and deleted, except CustomResourceDefinitions
	// and Namespaces. Empty means none.
	Resources []string `json:"resources"`
	// Namespaces of the objects (cluster-scoped objects are selected whatever this says); "*" means
	// every namespace. Omitted or empty selects no namespaced object.
	Namespaces []string `json:"namespaces,omitempty"`
	// Names of the objects. "*" means every object, except the objects apiservers make in every
	// namespace (ConfigMap kube-root-ca.crt, ServiceAccount default, service-account token Secrets),
	// which are upsynced only when named. Empty means none.
	Names []string `json:"names"`
	// Kinds of the objects in that group, accepted instead of resources (or beside them).
	Kinds []string `json:"kinds,omitempty"`
	// Selects only the objects whose labels match. Omitted selects every object the entry names.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Selects only the objects whose annotations match, written as a label selector over the
	// annotations. Omitted selects every object the entry names.
	AnnotationSelector *metav1.LabelSelector `json:"annotationSelector,omitempty"`
}

// EdgeSyncConfig is the legacy configuration of the KubeStellar release-0.14 syncer (cluster-scoped,
// short name esc), read beside every SyncerConfig: its entries and conversions are merged into the
// same selection, and the syncer writes its heartbeat and conditions on it as on a SyncerConfig.
type EdgeSyncConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// What this config selects for downsync and upsync, object by object, and how objects are
	// renamed between the mailbox workspace and the edge.
	Spec EdgeSyncConfigSpec `json:"spec,omitempty"`
	// Written by the syncer, never by users: the heartbeat and the conditions, as on a SyncerConfig.
	Status SyncerConfigStatus `json:"status,omitempty"`
}

// EdgeSyncConfigSpec is the release-0.14 EdgeSyncConfig spec.
type EdgeSyncConfigSpec struct {
	// Objects downsynced from the mailbox workspace to the edge, each named by group, version, kind,
	// namespace (empty for cluster-scoped objects) and name; "*" as name or namespace means all. The
	// Namespace objects of the named namespaces are downsynced too. Status is returned and deletion
	// propagated for all of them.
	DownSyncedResources []EdgeSyncConfigResource `json:"downSyncedResources,omitempty"`
	// Objects upsynced from the edge to the mailbox workspace, named as downSyncedResources are.
	UpSyncedResources []EdgeSyncConfigResource `json:"upSyncedResources,omitempty"`
	// Renaming rules between the denatured form of objects in the mailbox workspace and their
	// natural form at the edge, as SyncerConfig's conversions.
	Conversions []Conversion `json:"conversions,omitempty"`
}

// EdgeSyncConfigResource names objects by group, version, kind, namespace and name.
type EdgeSyncConfigResource struct {
	// Kind of the objects (e.g. ConfigMap).
	Kind string `json:"kind"`
	// API group of the objects; empty for the core group.
	Group string `json:"group,omitempty"`
	// Version of the objects, without the group (e.g. v1). Empty means the group's preferred version.
	Version string `json:"version,omitempty"`
	// Name of the object; "*" means every object. Empty means every object in a conversion and none
	// in a selection.
	Name string `json:"name,omitempty"`
	// Namespace of the objects; "*" means every namespace; empty for cluster-scoped objects. Not used
	// by conversions.
	Namespace string `json:"namespace,omitempty"`
	// Selects only the objects whose labels match. Omitted selects every object named. Not used by
	// conversions.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Selects only the objects whose annotations match, written as a label selector over the
	// annotations. Omitted selects every object named. Not used by conversions.
	AnnotationSelector *metav1.LabelSelector `json:"annotationSelector,omitempty"`
}

// SyncerConfigStatus is written by the syncer.
type SyncerConfigStatus struct {
	// When the syncer last wrote this status: every --heartbeat-period (20s by default; 0 turns the
	// heartbeat off) while it runs and leads. Older than a few periods means that the syncer is
	// stopped, cannot write to the mailbox workspace, or that no replica leads.
	LastSyncerHeartbeatTime *metav1.Time `json:"lastSyncerHeartbeatTime,omitempty"`
	// What the syncer sees, written with each heartbeat by server-side apply (field manager
	// kubestellar-syncer/<sync target>), one condition per type: Ready (True when all the others are),
	// SelectionValid (every selected resource is served on both sides; warnings keep it True with
	// reason ResolvedWithWarnings), ObjectsSynced (no object failing to sync or in conflict; when
	// False, counts and up to five examples), UpstreamReachable and DownstreamReachable (the last
	// request to that side got a response and none has waited more than 10s for one), DeletionsHeld
	// (True while the deletion breaker holds deletions: its True is the problem), ReportOnly
	// (only while the syncer reports instead of writing; Ready is then False) and UpstreamCredential
	// (the upstream ServiceAccount token is renewed before it expires; absent for other
	// credentials). A problem with
	// the selection shows on the configs it comes from; the others show on every config.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// One entry per sync target whose syncer reads this config, each written by that syncer alone
	// (field manager kubestellar-syncer/<sync target>): its heartbeat and its conditions, kept apart
	// from the others'. When several sync targets read the config, lastSyncerHeartbeatTime and
	// conditions above sum up the entries whose heartbeat is recent (within three heartbeat periods): a
	// condition is True when it is True for each of them, else it has the reason of one for which it is
	// not and a message naming it.
	SyncTargets []SyncTargetStatus `json:"syncTargets,omitempty"`
}

// SyncTargetStatus is what the syncer of one sync target sees of a config.
type SyncTargetStatus struct {
	// The sync target's name (the syncer's --sync-target-name).
	Name string `json:"name"`
	// When that syncer last wrote this entry.
	LastSyncerHeartbeatTime *metav1.Time `json:"lastSyncerHeartbeatTime,omitempty"`
	// Its conditions, of the types and meanings of the config's own conditions.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// What that syncer would write at its edge, while it only reports (report-only mode, or a config's
	// reportOnly): the counts, and the first objects with the fields that would change.
	Report *SyncReport `json:"report,omitempty"`
}

// SyncReport is what a syncer in report-only mode would write at its edge.
type SyncReport struct {
	// How many objects it would create.
	Creates int `json:"creates"`
	// How many objects it would update.
	Updates int `json:"updates"`
	// How many objects it would delete.
	Deletes int `json:"deletes"`
	// How many objects of those names it may not take (they exist without its mark).
	Conflicts int `json:"conflicts"`
	// How many writes the edge's dry-run refuses.
	Refused int `json:"refused"`
	// The first objects, by name.
	Objects []ReportedObject `json:"objects,omitempty"`
	// How many objects the list leaves out (the syncer's /report lists them all).
	Omitted int `json:"omitted,omitempty"`
}

// ReportedObject is what a syncer in report-only mode would do with one object.
type ReportedObject struct {
	// create, update, delete, conflict or refused.
	Action string `json:"action"`
	// The upstream object, as kubectl names it (deployments.apps shop/web).
	Object string `json:"object"`
	// The fields an update would change, as the edge's server-side dry-run of it shows.
	Changes []ReportedChange `json:"changes,omitempty"`
	// Why the edge refuses the write, or why the object is not taken.
	Error string `json:"error,omitempty"`
}

// ReportedChange is one field an update would change.
type ReportedChange struct {
	// The field: dotted names, [name=n] for the element of a list with that name.
	Path string `json:"path"`
	// Its value at the edge now, as JSON cut short; (absent) for none.
	Edge string `json:"edge"`
	// Its value after the update.
	Upstream string `json:"upstream"`
}

// EdgeSyncConfigFromUnstructured converts an EdgeSyncConfig read by a dynamic client, naming it in
// its error.
func EdgeSyncConfigFromUnstructured(u map[string]interface{}) (*EdgeSyncConfig, error) {
	cfg := &EdgeSyncConfig{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, cfg); err != nil {
		name, _, _ := unstructured.NestedString(u, "metadata", "name")
		return nil, fmt.Errorf("EdgeSyncConfig %q is malformed: %w", name, err)
	}
	return cfg, nil
}

// FromUnstructured converts an object read by a dynamic client. It reports the object's name in its
// error so that a malformed config can be pointed at.
func FromUnstructured(u map[string]interface{}) (*SyncerConfig, error) {
	cfg := &SyncerConfig{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, cfg); err != nil {
		name, _, _ := unstructured.NestedString(u, "metadata", "name")
		return nil, fmt.Errorf("SyncerConfig %q is malformed: %w", name, err)
	}
	return cfg, nil
}
