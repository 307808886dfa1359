package wellknown

import "k8s.io/apimachinery/pkg/runtime/schema"

var (
	// Namespaces are core Namespaces.
	Namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	// CRDs are CustomResourceDefinitions.
	CRDs = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	// APIBindings are kcp's APIBindings (their version is discovered).
	APIBindings = schema.GroupResource{Group: "apis.kcp.io", Resource: "apibindings"}
	// EndpointSlices are kcp's APIExportEndpointSlices: where an APIExport's virtual workspace is.
	EndpointSlices = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiexportendpointslices"}
)

// AdmissionPolicy tells whether gr is one of the admission policies and their bindings, which
// Kubernetes exempts from admission control (so that no policy can lock the cluster out of its own
// policies): no fence at the edge can hold them, so a syncer writing through an executor never writes
// them.
func AdmissionPolicy(gr schema.GroupResource) bool {
	if gr.Group != "admissionregistration.k8s.io" {
		return false
	}
	switch gr.Resource {
	case "validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings":
		return true
	}
	return false
}

// ServiceAccountUser is the user name the apiserver gives the ServiceAccount name in namespace.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}
