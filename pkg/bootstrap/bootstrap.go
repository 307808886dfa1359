package bootstrap

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/syncer/manifests"
	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/selection"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

var crdGVR = wellknown.CRDs

// DefaultLifetime is how long each upstream token lives by default: the syncer renews it when half
// of it has gone (and up to a tenth more), so that a site cut off from its mailbox for up to 12 days
// comes back by itself.
const DefaultLifetime = 30 * 24 * time.Hour

// DefaultOptions are the plugin's defaults (its flags' defaults; the Helm chart's values match them).
func DefaultOptions() Options {
	return Options{UpstreamNamespace: "default", Replicas: 1, QPS: 500, Burst: 1000, Verbosity: 2,
		Lifetime: DefaultLifetime, RBAC: RBACBroad, Fence: true,
		MaxObjectsPerResource: MaxObjectsFor(DefaultExpectedObjects)}
}

// Options are the plugin's choices.
type Options struct {
	// Name is the sync target's name; it names the syncer and labels its objects at the edge.
	Name  string
	Image string
	// UpstreamNamespace holds the syncer's ServiceAccount and token Secret upstream.
	UpstreamNamespace string
	// EdgeNamespace is where the syncer runs; empty means the syncer ID.
	EdgeNamespace string
	Replicas      int32
	QPS           float32
	Burst         int
	Verbosity     int
	// MaxObjectsPerResource is the syncer's --max-objects-per-resource (0: no limit).
	MaxObjectsPerResource int
	// Lifetime is how long each upstream token lives: the first, which syncer-gen mints, and each the
	// syncer renews when half of it has gone.
	Lifetime time.Duration
	RBAC     string
	// SyncerConfigSelector, when set, is the syncer's --syncer-config-selector: it reads only the
	// configs with these labels (several syncers sharing one upstream), and least RBAC grants only
	// what those need.
	SyncerConfigSelector string
	// Resources are the syncer container's requests and limits; nil means DefaultResources.
	Resources *Resources
	// APIExportEndpointSlice, when set, makes a syncer that serves every kcp workspace bound to an
	// APIExport (its --apiexport-endpoint-slice): the kubeconfig is then the provider workspace's,
	// which holds the APIExportEndpointSlice of that name, and the identity may read the slice and the
	// export's content (ExportRules) instead of a mailbox's objects.
	APIExportEndpointSlice string
	// SignaturePolicy and SignatureKeys: the syncer's --signature-policy, and the PEM public keys it
	// verifies with (held at the edge in a Secret of the manifest).
	SignaturePolicy string
	SignatureKeys   []byte
	// Fence, with ProtectedNamespaces, AllowWebhooks, AllowEscalation and Allow: the edge owner's (Fence).
	Fence, AllowWebhooks, AllowEscalation bool
	ProtectedNamespaces, Allow            []string
}

// Validate reports every problem with the options at once.
func (o *Options) Validate() error {
	var errs []string
	if msgs := validation.IsDNS1123Subdomain(o.Name); o.Name == "" || len(msgs) > 0 {
		errs = append(errs, fmt.Sprintf("the sync target name %q is not a valid name: %s", o.Name, strings.Join(msgs, "; ")))
	}
	if o.Image == "" {
		errs = append(errs, "--syncer-image is required")
	}
	if o.RBAC != RBACBroad && o.RBAC != RBACLeast {
		errs = append(errs, fmt.Sprintf("--rbac must be %q or %q", RBACBroad, RBACLeast))
	}
	if o.Replicas < 0 {
		errs = append(errs, "--replicas must not be negative")
	}
	if _, err := labels.Parse(o.SyncerConfigSelector); err != nil {
		errs = append(errs, fmt.Sprintf("--syncer-config-selector: %v", err))
	}
	if o.APIExportEndpointSlice != "" && o.RBAC == RBACLeast {
		errs = append(errs, "--rbac least does not apply with --apiexport-endpoint-slice: the SyncerConfigs are in the bound workspaces, which syncer-gen does not read")
	}
	if o.Lifetime < 10*time.Minute {
		errs = append(errs, "--lifetime must be at least 10m")
	}
	if o.QPS <= 0 || o.Burst <= 0 {
		errs = append(errs, "--qps and --burst must be positive")
	}
	if _, err := o.requirements(); err != nil {
		errs = append(errs, err.Error())
	}
	errs = append(errs, o.fenceProblems()...)
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// requirements are the container's resources the options ask for.
func (o *Options) requirements() (corev1.ResourceRequirements, error) {
	if o.Resources == nil {
		return defaultRequirements(), nil
	}
	return o.Resources.Requirements()
}

// SyncerID is stable for a sync target name and an upstream endpoint (server URL, which in kcp
// names the workspace): kubestellar-syncer-<name>-<8 characters of a digest>, at most 63 characters.
func SyncerID(server, name string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + name))
	digest := new(big.Int).SetBytes(sum[:]).Text(36)
	if len(digest) < 8 {
		digest = strings.Repeat("0", 8-len(digest)) + digest
	}
	prefix := "kubestellar-syncer-" + name
	if len(prefix) > 63-9 {
		prefix = strings.TrimRight(prefix[:63-9], "-.")
	}
	return prefix + "-" + digest[:8]
}

// Result is what Run made.
type Result struct {
	ID        string
	Namespace string
	UID       string
	Manifest  []byte
	// HelmValues are the values of the chart charts/kubestellar-syncer for the same syncer (see
	// Edge.HelmValues).
	HelmValues []byte
}

// FieldManager is the field manager of everything syncer-gen applies upstream.
const FieldManager = managedByValue

// tokenExpiresAnnotation on the upstream token Secret tells when its token expires.
const tokenExpiresAnnotation = "edge.kubestellar.io/token-expires"

// Run creates or updates the syncer's identity upstream and renders the edge manifest and the Helm
// values. Progress goes to out. cfg.Timeout bounds every request: the plugin sets it from
// --request-timeout, 15 s unless given, so that it never hangs on an unusable endpoint
// (kubestellar/kubestellar#1310); 0 means no bound.
func Run(ctx context.Context, cfg *rest.Config, opts Options, out io.Writer) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the CA of the upstream: %w", err)
		}
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return run(ctx, upstream{host: cfg.Host, ca: ca, kube: kube, dyn: dyn, disc: kube.Discovery()}, opts, out)
}

// upstream is the mailbox workspace: its endpoint, CA and clients.
type upstream struct {
	host string
	ca   []byte
	kube kubernetes.Interface
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
}

// run is Run once the clients are made. The identity is written by server-side apply with field
// manager FieldManager: a second run updates the same objects, and labels or annotations others
// added to them stay.
func run(ctx context.Context, up upstream, opts Options, out io.Writer) (*Result, error) {
	kube := up.kube
	id := SyncerID(up.host, opts.Name)
	ns := opts.UpstreamNamespace
	if err := preflight(ctx, up.host, kube, ns, opts.APIExportEndpointSlice); err != nil {
		return nil, err
	}
	rules, configs, err := upstreamRules(ctx, up, opts, out)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{managedByLabel: managedByValue, syncerNameLabel: id}
	// Forced: these objects are syncer-gen's own; earlier versions of it wrote them by update, under
	// another manager.
	apply := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}

	fmt.Fprintf(out, "Applying service account %q in namespace %q\n", id, ns)
	sa, err := kube.CoreV1().ServiceAccounts(ns).Apply(ctx, corev1ac.ServiceAccount(id, ns).WithLabels(labels), apply)
	if err != nil {
		return nil, fmt.Errorf("service account %s/%s: %w", ns, id, err)
	}

	fmt.Fprintf(out, "Applying cluster role %q (%s RBAC: %d rules) for service account %q\n", id, opts.RBAC, len(rules), id)
	role := rbacv1ac.ClusterRole(id).WithLabels(labels).WithRules(policyRules(rules)...)
	if _, err := kube.RbacV1().ClusterRoles().Apply(ctx, role, apply); err != nil {
		return nil, fmt.Errorf("cluster role %s: %w", id, err)
	}
	fmt.Fprintf(out, "Applying cluster role binding %q\n", id)
	binding := rbacv1ac.ClusterRoleBinding(id).WithLabels(labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(id)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(id).WithNamespace(ns))
	if _, err := kube.RbacV1().ClusterRoleBindings().Apply(ctx, binding, apply); err != nil {
		return nil, fmt.Errorf("cluster role binding %s: %w", id, err)
	}

	if err := applyTokenRenewal(ctx, kube, ns, id, labels, apply, out); err != nil {
		return nil, err
	}

	token, err := issueToken(ctx, kube, sa, labels, apply, opts.Lifetime, out)
	if err != nil {
		return nil, err
	}

	edgeNS := opts.EdgeNamespace
	if edgeNS == "" {
		edgeNS = id
	}
	resources, err := opts.requirements()
	if err != nil {
		return nil, err // Validate checked them
	}
	edge := Edge{ID: id, Namespace: edgeNS, SyncTargetName: opts.Name, SyncTargetUID: string(sa.UID), Image: opts.Image,
		Replicas: opts.Replicas, QPS: opts.QPS, Burst: opts.Burst, Verbosity: opts.Verbosity, SyncerConfigSelector: opts.SyncerConfigSelector,
		MaxObjectsPerResource: opts.MaxObjectsPerResource,
		Resources:             &resources, UpstreamServer: up.host, UpstreamCA: up.ca, UpstreamToken: token, UpstreamContext: ns,
		SignaturePolicy: opts.SignaturePolicy, SignatureKeys: opts.SignatureKeys, APIExportEndpointSlice: opts.APIExportEndpointSlice}
	edge.Rules, edge.Fence = opts.edgeRules(configs)
	manifest, err := edge.Manifest()
	if err != nil {
		return nil, err
	}
	values, err := edge.HelmValues()
	if err != nil {
		return nil, err
	}
	return &Result{ID: id, Namespace: edgeNS, UID: string(sa.UID), Manifest: manifest, HelmValues: values}, nil
}

// upstreamRules are the identity's permissions upstream, and the configs least RBAC derived them
// from: for a mailbox, what its SyncerConfigs need (installing the config APIs when missing); for
// the workspaces bound to an APIExport, the export's slice and content.
func upstreamRules(ctx context.Context, up upstream, opts Options, out io.Writer) ([]rbacv1.PolicyRule, []*edgev1.SyncerConfig, error) {
	if opts.APIExportEndpointSlice != "" {
		export, err := sliceExport(ctx, up.dyn, up.host, opts.APIExportEndpointSlice, out)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(out, "The syncer serves every workspace bound to APIExport %q (APIExportEndpointSlice %q)\n", export, opts.APIExportEndpointSlice)
		return ExportRules(opts.APIExportEndpointSlice, export), nil, nil
	}
	if err := ensureConfigAPIs(ctx, up, out); err != nil {
		return nil, nil, err
	}
	configs, err := listConfigs(ctx, up.dyn, opts.SyncerConfigSelector)
	if err != nil {
		return nil, nil, err
	}
	return UpstreamRules(opts.RBAC, configs), configs, nil
}

// preflight fails fast when the endpoint cannot be reached or the caller lacks a permission the
// bootstrap needs, naming what is missing.
// With a slice (the provider workspace of many mailboxes), reading it stands for reading the configs.
func preflight(ctx context.Context, host string, kube kubernetes.Interface, ns, slice string) error {
	where := "the mailbox workspace"
	if slice != "" {
		where = "the provider workspace"
	}
	if _, err := kube.Discovery().ServerVersion(); err != nil {
		return fmt.Errorf("cannot use the upstream at %s (is the kubeconfig pointing at %s, and is it reachable?): %w", host, where, err)
	}
	// Server-side apply is a PATCH that creates what is missing: it needs both verbs.
	checks := []authorizationv1.ResourceAttributes{
		{Verb: "create", Resource: "serviceaccounts", Namespace: ns},
		{Verb: "patch", Resource: "serviceaccounts", Namespace: ns},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: ns},
		{Verb: "create", Resource: "secrets", Namespace: ns},
		{Verb: "patch", Resource: "secrets", Namespace: ns},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "roles", Namespace: ns},
		{Verb: "patch", Group: rbacv1.GroupName, Resource: "roles", Namespace: ns},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "rolebindings", Namespace: ns},
		{Verb: "patch", Group: rbacv1.GroupName, Resource: "rolebindings", Namespace: ns},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterroles"},
		{Verb: "patch", Group: rbacv1.GroupName, Resource: "clusterroles"},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterrolebindings"},
		{Verb: "patch", Group: rbacv1.GroupName, Resource: "clusterrolebindings"},
	}
	if slice == "" {
		checks = append(checks, authorizationv1.ResourceAttributes{Verb: "list", Group: edgev1.GroupName, Resource: "syncerconfigs"})
	} else {
		checks = append(checks, authorizationv1.ResourceAttributes{Verb: "get", Group: wellknown.EndpointSlices.Group, Resource: wellknown.EndpointSlices.Resource, Name: slice})
	}
	var missing []string
	for _, attrs := range checks {
		review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("cannot check permissions at %s: %w", host, err)
		}
		if !review.Status.Allowed {
			what := attrs.Resource
			if attrs.Subresource != "" {
				what += "/" + attrs.Subresource
			}
			if attrs.Group != "" {
				what += "." + attrs.Group
			}
			missing = append(missing, attrs.Verb+" "+what)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the kubeconfig's user may not %s at %s (needed to bootstrap a syncer)", strings.Join(missing, ", "), host)
	}
	return nil
}

// configAPI is a config API syncer-gen makes sure the upstream serves.
type configAPI struct {
	kind string
	gvr  schema.GroupVersionResource
	crd  []byte
	// optional: the syncer works without it, so failing to install it is only a warning.
	optional bool
}

// configAPIs are the SyncerConfig API, required, and the legacy EdgeSyncConfig API, optional.
var configAPIs = []configAPI{
	{kind: "SyncerConfig", gvr: edgev1.SyncerConfigResource, crd: manifests.SyncerConfigCRD},
	{kind: "EdgeSyncConfig", gvr: edgev1.EdgeSyncConfigGVR, crd: manifests.EdgeSyncConfigCRD, optional: true},
}

// ensureConfigAPIs makes sure the upstream serves SyncerConfigs and EdgeSyncConfigs. An API that
// cannot be installed is an error for SyncerConfigs, a warning for the optional EdgeSyncConfigs.
func ensureConfigAPIs(ctx context.Context, up upstream, out io.Writer) error {
	for _, api := range configAPIs {
		err := ensureConfigAPI(ctx, up, api, out)
		switch {
		case err == nil:
		case api.optional && ctx.Err() == nil:
			fmt.Fprintf(out, "Warning: %v; the syncer works without %ss\n", err, api.kind)
		default:
			return err
		}
	}
	return nil
}

// ensureConfigAPI makes sure the upstream serves a config API. When its discovery shows it — from a
// CRD, or in a kcp mailbox from an APIBinding — nothing is installed (a second CRD beside a bound
// API would never be accepted). Otherwise the CRD is created, and syncer-gen waits until it is
// Established and discovery serves it, so that a config applied right after works (kcp establishes
// a new CRD some seconds after accepting its names).
func ensureConfigAPI(ctx context.Context, up upstream, api configAPI, out io.Writer) error {
	served, err := servesResource(up.disc, api.gvr)
	if err != nil {
		return fmt.Errorf("reading the upstream's discovery: %w", err)
	}
	name := api.gvr.GroupResource().String()
	if served {
		fmt.Fprintf(out, "%ss are served upstream already (by a CRD or an APIBinding); not installing a CRD\n", api.kind)
		return nil
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(api.crd, &crd.Object); err != nil {
		return fmt.Errorf("the embedded %s CRD: %w", api.kind, err)
	}
	fmt.Fprintf(out, "Installing the %s CRD %q\n", api.kind, name)
	if _, err := up.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("installing the %s CRD: %w", api.kind, err)
	}
	var state string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := up.dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			state = err.Error()
			return false, nil //nolint:nilerr // retried until the timeout, whose error says the last state
		}
		if reason, rejected := crdCondition(got, "NamesAccepted", "False"); rejected {
			return false, fmt.Errorf("the upstream does not accept the %s CRD's names (%s): is another API of that name bound or installed?", api.kind, reason)
		}
		if _, established := crdCondition(got, "Established", "True"); !established {
			state = "not Established yet"
			return false, nil
		}
		if ok, err := servesResource(up.disc, api.gvr); !ok {
			state = fmt.Sprintf("Established, but not in discovery yet (%v)", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the %s CRD to be served: %w (last: %s)", api.kind, err, state)
	}
	fmt.Fprintf(out, "The %s CRD is established and served\n", api.kind)
	return nil
}

// servesResource tells whether discovery shows the resource.
func servesResource(d discovery.DiscoveryInterface, gvr schema.GroupVersionResource) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// crdCondition tells whether a CRD's condition of that type has that status, and its reason.
func crdCondition(crd *unstructured.Unstructured, typ, status string) (string, bool) {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		if m["type"] == typ {
			reason, _ := m["reason"].(string)
			return reason, m["status"] == status
		}
	}
	return "", false
}

func listConfigs(ctx context.Context, dyn dynamic.Interface, selector string) ([]*edgev1.SyncerConfig, error) {
	list, err := dyn.Resource(edgev1.SyncerConfigResource).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing SyncerConfigs: %w", err)
	}
	var out []*edgev1.SyncerConfig
	for i := range list.Items {
		cfg, err := edgev1.FromUnstructured(list.Items[i].Object)
		if err != nil {
			return nil, err
		}
		out = append(out, cfg)
	}
	// The legacy EdgeSyncConfigs select too (read as the SyncerConfigs they amount to); the API is
	// optional.
	legacy, err := dyn.Resource(edgev1.EdgeSyncConfigGVR).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return out, nil
		}
		return nil, fmt.Errorf("listing EdgeSyncConfigs: %w", err)
	}
	for i := range legacy.Items {
		esc, err := edgev1.EdgeSyncConfigFromUnstructured(legacy.Items[i].Object)
		if err != nil {
			return nil, err
		}
		cfg, _, _ := selection.FromEdgeSyncConfig(esc)
		out = append(out, cfg)
	}
	return out, nil
}
