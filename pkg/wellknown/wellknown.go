package wellknown

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

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

// Named opt-ins of the fence besides resources (Fenced): a Service's externalIPs (which take over
// any address in the cluster, CVE-2020-8554), a CRD's conversion webhook (through which the edge's
// apiserver calls out to where the object names), and NetworkPolicies, ResourceQuotas and
// LimitRanges in namespaces the syncer did not make (the edge owner's own).
const (
	AllowExternalIPs        = "service-external-ips"
	AllowConversionWebhooks = "crd-conversion-webhooks"
	AllowPoliciesInEdgesOwn = "policies-in-edge-namespaces"
)

// fenced are the resources whose objects act on the whole cluster beyond themselves: preemption and
// a default priority, API flow control, aggregated APIs (the apiserver calls out), node runtimes,
// storage and ingress classes, CSI drivers, nodes and volume attachments, Service address ranges,
// certificate requests and trust bundles, device classes, and Endpoints and EndpointSlices (which
// send any Service's traffic where they name).
var fenced = []schema.GroupResource{
	{Resource: "endpoints"},
	{Resource: "nodes"},
	{Group: "apiregistration.k8s.io", Resource: "apiservices"},
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"},
	{Group: "certificates.k8s.io", Resource: "clustertrustbundles"},
	{Group: "discovery.k8s.io", Resource: "endpointslices"},
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"},
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "prioritylevelconfigurations"},
	{Group: "networking.k8s.io", Resource: "ingressclasses"},
	{Group: "networking.k8s.io", Resource: "ipaddresses"},
	{Group: "networking.k8s.io", Resource: "servicecidrs"},
	{Group: "node.k8s.io", Resource: "runtimeclasses"},
	{Group: "resource.k8s.io", Resource: "deviceclasses"},
	{Group: "scheduling.k8s.io", Resource: "priorityclasses"},
	{Group: "storage.k8s.io", Resource: "csidrivers"},
	{Group: "storage.k8s.io", Resource: "csinodes"},
	{Group: "storage.k8s.io", Resource: "storageclasses"},
	{Group: "storage.k8s.io", Resource: "volumeattachments"},
	{Group: "storage.k8s.io", Resource: "volumeattributesclasses"},
}

// Fenced are the resources a fence keeps the syncer from writing unless the edge owner names them
// (as resource.group, "endpoints" for the core group's).
func Fenced() []schema.GroupResource {
	return append([]schema.GroupResource(nil), fenced...)
}

// FencedUnless tells whether gr is Fenced and not among allowed (each resource.group, or a named
// opt-in, which allows no resource).
func FencedUnless(gr schema.GroupResource, allowed []string) bool {
	for _, f := range fenced {
		if f == gr {
			return !slices.Contains(allowed, gr.String())
		}
	}
	return false
}

// PoliciesInNamespaces are the namespaced resources a fence writes only in the namespaces the
// syncer made, unless AllowPoliciesInEdgesOwn: a deny-all NetworkPolicy or a zero quota would stop
// the edge owner's own workloads.
func PoliciesInNamespaces() []schema.GroupResource {
	return []schema.GroupResource{{Resource: "limitranges"}, {Resource: "resourcequotas"}, {Group: "networking.k8s.io", Resource: "networkpolicies"}}
}

// FenceAllowNames are what the edge owner may allow through a fence by name (--fence-allow): the
// Fenced resources as resource.group, then the named opt-ins.
func FenceAllowNames() []string {
	var out []string
	for _, gr := range fenced {
		out = append(out, gr.String())
	}
	return append(out, AllowConversionWebhooks, AllowPoliciesInEdgesOwn, AllowExternalIPs)
}

// CheckFenceAllow is an error naming what of allow FenceAllowNames does not list.
func CheckFenceAllow(allow []string) error {
	known := FenceAllowNames()
	var bad []string
	for _, a := range allow {
		if !slices.Contains(known, a) {
			bad = append(bad, strconv.Quote(a))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%s: neither a fenced resource nor an opt-in (%s)", strings.Join(bad, ", "), strings.Join(known, ", "))
}
