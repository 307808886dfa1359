package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/kubestellar/syncer/manifests"
)

// A KubeStellar-style mailbox in kcp: a provider workspace (KubeStellar's edge service provider
// workspace, "espw") holds APIResourceSchemas and APIExports; each mailbox workspace binds them with
// APIBindings and so serves the edge's workload APIs without holding any CRD. The schemas are made at
// run time from CRDs that kcp's crd-puller builds from the downstream kube-apiserver's discovery and
// OpenAPI, so they always match the edge's Kubernetes version.

// Export is an APIExport of a provider workspace: one APIResourceSchema per CRD, and a permission
// claim with verbs ["*"] per built-in resource of Claims (ConfigMaps, Namespaces, ...), which Bind
// accepts for every object (selector matchAll).
type Export struct {
	Name   string
	CRDs   []*unstructured.Unstructured
	Claims []schema.GroupResource
}

// permissionClaims are the claims of x as its APIExport lists them, or as an APIBinding accepts them
// (accepted: every object of the resource, state Accepted). An accepted claim repeats the export's
// group, resource and verbs: other verbs make kcp report PermissionClaimsMismatch.
func (x Export) permissionClaims(accepted bool) []any {
	var claims []any
	for _, gr := range x.Claims {
		c := map[string]any{"group": gr.Group, "resource": gr.Resource, "verbs": []any{"*"}}
		if accepted {
			c["selector"] = map[string]any{"matchAll": true}
			c["state"] = "Accepted"
		}
		claims = append(claims, c)
	}
	return claims
}

const (
	// KubernetesExport is the export of the edge's workload APIs, named as in KubeStellar.
	KubernetesExport = "kubernetes"
	// EdgeExport is the export of the SyncerConfig API, named as in KubeStellar.
	EdgeExport = "edge.kubestellar.io"
)

// MailboxResources are the edge resources that KubernetesExport serves (crd-puller's resource names).
var MailboxResources = []string{"deployments.apps", "daemonsets.apps", "services", "jobs.batch"}

var (
	crdsGVR            = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	resourceSchemasGVR = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiresourceschemas"}
	apiExportsGVR      = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apiexports"}
	apiBindingsGVR     = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apibindings"}
)

const fieldManager = "testenv"

// KCPMailboxOptions shape SetUpKCPMailboxes.
type KCPMailboxOptions struct {
	// SyncerConfig also exports the project's SyncerConfig and EdgeSyncConfig CRDs as EdgeExport and binds it in the
	// mailbox (KubeStellar's shape), and applies the CRD in the plain mailbox. Without it no mailbox
	// serves SyncerConfigs until the caller installs the CRD.
	SyncerConfig bool
	// Plain also creates the plain mailbox: the same APIs as CRDs applied in the workspace itself.
	Plain bool
}

// KCPMailboxes are the workspaces SetUpKCPMailboxes made.
type KCPMailboxes struct {
	// Provider is root:espw, holding the schemas and Exports.
	Provider *Workspace
	// Exports are the provider's APIExports; Bind them into further mailboxes.
	Exports []Export
	// Mailbox is root:mailbox, which binds every export (kubeconfig Dir/kcp-mailbox.kubeconfig).
	Mailbox *Workspace
	// Plain is root:mailbox-plain with CRDs instead of bindings (Options.Plain), or nil.
	Plain *Workspace
}

// SetUpKCPMailboxes pulls the CRDs of MailboxResources from downstream, makes the provider workspace
// root:espw with the APIExport "kubernetes" (and "edge.kubestellar.io" with opts.SyncerConfig), the
// mailbox root:mailbox bound to them, and with opts.Plain root:mailbox-plain holding the CRDs
// themselves. It returns once every workspace serves every resource.
func (e *Env) SetUpKCPMailboxes(ctx context.Context, opts KCPMailboxOptions) (*KCPMailboxes, error) {
	k := e.KCP
	if k == nil {
		return nil, errors.New("testenv: kcp is not running (Options.KCP)")
	}
	start := time.Now()
	kube, err := k.PullCRDs(ctx, e.Downstream.Kubeconfig, MailboxResources...)
	if err != nil {
		return nil, err
	}
	exports := []Export{{Name: KubernetesExport, CRDs: kube}}
	if opts.SyncerConfig {
		var crds []*unstructured.Unstructured
		for _, raw := range [][]byte{manifests.SyncerConfigCRD, manifests.EdgeSyncConfigCRD} {
			crd, err := decodeCRD(raw)
			if err != nil {
				return nil, fmt.Errorf("testenv: the CRD of the edge.kubestellar.io export: %w", err)
			}
			crds = append(crds, crd)
		}
		exports = append(exports, Export{Name: EdgeExport, CRDs: crds})
	}
	mb := &KCPMailboxes{Exports: exports}
	if mb.Provider, err = k.CreateProvider(ctx, "espw", exports...); err != nil {
		return nil, err
	}
	if mb.Mailbox, err = k.CreateWorkspace(ctx, "mailbox"); err != nil {
		return nil, err
	}
	if err := k.Bind(ctx, mb.Mailbox, mb.Provider, exports...); err != nil {
		return nil, err
	}
	if opts.Plain {
		if mb.Plain, err = k.CreateWorkspace(ctx, "mailbox-plain"); err != nil {
			return nil, err
		}
		var crds []*unstructured.Unstructured
		for _, x := range exports {
			crds = append(crds, x.CRDs...)
		}
		if err := k.ApplyCRDs(ctx, mb.Plain, crds...); err != nil {
			return nil, err
		}
	}
	k.logf("testenv: kcp mailbox workspaces set up in %.1fs", time.Since(start).Seconds())
	return mb, nil
}

// PullCRDs runs crd-puller against the cluster of kubeconfig for resources (crd-puller's names:
// "deployments.apps", "services") and returns the CRDs it builds from the cluster's discovery and
// OpenAPI. The files stay in Dir/kcp-crds/.
func (k *KCP) PullCRDs(ctx context.Context, kubeconfig string, resources ...string) ([]*unstructured.Unstructured, error) {
	start := time.Now()
	dir := filepath.Join(k.env.Dir, "kcp-crds")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kubeconfig, err := filepath.Abs(kubeconfig)
	if err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig=" + kubeconfig}
	for _, r := range resources {
		args = append(args, "--resources="+r)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(k.binDir, "crd-puller"), args...)
	cmd.Dir = dir
	// crd-puller reports its errors on stderr but exits 0: a missing file below is the failure, and
	// its output tells why.
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("testenv: crd-puller %v: %w\n%s", resources, err, out)
	}
	var crds []*unstructured.Unstructured
	for _, r := range resources {
		// crd-puller names each file after the resource's GroupResource ("services" for the core group).
		file := filepath.Join(dir, schema.ParseGroupResource(r).String()+".yaml")
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("testenv: crd-puller %v: %w\n%s", resources, err, bytes.TrimSpace(out))
		}
		crd, err := decodeCRD(data)
		if err != nil {
			return nil, fmt.Errorf("testenv: %s: %w", file, err)
		}
		dropStrayListMapKeys(crd.Object)
		crds = append(crds, crd)
	}
	k.logf("testenv: crd-puller made CRDs of %v in %.1fs", resources, time.Since(start).Seconds())
	return crds, nil
}

// dropStrayListMapKeys removes x-kubernetes-list-map-keys where the list type is not "map": crd-puller
// copies them from the OpenAPI of lists kube serves as atomic (a Job's status.conditions), and kcp
// refuses such a schema.
func dropStrayListMapKeys(node any) {
	switch n := node.(type) {
	case map[string]any:
		if _, ok := n["x-kubernetes-list-map-keys"]; ok && n["x-kubernetes-list-type"] != "map" {
			delete(n, "x-kubernetes-list-map-keys")
		}
		for _, v := range n {
			dropStrayListMapKeys(v)
		}
	case []any:
		for _, v := range n {
			dropStrayListMapKeys(v)
		}
	}
}

func decodeCRD(data []byte) (*unstructured.Unstructured, error) {
	crd := &unstructured.Unstructured{}
	if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&crd.Object); err != nil {
		return nil, err
	}
	if crd.GetKind() != "CustomResourceDefinition" {
		return nil, fmt.Errorf("kind %q, not CustomResourceDefinition", crd.GetKind())
	}
	return crd, nil
}

// crdNames returns a CRD's group, plural and served versions.
func crdNames(crd *unstructured.Unstructured) (group, plural string, served []string, err error) {
	group, _, _ = unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ = unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		v, _ := v.(map[string]any)
		if name, _ := v["name"].(string); name != "" && v["served"] == true {
			served = append(served, name)
		}
	}
	if plural == "" || len(served) == 0 {
		return "", "", nil, fmt.Errorf("testenv: CRD %s has no plural or no served version", crd.GetName())
	}
	return group, plural, served, nil
}

// SchemaName is the name of the APIResourceSchema made from a CRD of group and plural:
// "v1.<plural>.<group>", with "core" for the core group.
func SchemaName(group, plural string) string {
	if group == "" {
		group = "core"
	}
	return "v1." + plural + "." + group
}

// resourceSchema makes an APIResourceSchema from a CRD: the CRD's group, names and scope, and per
// version its openAPIV3Schema, subresources and printer columns.
func resourceSchema(crd *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	group, plural, _, err := crdNames(crd)
	if err != nil {
		return nil, err
	}
	names, _, _ := unstructured.NestedMap(crd.Object, "spec", "names")
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	crdVersions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var versions []any
	for _, v := range crdVersions {
		v, _ := v.(map[string]any)
		s, ok, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema")
		if !ok {
			return nil, fmt.Errorf("testenv: CRD %s version %v has no openAPIV3Schema", crd.GetName(), v["name"])
		}
		out := map[string]any{"name": v["name"], "served": v["served"], "storage": v["storage"], "schema": s}
		for _, f := range []string{"deprecated", "deprecationWarning", "subresources", "additionalPrinterColumns"} {
			if x, ok := v[f]; ok {
				out[f] = x
			}
		}
		versions = append(versions, out)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
		"metadata": map[string]any{"name": SchemaName(group, plural)},
		"spec":     map[string]any{"group": group, "names": names, "scope": scope, "versions": versions},
	}}, nil
}

func workspaceClients(ws *Workspace) (dynamic.Interface, *discovery.DiscoveryClient, error) {
	cfg, err := ws.RESTConfig()
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return dyn, disc, nil
}

func apply(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	_, err := dyn.Resource(gvr).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("testenv: applying %s %s: %w", gvr.Resource, obj.GetName(), err)
	}
	return nil
}

// CreateProvider creates workspace name under root holding, per export, one APIResourceSchema per CRD
// (see SchemaName) and an APIExport of them, and waits until kcp has given every export its identity.
func (k *KCP) CreateProvider(ctx context.Context, name string, exports ...Export) (*Workspace, error) {
	start := time.Now()
	ws, err := k.CreateWorkspace(ctx, name)
	if err != nil {
		return nil, err
	}
	dyn, _, err := workspaceClients(ws)
	if err != nil {
		return nil, err
	}
	for _, x := range exports {
		var resources []any
		for _, crd := range x.CRDs {
			rs, err := resourceSchema(crd)
			if err != nil {
				return nil, err
			}
			if err := apply(ctx, dyn, resourceSchemasGVR, rs); err != nil {
				return nil, err
			}
			group, plural, _, _ := crdNames(crd)
			resources = append(resources, map[string]any{
				"name": plural, "group": group, "schema": rs.GetName(), "storage": map[string]any{"crd": map[string]any{}},
			})
		}
		spec := map[string]any{"resources": resources}
		if len(x.Claims) > 0 {
			spec["permissionClaims"] = x.permissionClaims(false)
		}
		export := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
			"metadata": map[string]any{"name": x.Name},
			"spec":     spec,
		}}
		if err := apply(ctx, dyn, apiExportsGVR, export); err != nil {
			return nil, err
		}
	}
	for _, x := range exports {
		err := k.wait(ctx, "APIExport "+x.Name+" in "+ws.Path+" has an identity", time.Minute, func(ctx context.Context) error {
			got, err := dyn.Resource(apiExportsGVR).Get(ctx, x.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if h, _, _ := unstructured.NestedString(got.Object, "status", "identityHash"); h == "" {
				return errors.New("no status.identityHash yet")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	k.logf("testenv: kcp provider %s exports %v (%.1fs)", ws.Path, exportNames(exports), time.Since(start).Seconds())
	return ws, nil
}

func exportNames(exports []Export) []string {
	var names []string
	for _, x := range exports {
		names = append(names, x.Name)
	}
	return names
}

// Bind creates in ws one APIBinding per export of provider, named like the export and accepting all
// of the export's permission claims, waits until each is Bound and Ready (and, with claims, until
// kcp has applied them), and then until ws serves every resource of the exports.
func (k *KCP) Bind(ctx context.Context, ws, provider *Workspace, exports ...Export) error {
	start := time.Now()
	dyn, disc, err := workspaceClients(ws)
	if err != nil {
		return err
	}
	for _, x := range exports {
		spec := map[string]any{"reference": map[string]any{
			"export": map[string]any{"path": provider.Path, "name": x.Name},
		}}
		if len(x.Claims) > 0 {
			spec["permissionClaims"] = x.permissionClaims(true)
		}
		binding := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
			"metadata": map[string]any{"name": x.Name},
			"spec":     spec,
		}}
		if err := apply(ctx, dyn, apiBindingsGVR, binding); err != nil {
			return err
		}
	}
	var crds []*unstructured.Unstructured
	for _, x := range exports {
		crds = append(crds, x.CRDs...)
		err := k.wait(ctx, "APIBinding "+x.Name+" in "+ws.Path+" Bound and Ready", time.Minute, func(ctx context.Context) error {
			got, err := dyn.Resource(apiBindingsGVR).Get(ctx, x.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
			if ready := conditionStatus(got, "Ready"); phase != "Bound" || ready != "True" {
				return fmt.Errorf("phase %q, Ready %q", phase, ready)
			}
			if len(x.Claims) == 0 {
				return nil
			}
			valid, applied := conditionStatus(got, "PermissionClaimsValid"), conditionStatus(got, "PermissionClaimsApplied")
			if valid != "True" || applied != "True" {
				return fmt.Errorf("PermissionClaimsValid %q, PermissionClaimsApplied %q", valid, applied)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := k.waitServed(ctx, ws, disc, crds); err != nil {
		return err
	}
	k.logf("testenv: kcp workspace %s bound to %v of %s (%.1fs)", ws.Path, exportNames(exports), provider.Path, time.Since(start).Seconds())
	return nil
}

// ApplyCRDs applies crds server-side in ws (some are too large for a client-side apply's annotation),
// waits until each is Established and then until ws serves them.
func (k *KCP) ApplyCRDs(ctx context.Context, ws *Workspace, crds ...*unstructured.Unstructured) error {
	start := time.Now()
	dyn, disc, err := workspaceClients(ws)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		clean := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": crd.GetName()}, "spec": crd.Object["spec"],
		}}
		if err := apply(ctx, dyn, crdsGVR, clean); err != nil {
			return err
		}
	}
	for _, crd := range crds {
		err := k.wait(ctx, "CRD "+crd.GetName()+" in "+ws.Path+" Established", time.Minute, func(ctx context.Context) error {
			got, err := dyn.Resource(crdsGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s := conditionStatus(got, "Established"); s != "True" {
				return fmt.Errorf("condition Established %q, NamesAccepted %q", s, conditionStatus(got, "NamesAccepted"))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := k.waitServed(ctx, ws, disc, crds); err != nil {
		return err
	}
	k.logf("testenv: kcp workspace %s has CRDs of %d resources (%.1fs)", ws.Path, len(crds), time.Since(start).Seconds())
	return nil
}

// waitServed waits until the discovery of ws lists every served version of every CRD's resource.
func (k *KCP) waitServed(ctx context.Context, ws *Workspace, disc discovery.DiscoveryInterface, crds []*unstructured.Unstructured) error {
	for _, crd := range crds {
		group, plural, served, err := crdNames(crd)
		if err != nil {
			return err
		}
		for _, v := range served {
			gv := schema.GroupVersion{Group: group, Version: v}.String()
			err := k.wait(ctx, plural+" in "+gv+" served in "+ws.Path, time.Minute, func(context.Context) error {
				list, err := disc.ServerResourcesForGroupVersion(gv)
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == plural }) {
					return errors.New("not in discovery yet")
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// conditionStatus returns the status of condition typ of obj, or "" if it has none.
func conditionStatus(obj *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		c, _ := c.(map[string]any)
		if c["type"] == typ {
			s, _ := c["status"].(string)
			return s
		}
	}
	return ""
}
