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

// Wildcard matches every name, namespace or resource where a list allows it.
const Wildcard = "*"

// SyncerConfig tells the syncer what to downsync from its mailbox workspace and what to upsync from
// its edge cluster. All SyncerConfigs in a workspace are merged (union).
type SyncerConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SyncerConfigSpec   `json:"spec,omitempty"`
	Status SyncerConfigStatus `json:"status,omitempty"`
}

// SyncerConfigSpec is the selection, with the release-0.14 field names.
type SyncerConfigSpec struct {
	// NamespaceScope selects every object of each listed resource in each listed namespace, and the
	// Namespace objects themselves.
	NamespaceScope NamespaceScopeDownsyncs `json:"namespaceScope,omitempty"`
	// NamespacedObjects selects namespaced objects by namespace and name.
	NamespacedObjects []NamespaceScopeDownsyncObjects `json:"namespacedObjects,omitempty"`
	// ClusterScope selects cluster-scoped objects, CRDs among them.
	ClusterScope []ClusterScopeDownsyncResource `json:"clusterScope,omitempty"`
	// Upsync selects objects created at the edge to be copied up.
	Upsync []UpsyncSet `json:"upsync,omitempty"`
	// ReturnStatus tells whether the status of the objects this config downsyncs is written back
	// upstream (status return). Omitted means true. An object selected by several configs has its
	// status returned when any of them wants it.
	ReturnStatus *bool `json:"returnStatus,omitempty"`
}

// ReturnsStatus is the ReturnStatus field with its default applied.
func (s *SyncerConfigSpec) ReturnsStatus() bool { return s.ReturnStatus == nil || *s.ReturnStatus }

// NamespaceScopeDownsyncs selects whole namespaces' worth of some resources.
type NamespaceScopeDownsyncs struct {
	// Namespaces whose contents are downsynced; "*" means every namespace.
	Namespaces []string `json:"namespaces,omitempty"`
	// Resources downsynced from those namespaces; resource "*" means every namespaced resource of the
	// group and version.
	Resources []NamespaceScopeDownsyncResource `json:"resources,omitempty"`
}

// NamespaceScopeDownsyncResource names one namespaced resource.
type NamespaceScopeDownsyncResource struct {
	metav1.GroupResource `json:",inline"`
	// APIVersion is the version only (no group), e.g. "v1".
	APIVersion string `json:"apiVersion"`
}

// NamespaceScopeDownsyncObjects selects objects of one namespaced resource by namespace and name.
type NamespaceScopeDownsyncObjects struct {
	metav1.GroupResource `json:",inline"`
	APIVersion           string              `json:"apiVersion"`
	ObjectsByNamespace   []NamespaceAndNames `json:"objectsByNamespace,omitempty"`
}

// NamespaceAndNames lists names in one namespace; an empty list means none, "*" means all.
type NamespaceAndNames struct {
	Namespace string   `json:"namespace"`
	Names     []string `json:"names,omitempty"`
}

// ClusterScopeDownsyncResource selects objects of one cluster-scoped resource. Objects omitted (nil)
// means all, an empty list means none, "*" means all.
type ClusterScopeDownsyncResource struct {
	metav1.GroupResource `json:",inline"`
	APIVersion           string   `json:"apiVersion"`
	Objects              []string `json:"objects,omitempty"`
}

// UpsyncSet selects edge objects to upsync. An empty list means nothing; "*" means all.
type UpsyncSet struct {
	APIGroup   string   `json:"apiGroup"`
	Resources  []string `json:"resources"`
	Namespaces []string `json:"namespaces,omitempty"`
	Names      []string `json:"names"`
}

// SyncerConfigStatus is written by the syncer.
type SyncerConfigStatus struct {
	// LastSyncerHeartbeatTime is when the syncer last wrote this status.
	LastSyncerHeartbeatTime *metav1.Time `json:"lastSyncerHeartbeatTime,omitempty"`
	// Conditions: Ready, SelectionValid, ObjectsSynced, UpstreamReachable, DownstreamReachable.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
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
