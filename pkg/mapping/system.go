package mapping

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// systemNames are the objects an apiserver's own controllers make in every namespace, on both sides
// (kube-controller-manager at the edge, kcp in every workspace): ConfigMaps holding the cluster's CA
// and the default ServiceAccount. Each side has its own, with its own content.
var systemNames = map[schema.GroupResource]map[string]bool{
	{Resource: "configmaps"}:      {"kube-root-ca.crt": true, "openshift-service-ca.crt": true},
	{Resource: "serviceaccounts"}: {"default": true},
}

// ServiceAccountTokenType is the type of the Secrets the token controller fills for a ServiceAccount.
const ServiceAccountTokenType = "kubernetes.io/service-account-token"

// SystemObject tells whether an object is one an apiserver makes itself: ConfigMap kube-root-ca.crt
// (and openshift-service-ca.crt), ServiceAccount default, or a Secret of type
// kubernetes.io/service-account-token. The syncer never selects such an object by a wildcard, in
// either direction: copying one side's over the other's would fight that side's controllers for ever.
// Syncing one anyway takes naming it explicitly.
func SystemObject(gr schema.GroupResource, obj *unstructured.Unstructured) bool {
	if systemNames[gr][obj.GetName()] {
		return true
	}
	if gr == (schema.GroupResource{Resource: "secrets"}) {
		t, _, _ := unstructured.NestedString(obj.Object, "type")
		return t == ServiceAccountTokenType
	}
	return false
}
