package testenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubestellar/syncer/manifests"
)

// The bed of a syncer that serves many mailboxes at once: one provider workspace with one
// APIExport, and mailbox workspaces that bind it and accept its permission claims. kcp serves the
// export's virtual workspace, through which one client sees the exported and claimed objects of
// every bound mailbox; the URL is in the APIExportEndpointSlice of the export's name.

// WorkspacesExport is the name of the APIExport (and of its APIExportEndpointSlice) that
// SetUpKCPExport makes. It differs from EdgeExport so that a syncer is seen to take the slice's name
// from its flag.
const WorkspacesExport = "mailboxes.edge.kubestellar.io"

// WorkspacesExportResources are the edge resources the export serves besides SyncerConfig
// (crd-puller's names).
var WorkspacesExportResources = []string{"deployments.apps"}

// WorkspacesExportClaims are the built-in resources the export claims, verbs ["*"].
var WorkspacesExportClaims = []schema.GroupResource{
	{Resource: "configmaps"},
	{Resource: "namespaces"},
	{Resource: "events"},
	{Resource: "secrets"},
	{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
}

var endpointSlicesGVR = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiexportendpointslices"}

// KCPExportOptions shape SetUpKCPExport.
type KCPExportOptions struct {
	// Prefix names the workspaces: root:<Prefix>-provider and root:<Prefix>-1, root:<Prefix>-2, ...
	Prefix string
	// Mailboxes is how many mailbox workspaces bind the export.
	Mailboxes int
}

// KCPExport is a provider workspace with one APIExport and the mailbox workspaces bound to it.
type KCPExport struct {
	// Export is the APIExport: SyncerConfig, the edge resources of WorkspacesExportResources and the
	// claims of WorkspacesExportClaims. Its name is also the name of its APIExportEndpointSlice.
	Export Export
	// Provider is root:<Prefix>-provider, holding the export and its endpoint slice; its kubeconfig is
	// what a syncer serving every mailbox starts from.
	Provider *Workspace
	// Mailboxes are the bound workspaces, in order.
	Mailboxes []*Workspace
	k         *KCP
}

// SetUpKCPExport pulls the CRDs of WorkspacesExportResources from downstream, makes the provider
// workspace with the export of them and of SyncerConfig (schemas made from the CRDs as in
// SetUpKCPMailboxes) claiming WorkspacesExportClaims, and opts.Mailboxes workspaces each binding the
// export with every claim accepted. It returns once every mailbox is bound, its claims applied and
// the exported resources served there; the virtual workspace may still be catching up (see
// EndpointURL).
func (e *Env) SetUpKCPExport(ctx context.Context, opts KCPExportOptions) (*KCPExport, error) {
	k := e.KCP
	if k == nil {
		return nil, errors.New("testenv: kcp is not running (Options.KCP)")
	}
	if opts.Prefix == "" || opts.Mailboxes < 1 {
		return nil, fmt.Errorf("testenv: SetUpKCPExport needs a prefix and at least one mailbox, got %q and %d", opts.Prefix, opts.Mailboxes)
	}
	start := time.Now()
	crds, err := k.PullCRDs(ctx, e.Downstream.Kubeconfig, WorkspacesExportResources...)
	if err != nil {
		return nil, err
	}
	syncerConfig, err := decodeCRD(manifests.SyncerConfigCRD)
	if err != nil {
		return nil, fmt.Errorf("testenv: the SyncerConfig CRD of export %s: %w", WorkspacesExport, err)
	}
	x := &KCPExport{
		Export: Export{Name: WorkspacesExport, CRDs: append([]*unstructured.Unstructured{syncerConfig}, crds...), Claims: WorkspacesExportClaims},
		k:      k,
	}
	if x.Provider, err = k.CreateProvider(ctx, opts.Prefix+"-provider", x.Export); err != nil {
		return nil, err
	}
	for i := 1; i <= opts.Mailboxes; i++ {
		ws, err := k.CreateWorkspace(ctx, fmt.Sprintf("%s-%d", opts.Prefix, i))
		if err != nil {
			return nil, err
		}
		if err := k.Bind(ctx, ws, x.Provider, x.Export); err != nil {
			return nil, err
		}
		x.Mailboxes = append(x.Mailboxes, ws)
	}
	k.logf("testenv: kcp export %s of %s bound in %d workspaces (%.1fs)", WorkspacesExport, x.Provider.Path, opts.Mailboxes, time.Since(start).Seconds())
	return x, nil
}

// EndpointURL waits until the export's APIExportEndpointSlice lists an endpoint and returns its URL,
// https://<kcp>/services/apiexport/<provider's logical cluster>/<export>. kcp fills it in once some
// workspace binds the export and removes it when none is left.
func (x *KCPExport) EndpointURL(ctx context.Context) (string, error) {
	cfg, err := x.Provider.RESTConfig()
	if err != nil {
		return "", fmt.Errorf("testenv: client for %s: %w", x.Provider.Path, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("testenv: client for %s: %w", x.Provider.Path, err)
	}
	var url string
	err = x.k.wait(ctx, "APIExportEndpointSlice "+x.Export.Name+" in "+x.Provider.Path+" has an endpoint", time.Minute, func(ctx context.Context) error {
		slice, err := dyn.Resource(endpointSlicesGVR).Get(ctx, x.Export.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		endpoints, _, _ := unstructured.NestedSlice(slice.Object, "status", "endpoints")
		for _, ep := range endpoints {
			ep, _ := ep.(map[string]any)
			if u, _ := ep["url"].(string); u != "" {
				url = u
				return nil
			}
		}
		return errors.New("no status.endpoints[].url yet")
	})
	if err != nil {
		return "", err
	}
	return url, nil
}

// VirtualWorkspaceConfig returns an admin client config for the export's virtual workspace: with
// cluster "*" (every bound workspace at once, as cluster-unaware clients see it) or a logical
// cluster name (one workspace).
func (x *KCPExport) VirtualWorkspaceConfig(ctx context.Context, cluster string) (*rest.Config, error) {
	url, err := x.EndpointURL(ctx)
	if err != nil {
		return nil, err
	}
	cfg, err := x.Provider.RESTConfig()
	if err != nil {
		return nil, fmt.Errorf("testenv: client for %s: %w", x.Provider.Path, err)
	}
	cfg.Host = strings.TrimSuffix(url, "/") + "/clusters/" + cluster
	return cfg, nil
}

// Unbind deletes the export's APIBinding in ws and waits until it is gone; kcp then deletes the
// workspace's objects of the exported resources (not those of the claimed ones) and refuses the
// workspace's path in the virtual workspace.
func (x *KCPExport) Unbind(ctx context.Context, ws *Workspace) error {
	return x.k.Unbind(ctx, ws, x.Export.Name)
}

// Unbind deletes the APIBinding name in ws and waits until it is gone.
func (k *KCP) Unbind(ctx context.Context, ws *Workspace, name string) error {
	start := time.Now()
	dyn, _, err := workspaceClients(ws)
	if err != nil {
		return err
	}
	if err := dyn.Resource(apiBindingsGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("testenv: deleting APIBinding %s in %s: %w", name, ws.Path, err)
	}
	err = k.wait(ctx, "APIBinding "+name+" in "+ws.Path+" gone", time.Minute, func(ctx context.Context) error {
		got, err := dyn.Resource(apiBindingsGVR).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there (finalizers %v)", got.GetFinalizers())
	})
	if err != nil {
		return err
	}
	k.logf("testenv: kcp workspace %s unbound from %s (%.1fs)", ws.Path, name, time.Since(start).Seconds())
	return nil
}
