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

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/syncer/manifests"
	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

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
	Lifetime      time.Duration
	RBAC          string
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
	if o.Lifetime < 10*time.Minute {
		errs = append(errs, "--lifetime must be at least 10m")
	}
	if o.QPS <= 0 || o.Burst <= 0 {
		errs = append(errs, "--qps and --burst must be positive")
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
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
}

// Run creates or updates the syncer's identity upstream and renders the edge manifest. Progress
// goes to out.
func Run(ctx context.Context, cfg *rest.Config, opts Options, out io.Writer) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = 15 * time.Second // never hang on an unusable endpoint (kubestellar issue 1310)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	id := SyncerID(cfg.Host, opts.Name)
	ns := opts.UpstreamNamespace
	if err := preflight(ctx, cfg.Host, kube, ns); err != nil {
		return nil, err
	}
	if err := ensureCRD(ctx, dyn, out); err != nil {
		return nil, err
	}
	configs, err := listConfigs(ctx, dyn)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{managedByLabel: managedByValue, syncerNameLabel: id}

	sa, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, id, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(out, "Creating service account %q in namespace %q\n", id, ns)
		sa, err = kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: labels}}, metav1.CreateOptions{})
	case err == nil:
		fmt.Fprintf(out, "Updating service account %q in namespace %q\n", id, ns)
		sa = sa.DeepCopy()
		sa.Labels = merge(sa.Labels, labels)
		sa, err = kube.CoreV1().ServiceAccounts(ns).Update(ctx, sa, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("service account %s/%s: %w", ns, id, err)
	}

	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: labels}, Rules: UpstreamRules(opts.RBAC, configs)}
	fmt.Fprintf(out, "Creating or updating cluster role %q (%s RBAC: %d rules) for service account %q\n", id, opts.RBAC, len(role.Rules), id)
	if err := createOrUpdate(func() error {
		_, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		return err
	}, func() error {
		cur, err := kube.RbacV1().ClusterRoles().Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur = cur.DeepCopy()
		cur.Rules, cur.Labels = role.Rules, merge(cur.Labels, labels)
		_, err = kube.RbacV1().ClusterRoles().Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("cluster role %s: %w", id, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: id},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: id, Namespace: ns}}}
	fmt.Fprintf(out, "Creating or updating cluster role binding %q\n", id)
	if err := createOrUpdate(func() error {
		_, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
		return err
	}, func() error {
		cur, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur = cur.DeepCopy()
		cur.Subjects, cur.Labels = binding.Subjects, merge(cur.Labels, labels)
		_, err = kube.RbacV1().ClusterRoleBindings().Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("cluster role binding %s: %w", id, err)
	}

	seconds := int64(opts.Lifetime.Seconds())
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, id, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for %s/%s: %w", ns, id, err)
	}
	if granted := time.Until(tr.Status.ExpirationTimestamp.Time); granted < opts.Lifetime-time.Hour {
		fmt.Fprintf(out, "Note: the server granted a token valid until %s, shorter than --lifetime %s\n", tr.Status.ExpirationTimestamp.UTC().Format(time.RFC3339), opts.Lifetime)
	}
	tokenSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: id + "-token", Namespace: ns, Labels: labels,
		Annotations:     map[string]string{corev1.ServiceAccountNameKey: id, "edge.kubestellar.io/token-expires": tr.Status.ExpirationTimestamp.UTC().Format(time.RFC3339)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ServiceAccount", Name: id, UID: sa.UID}}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"token": []byte(tr.Status.Token)}}
	if err := createOrUpdate(func() error {
		_, err := kube.CoreV1().Secrets(ns).Create(ctx, tokenSecret, metav1.CreateOptions{})
		return err
	}, func() error {
		cur, err := kube.CoreV1().Secrets(ns).Get(ctx, tokenSecret.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur = cur.DeepCopy()
		cur.Data, cur.Annotations, cur.Labels = tokenSecret.Data, tokenSecret.Annotations, merge(cur.Labels, labels)
		_, err = kube.CoreV1().Secrets(ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("token secret %s/%s: %w", ns, tokenSecret.Name, err)
	}

	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the CA of the upstream: %w", err)
		}
	}
	edgeNS := opts.EdgeNamespace
	if edgeNS == "" {
		edgeNS = id
	}
	edge := Edge{ID: id, Namespace: edgeNS, SyncTargetName: opts.Name, SyncTargetUID: string(sa.UID), Image: opts.Image,
		Replicas: opts.Replicas, QPS: opts.QPS, Burst: opts.Burst, Verbosity: opts.Verbosity, Rules: DownstreamRules(opts.RBAC, configs),
		UpstreamServer: cfg.Host, UpstreamCA: ca, UpstreamToken: tr.Status.Token, UpstreamContext: ns}
	manifest, err := edge.Manifest()
	if err != nil {
		return nil, err
	}
	return &Result{ID: id, Namespace: edgeNS, UID: string(sa.UID), Manifest: manifest}, nil
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// createOrUpdate creates, or updates when the object exists already.
func createOrUpdate(create, update func() error) error {
	err := create()
	if apierrors.IsAlreadyExists(err) {
		return update()
	}
	return err
}

// preflight fails fast when the endpoint cannot be reached or the caller lacks a permission the
// bootstrap needs, naming what is missing.
func preflight(ctx context.Context, host string, kube kubernetes.Interface, ns string) error {
	if _, err := kube.Discovery().ServerVersion(); err != nil {
		return fmt.Errorf("cannot use the upstream at %s (is the kubeconfig pointing at the mailbox workspace, and is it reachable?): %w", host, err)
	}
	checks := []authorizationv1.ResourceAttributes{
		{Verb: "create", Resource: "serviceaccounts", Namespace: ns},
		{Verb: "update", Resource: "serviceaccounts", Namespace: ns},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: ns},
		{Verb: "create", Resource: "secrets", Namespace: ns},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterroles"},
		{Verb: "update", Group: rbacv1.GroupName, Resource: "clusterroles"},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterrolebindings"},
		{Verb: "list", Group: edgev1.GroupName, Resource: "syncerconfigs"},
	}
	var missing []string
	for _, attrs := range checks {
		attrs := attrs
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

// ensureCRD installs the SyncerConfig CRD when the upstream lacks it, and waits until it is served.
func ensureCRD(ctx context.Context, dyn dynamic.Interface, out io.Writer) error {
	name := edgev1.SyncerConfigResource.GroupResource().String()
	_, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	if err == nil || !apierrors.IsNotFound(err) {
		if err != nil && apierrors.IsForbidden(err) {
			// In kcp the API comes from an APIBinding, not a CRD: served is what matters.
			return nil
		}
		return err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(manifests.SyncerConfigCRD, &crd.Object); err != nil {
		return fmt.Errorf("the embedded SyncerConfig CRD: %w", err)
	}
	fmt.Fprintf(out, "Installing the SyncerConfig CRD %q\n", name)
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("installing the SyncerConfig CRD: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(edgev1.SyncerConfigResource).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}

func listConfigs(ctx context.Context, dyn dynamic.Interface) ([]*edgev1.SyncerConfig, error) {
	list, err := dyn.Resource(edgev1.SyncerConfigResource).List(ctx, metav1.ListOptions{})
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
	return out, nil
}
