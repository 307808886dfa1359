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
