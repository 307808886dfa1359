package bootstrap

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// Fence is the edge owner's bound on what the syncer writes at the edge on its mailboxes' behalf,
// held by the edge's apiserver, not by the syncer: the syncer makes every such write as the
// ServiceAccount <ID>-executor (its --executor), which it alone may impersonate. The executor may
// do what its ClusterRole grants; without escalate and bind, Kubernetes' RBAC refuses it any Role or
// binding that grants more than it holds. The ValidatingAdmissionPolicy <ID>-fence denies it
// anything in the protected namespaces (the syncer's own always among them) and, unless allowed,
// admission webhooks, ClusterRoleBindings and aggregated ClusterRoles (through which a Pod's
// ServiceAccount, which the policy does not match, would hold what the executor holds). Kubernetes
// exempts admission policies from every policy, so the syncer itself never writes those through an
// executor.
type Fence struct {
	// ExecutorRules are the executor's permissions: its ClusterRole <ID>-executor.
	ExecutorRules []rbacv1.PolicyRule
	// ProtectedNamespaces are kept out of reach besides the syncer's own: nothing in them, nor the
	// Namespaces themselves, may be written.
	ProtectedNamespaces []string
	// AllowWebhooks lets the executor write admission webhook configurations.
	AllowWebhooks bool
	// AllowEscalation lets the executor write ClusterRoleBindings and aggregated ClusterRoles (its
	// rules then hold escalate and bind too: EscalationRules).
	AllowEscalation bool
	// Allow are the edge owner's named opt-ins: resources of wellknown.Fenced (resource.group), and
	// wellknown.FenceOptIns.
	Allow []string
}

// ExecutorSuffix names the executor ServiceAccount, its ClusterRole and ClusterRoleBinding, and the
// Role and RoleBinding that let the syncer impersonate it (<ID>-executor); FenceSuffix the
// ValidatingAdmissionPolicy and its binding (<ID>-fence).
const (
	ExecutorSuffix = "-executor"
	FenceSuffix    = "-fence"
)

// AlwaysProtectedNamespaces are the namespaces the fence keeps the executor out of whatever else it
// protects, besides the syncer's own: the cluster's own.
func AlwaysProtectedNamespaces() []string {
	return []string{"kube-node-lease", "kube-public", "kube-system"}
}

// EscalationRules let an executor grant in Roles and bindings what it does not hold itself
// (--fence-allow-escalation).
func EscalationRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "clusterroles"}, Verbs: []string{"escalate", "bind"}}}
}

// edgeRules are the syncer's own edge permissions and, with a fence, the fence.
func (o Options) edgeRules(configs []*edgev1.SyncerConfig) ([]rbacv1.PolicyRule, *Fence) {
	if !o.Fence {
		return DownstreamRules(o.RBAC, configs), nil
	}
	own, executor := FencedRules(o.RBAC, configs)
	if o.AllowEscalation {
		executor = append(executor, EscalationRules()...)
	}
	return own, &Fence{ExecutorRules: executor, ProtectedNamespaces: o.ProtectedNamespaces, AllowWebhooks: o.AllowWebhooks, AllowEscalation: o.AllowEscalation,
		Allow: o.Allow}
}

// fenceProblems are what is wrong with the fence's options.
func (o *Options) fenceProblems() []string {
	var errs []string
	for _, ns := range o.ProtectedNamespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("--fence-protected-namespaces: %q is not a namespace name: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	if err := wellknown.CheckFenceAllow(o.Allow); err != nil {
		errs = append(errs, "--fence-allow: "+err.Error())
	}
	return errs
}

// fencedResources are the fenced resources the edge owner did not allow, as the policy names them
// (group/resource).
func (f Fence) fencedResources() []string {
	var out []string
	for _, gr := range wellknown.Fenced() {
		if !slices.Contains(f.Allow, gr.String()) {
			out = append(out, gr.Group+"/"+gr.Resource)
		}
	}
	return out
}

// protectedNamespaces are the syncer's namespace and the fence's, sorted, once each.
func (e Edge) protectedNamespaces() []string {
	ns := append(append([]string{e.Namespace}, AlwaysProtectedNamespaces()...), e.Fence.ProtectedNamespaces...)
	slices.Sort(ns)
	return slices.Compact(ns)
}

// ownedOnly holds for a create, and for a change or deletion of an object that carries the syncer's
// mark.
const ownedOnly = `request.operation == "CREATE" || request.operation == "CONNECT" || oldObject == null || ` +
	`(has(oldObject.metadata.annotations) && "` + mapping.DownsyncedAnnotation + `" in oldObject.metadata.annotations)`

// podSecurityUnchanged holds when a write (not a deletion) leaves a Namespace's pod-security.kubernetes.io labels as
// they were: none added or changed (object), none removed (oldObject).
const podSecurityUnchanged = `request.operation == "DELETE" || !(request.resource.group == "" && request.resource.resource == "namespaces" && (!has(request.subResource) || request.subResource == "")) || ` +
	`((object == null || !has(object.metadata.labels) || object.metadata.labels.all(k, !k.startsWith("pod-security.kubernetes.io/") || ` +
	`(oldObject != null && has(oldObject.metadata.labels) && k in oldObject.metadata.labels && oldObject.metadata.labels[k] == object.metadata.labels[k]))) && ` +
	`(oldObject == null || !has(oldObject.metadata.labels) || oldObject.metadata.labels.all(k, !k.startsWith("pod-security.kubernetes.io/") || ` +
	`(object != null && has(object.metadata.labels) && k in object.metadata.labels && object.metadata.labels[k] == oldObject.metadata.labels[k]))))`

// celStrings is a CEL list literal of the strings.
func celStrings(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// fenceObjects are the executor, the syncer's right to act as it, and the fence's policy.
func (e Edge) fenceObjects() []runtime.Object {
	exec := e.ID + ExecutorSuffix
	typeMeta := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: kind}
	}
	return []runtime.Object{
		// Impersonated, never mounted: it has no token of its own.
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: e.meta(exec, e.Namespace),
			AutomountServiceAccountToken: ptr.To(false)},
		&rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: e.meta(exec, ""), Rules: e.Fence.ExecutorRules},
		&rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("ClusterRoleBinding"), ObjectMeta: e.meta(exec, ""),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: exec},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: exec, Namespace: e.Namespace}}},
		&rbacv1.Role{TypeMeta: typeMeta("Role"), ObjectMeta: e.meta(exec, e.Namespace),
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{exec}, Verbs: []string{"impersonate"}}}},
		&rbacv1.RoleBinding{TypeMeta: typeMeta("RoleBinding"), ObjectMeta: e.meta(exec, e.Namespace),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: exec},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: e.ID, Namespace: e.Namespace}}},
		e.fencePolicy(),
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: e.meta(e.ID+FenceSuffix, ""),
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: e.ID + FenceSuffix,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
		},
	}
}

// requestResource is the request's resource as the policy names fenced ones (group/resource).
const requestResource = `(request.resource.group + "/" + request.resource.resource)`

// clusterWide are the validations that keep the executor from what acts beyond the objects it
// writes, unless allowed: the fenced resources (deleting what it wrote stays allowed), a Service's
// externalIPs, a CRD's conversion webhook, and policies in the namespaces it did not make.
func (f Fence) clusterWide(forbidden *metav1.StatusReason) []admissionregistrationv1.Validation {
	var out []admissionregistrationv1.Validation
	if fenced := f.fencedResources(); len(fenced) > 0 {
		out = append(out, admissionregistrationv1.Validation{Reason: forbidden,
			Expression:        `request.operation == "DELETE" || !(` + requestResource + ` in ` + celStrings(fenced) + `)`,
			MessageExpression: `"the edge owner's fence keeps the syncer from writing " + request.resource.resource + " (they act on the whole cluster; the edge owner may allow them by name)"`})
	}
	if !slices.Contains(f.Allow, wellknown.AllowExternalIPs) {
		out = append(out, admissionregistrationv1.Validation{Reason: forbidden,
			Expression: `!(request.resource.group == "" && request.resource.resource == "services" && object != null && has(object.spec.externalIPs) && size(object.spec.externalIPs) > 0)`,
			Message:    "the edge owner's fence keeps the syncer from setting a Service's externalIPs (" + wellknown.AllowExternalIPs + ")"})
	}
	if !slices.Contains(f.Allow, wellknown.AllowConversionWebhooks) {
		out = append(out, admissionregistrationv1.Validation{Reason: forbidden,
			Expression: `!(request.resource.group == "apiextensions.k8s.io" && request.resource.resource == "customresourcedefinitions" && object != null && has(object.spec.conversion) && has(object.spec.conversion.strategy) && object.spec.conversion.strategy == "Webhook")`,
			Message:    "the edge owner's fence keeps the syncer from giving a CustomResourceDefinition a conversion webhook (" + wellknown.AllowConversionWebhooks + ")"})
	}
	if !slices.Contains(f.Allow, wellknown.AllowPoliciesInEdgesOwn) {
		var policies []string
		for _, gr := range wellknown.PoliciesInNamespaces() {
			policies = append(policies, gr.Group+"/"+gr.Resource)
		}
		out = append(out, admissionregistrationv1.Validation{Reason: forbidden,
			Expression: `request.operation == "DELETE" || !(` + requestResource + ` in ` + celStrings(policies) + `) || ` +
				`(namespaceObject != null && has(namespaceObject.metadata.annotations) && "` + mapping.DownsyncedAnnotation + `" in namespaceObject.metadata.annotations)`,
			MessageExpression: `"the edge owner's fence keeps the syncer from writing " + request.resource.resource + " in namespace " + request.namespace + ", which it did not make (` + wellknown.AllowPoliciesInEdgesOwn + `)"`})
	}
	return out
}

// fencePolicy denies the executor's writes in the protected namespaces, to the Namespaces
// themselves and, unless allowed, to ClusterRoleBindings, aggregated ClusterRoles and admission
// webhooks. It matches only the executor's requests, subresources included. A cluster-scoped request
// has no namespace, and a create by generateName no name.
func (e Edge) fencePolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	protected := celStrings(e.protectedNamespaces())
	forbidden := ptr.To(metav1.StatusReasonForbidden)
	validations := []admissionregistrationv1.Validation{
		{Expression: fmt.Sprintf("!has(request.namespace) || !(request.namespace in %s)", protected), Reason: forbidden,
			MessageExpression: `"the edge owner's fence keeps the syncer out of namespace " + request.namespace`},
		{Expression: fmt.Sprintf(`!(request.resource.group == "" && request.resource.resource == "namespaces" && has(request.name) && request.name in %s)`, protected), Reason: forbidden,
			MessageExpression: `"the edge owner's fence keeps the syncer from changing namespace " + request.name`},
	}
	validations = append(validations,
		// Exec, attach, port-forward and proxy (the kubelet's, a Pod's, a Service's) run or reach what
		// the syncer did not write; a token of any ServiceAccount would be another identity.
		admissionregistrationv1.Validation{Expression: `request.operation != "CONNECT"`, Reason: forbidden,
			Message: "the edge owner's fence keeps the syncer from exec, attach, port-forward and proxy"},
		admissionregistrationv1.Validation{Expression: `!(request.resource.group == "" && request.resource.resource == "serviceaccounts" && has(request.subResource) && request.subResource == "token")`,
			Reason: forbidden, Message: "the edge owner's fence keeps the syncer from minting ServiceAccount tokens"},
		// Only what it wrote: an object it did not write is the edge owner's (adopting one is their act:
		// marking it), and a ClusterRole bound cluster-wide (system:basic-user) is not rewritten.
		admissionregistrationv1.Validation{Expression: ownedOnly, Reason: forbidden,
			Message: "the edge owner's fence keeps the syncer from changing or deleting what it did not write (no " + mapping.DownsyncedAnnotation + " mark)"},
		// A namespace's Pod Security labels override the cluster's defaults: the edge owner's to set.
		admissionregistrationv1.Validation{Expression: podSecurityUnchanged, Reason: forbidden,
			Message: "the edge owner's fence keeps the syncer from setting, changing or removing a namespace's pod-security.kubernetes.io labels"})
	validations = append(validations, e.Fence.clusterWide(forbidden)...)
	if !e.Fence.AllowEscalation {
		// Bound to a ServiceAccount of another namespace, what the executor holds would be a Pod's
		// there, which the policy does not match; aggregated into others' roles, theirs.
		validations = append(validations, admissionregistrationv1.Validation{Reason: forbidden,
			Expression: `!(request.resource.group == "rbac.authorization.k8s.io" && request.resource.resource == "clusterrolebindings" && request.operation != "DELETE")`,
			Message:    "the edge owner's fence keeps the syncer from writing ClusterRoleBindings"}, admissionregistrationv1.Validation{Reason: forbidden,
			Expression: `!(request.resource.group == "rbac.authorization.k8s.io" && request.resource.resource == "clusterroles" && object != null && has(object.metadata.labels) && object.metadata.labels.exists(k, k.startsWith("rbac.authorization.k8s.io/aggregate-to-")))`,
			Message:    "the edge owner's fence keeps the syncer from aggregating into other ClusterRoles"})
	}
	if !e.Fence.AllowWebhooks {
		validations = append(validations, admissionregistrationv1.Validation{Expression: `request.resource.group != "admissionregistration.k8s.io"`, Reason: forbidden,
			Message: "the edge owner's fence keeps the syncer from writing admission webhooks"})
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: e.meta(e.ID+FenceSuffix, ""),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete,
						admissionregistrationv1.Connect},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"},
						Scope: ptr.To(admissionregistrationv1.AllScopes)},
				}}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "executor",
				Expression: "request.userInfo.username == " + strconv.Quote(wellknown.ServiceAccountUser(e.Namespace, e.ID+ExecutorSuffix))}},
			Validations: validations,
		},
	}
}
