package bootstrap

import (
	"context"
	"fmt"
	"io"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// issueToken requests a token of the ServiceAccount sa for lifetime (saying so when the server grants
// less), and records it upstream in the Secret <id>-token, owned by sa.
func issueToken(ctx context.Context, kube kubernetes.Interface, sa *corev1.ServiceAccount, labels map[string]string, apply metav1.ApplyOptions,
	lifetime time.Duration, out io.Writer) (string, error) {
	ns, id := sa.Namespace, sa.Name
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, id, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(lifetime.Seconds()))}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for %s/%s: %w", ns, id, err)
	}
	expires := tr.Status.ExpirationTimestamp.UTC().Format(time.RFC3339)
	if granted := time.Until(tr.Status.ExpirationTimestamp.Time); granted < lifetime-time.Hour {
		fmt.Fprintf(out, "Note: the server granted a token valid until %s, shorter than --lifetime %s\n", expires, lifetime)
	}
	tokenSecret := corev1ac.Secret(id+"-token", ns).WithLabels(labels).
		WithAnnotations(map[string]string{corev1.ServiceAccountNameKey: id, tokenExpiresAnnotation: expires}).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("ServiceAccount").WithName(id).WithUID(sa.UID)).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{"token": []byte(tr.Status.Token)})
	if _, err := kube.CoreV1().Secrets(ns).Apply(ctx, tokenSecret, apply); err != nil {
		return "", fmt.Errorf("token secret %s/%s-token: %w", ns, id, err)
	}
	return tr.Status.Token, nil
}

// TokenRenewalSuffix names the upstream Role (and its binding) that lets the syncer renew its token:
// <ID>-token-renewal.
const TokenRenewalSuffix = "-token-renewal"

// applyTokenRenewal lets the ServiceAccount id ask for tokens of itself, and of nothing else: the
// syncer renews its upstream token (package credential).
func applyTokenRenewal(ctx context.Context, kube kubernetes.Interface, ns, id string, labels map[string]string, apply metav1.ApplyOptions, out io.Writer) error {
	name := id + TokenRenewalSuffix
	fmt.Fprintf(out, "Applying role %q and its binding: service account %q may renew its own token\n", name, id)
	role := rbacv1ac.Role(name, ns).WithLabels(labels).WithRules(rbacv1ac.PolicyRule().WithAPIGroups("").
		WithResources("serviceaccounts/token").WithResourceNames(id).WithVerbs("create"))
	if _, err := kube.RbacV1().Roles(ns).Apply(ctx, role, apply); err != nil {
		return fmt.Errorf("role %s/%s: %w", ns, name, err)
	}
	binding := rbacv1ac.RoleBinding(name, ns).WithLabels(labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(name)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(id).WithNamespace(ns))
	if _, err := kube.RbacV1().RoleBindings(ns).Apply(ctx, binding, apply); err != nil {
		return fmt.Errorf("role binding %s/%s: %w", ns, name, err)
	}
	return nil
}
