package bootstrap

import (
	"context"
	"fmt"
	"io"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kubestellar/syncer/pkg/wellknown"
)

// ExportRules are the syncer's permissions in the provider workspace when it serves every workspace
// bound to an APIExport: read the APIExportEndpointSlice, and everything of the export's content
// through its virtual workspace (what kcp asks of an export's controller); nothing else there.
func ExportRules(slice, export string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{wellknown.EndpointSlices.Group}, Resources: []string{wellknown.EndpointSlices.Resource}, ResourceNames: []string{slice}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports/content"}, ResourceNames: []string{export}, Verbs: []string{"*"}},
	}
}

// sliceExport is the name of the APIExport an APIExportEndpointSlice of the provider workspace
// (served at host) points at. An export in another workspace than host's is named, with what to
// grant there (kcp fills spec.export.path in even for the slice's own workspace).
func sliceExport(ctx context.Context, dyn dynamic.Interface, host, slice string, out io.Writer) (string, error) {
	obj, err := dyn.Resource(wellknown.EndpointSlices).Get(ctx, slice, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("no APIExportEndpointSlice %q in the workspace of the kubeconfig (point it at the provider workspace that holds the slice)", slice)
	case err != nil:
		return "", fmt.Errorf("reading APIExportEndpointSlice %q (is the kubeconfig's server a kcp workspace?): %w", slice, err)
	}
	export, _, _ := unstructured.NestedString(obj.Object, "spec", "export", "name")
	path, _, _ := unstructured.NestedString(obj.Object, "spec", "export", "path")
	if export == "" {
		return "", fmt.Errorf("APIExportEndpointSlice %q names no APIExport (spec.export.name)", slice)
	}
	if path != "" && !strings.HasSuffix(strings.TrimRight(host, "/"), "/clusters/"+path) {
		fmt.Fprintf(out, "Note: APIExport %q is in workspace %s: grant the syncer's service account apiexports/content (verbs \"*\", resourceNames [%s]) there too\n",
			export, path, export)
	}
	return export, nil
}
