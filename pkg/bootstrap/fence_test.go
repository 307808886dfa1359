package bootstrap

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// fenceParts are the fence's objects among a manifest's, and the syncer's --executor argument.
type fenceParts struct {
	sa        *corev1.ServiceAccount
	role      *rbacv1.ClusterRole
	binding   *rbacv1.ClusterRoleBinding
	act       *rbacv1.Role
	actAs     *rbacv1.RoleBinding
	policy    *admissionregistrationv1.ValidatingAdmissionPolicy
	polBind   *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	syncerArg []string
}

// find is the object of type T named name among objs (any name when name is empty), or nil.
func find[T interface {
	runtime.Object
	GetName() string
}](objs []runtime.Object, name string) T {
	var none T
	for _, o := range objs {
		if t, ok := o.(T); ok && (name == "" || t.GetName() == name) {
			return t
		}
	}
	return none
}

func mustObjects(t *testing.T, e Edge) []runtime.Object {
	t.Helper()
	objs, err := e.Objects()
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func partsOf(t *testing.T, e Edge) fenceParts {
	t.Helper()
	objs, err := e.Objects()
	if err != nil {
		t.Fatal(err)
	}
	exec := e.ID + ExecutorSuffix
	p := fenceParts{sa: find[*corev1.ServiceAccount](objs, exec), role: find[*rbacv1.ClusterRole](objs, exec),
		binding: find[*rbacv1.ClusterRoleBinding](objs, exec), act: find[*rbacv1.Role](objs, exec), actAs: find[*rbacv1.RoleBinding](objs, exec),
		policy: find[*admissionregistrationv1.ValidatingAdmissionPolicy](objs, ""), polBind: find[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](objs, "")}
	args := find[*appsv1.Deployment](objs, "").Spec.Template.Spec.Containers[0].Args
	p.syncerArg = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return !strings.HasPrefix(a, "--executor") })
	return p
}

// TestFenceObjects: a fenced manifest makes the executor (no token mounted), grants it its rules,
// lets only the syncer's ServiceAccount impersonate it, and binds a policy that matches only its
// requests and keeps it out of the syncer's namespace and the protected ones, and out of webhooks
// unless allowed; the syncer is told to write as it. Unfenced, none of it is there.
func TestFenceObjects(t *testing.T) {
	e := edge()
	e.Fence.ProtectedNamespaces = []string{"payments", "kube-system"}
	p := partsOf(t, e)
	exec := e.ID + ExecutorSuffix
	if p.sa == nil || p.sa.AutomountServiceAccountToken == nil || *p.sa.AutomountServiceAccountToken {
		t.Fatalf("executor ServiceAccount %+v: want one that mounts no token", p.sa)
	}
	if p.role == nil || !slices.EqualFunc(p.role.Rules, e.Fence.ExecutorRules, func(a, b rbacv1.PolicyRule) bool { return a.String() == b.String() }) {
		t.Errorf("executor ClusterRole %+v", p.role)
	}
	if p.binding == nil || p.binding.RoleRef.Name != exec || len(p.binding.Subjects) != 1 || p.binding.Subjects[0].Name != exec || p.binding.Subjects[0].Namespace != e.Namespace {
		t.Errorf("executor ClusterRoleBinding %+v", p.binding)
	}
	wantAct := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{exec}, Verbs: []string{"impersonate"}}
	if p.act == nil || len(p.act.Rules) != 1 || p.act.Rules[0].String() != wantAct.String() || p.act.Namespace != e.Namespace {
		t.Errorf("impersonation Role %+v", p.act)
	}
	if p.actAs == nil || p.actAs.RoleRef.Kind != "Role" || p.actAs.RoleRef.Name != exec || len(p.actAs.Subjects) != 1 || p.actAs.Subjects[0].Name != e.ID {
		t.Errorf("impersonation RoleBinding %+v: want the syncer's ServiceAccount", p.actAs)
	}
	if !slices.Equal(p.syncerArg, []string{"--executor=" + exec}) {
		t.Errorf("syncer args %v", p.syncerArg)
	}
	if p.polBind == nil || p.polBind.Spec.PolicyName != e.ID+FenceSuffix || !slices.Equal(p.polBind.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("policy binding %+v", p.polBind)
	}
	spec := p.policy.Spec
	if p.policy.Name != e.ID+FenceSuffix || *spec.FailurePolicy != admissionregistrationv1.Fail || len(spec.MatchConditions) != 1 ||
		spec.MatchConditions[0].Expression != `request.userInfo.username == "system:serviceaccount:`+e.Namespace+`:`+exec+`"` {
		t.Errorf("policy %s: failure %v, match %+v", p.policy.Name, *spec.FailurePolicy, spec.MatchConditions)
	}
	var exprs []string
	for _, v := range spec.Validations {
		if v.Reason == nil || *v.Reason != metav1.StatusReasonForbidden {
			t.Errorf("validation %q: reason %v", v.Expression, v.Reason)
		}
		exprs = append(exprs, v.Expression)
	}
	// The syncer's own, the cluster's own (always), and those named.
	names := []string{"kube-node-lease", "kube-public", "kube-system", e.Namespace, "payments"}
	slices.Sort(names)
	protected := `["` + strings.Join(names, `", "`) + `"]`
	for _, want := range []string{
		"!has(request.namespace) || !(request.namespace in " + protected + ")",
		`!(request.resource.group == "" && request.resource.resource == "namespaces" && has(request.name) && request.name in ` + protected + ")",
		`request.resource.group != "admissionregistration.k8s.io"`,
		`request.operation != "CONNECT"`,
		podSecurityUnchanged,
		ownedOnly,
	} {
		if !slices.Contains(exprs, want) {
			t.Errorf("no validation %s among %q", want, exprs)
		}
	}

	for _, want := range []string{`"clusterrolebindings"`, `"rbac.authorization.k8s.io/aggregate-to-"`} {
		if !slices.ContainsFunc(exprs, func(x string) bool { return strings.Contains(x, want) }) {
			t.Errorf("no validation of %s among %q", want, exprs)
		}
	}
	if !slices.Equal(spec.MatchConstraints.ResourceRules[0].Resources, []string{"*/*"}) {
		t.Errorf("matched resources %v: want subresources too", spec.MatchConstraints.ResourceRules[0].Resources)
	}

	// What acts on the whole cluster, each unless allowed by name.
	fencedRes := func(exprs []string) string {
		for _, x := range exprs {
			if strings.Contains(x, `"scheduling.k8s.io/priorityclasses"`) || strings.Contains(x, `"storage.k8s.io/storageclasses"`) {
				return x
			}
		}
		return ""
	}
	x := fencedRes(exprs)
	for _, gr := range wellknown.Fenced() {
		if !strings.Contains(x, `"`+gr.Group+"/"+gr.Resource+`"`) {
			t.Errorf("%s not fenced: %s", gr, x)
		}
	}
	for _, want := range []string{"object.spec.externalIPs", "object.spec.conversion.strategy", "namespaceObject.metadata.annotations"} {
		if !slices.ContainsFunc(exprs, func(x string) bool { return strings.Contains(x, want) }) {
			t.Errorf("no validation of %s among %q", want, exprs)
		}
	}

	e.Fence.AllowWebhooks, e.Fence.AllowEscalation = true, true
	e.Fence.Allow = []string{"storageclasses.storage.k8s.io", wellknown.AllowExternalIPs, wellknown.AllowConversionWebhooks, wellknown.AllowPoliciesInEdgesOwn}
	allowed := partsOf(t, e)
	var allowedExprs []string
	for _, v := range allowed.policy.Spec.Validations {
		if strings.Contains(v.Expression, "admissionregistration") || strings.Contains(v.Expression, "rbac.authorization.k8s.io") ||
			strings.Contains(v.Expression, "externalIPs") || strings.Contains(v.Expression, "conversion") || strings.Contains(v.Expression, "namespaceObject") {
			t.Errorf("webhooks, escalation and opt-ins allowed, yet %s", v.Expression)
		}
		allowedExprs = append(allowedExprs, v.Expression)
	}
	if x := fencedRes(allowedExprs); strings.Contains(x, "storageclasses") || !strings.Contains(x, "priorityclasses") {
		t.Errorf("storage classes allowed: %s", x)
	}
	if args := find[*appsv1.Deployment](mustObjects(t, e), "").Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--fence-allow="+strings.Join(e.Fence.Allow, ",")) {
		t.Errorf("the syncer is not told what is allowed: %v", args)
	}

	e.Fence = nil
	if p := partsOf(t, e); p.sa != nil || p.role != nil || p.act != nil || p.policy != nil || p.polBind != nil || len(p.syncerArg) != 0 {
		t.Errorf("unfenced: %+v", p)
	}
}

// TestFencedRules: fenced, the syncer's own rules list and watch (no get: through "*", get
// nodes/proxy is exec on every kubelet) and record Events, and the executor's write, in both RBAC
// modes; neither may escalate or bind unless allowed, nor impersonate.
func TestFencedRules(t *testing.T) {
	configs := []*edgev1.SyncerConfig{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"app"}, Resources: []edgev1.NamespaceScopeDownsyncResource{
			{GroupResource: metav1.GroupResource{Resource: "configmaps"}, APIVersion: "v1"}}}}}}
	for _, mode := range []string{RBACBroad, RBACLeast} {
		o := DefaultOptions()
		o.RBAC = mode
		own, fence := o.edgeRules(configs)
		for _, r := range own {
			if slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "list" && v != "watch" }) &&
				!(slices.Equal(r.Resources, []string{"events"}) && slices.Equal(r.APIGroups, []string{""})) {
				t.Errorf("%s: the syncer's own rules write: %v", mode, r)
			}
		}
		verbs := map[string]bool{}
		for _, r := range fence.ExecutorRules {
			for _, v := range r.Verbs {
				verbs[v] = true
			}
		}
		if !verbs["create"] || !verbs["delete"] || !verbs["patch"] || verbs["*"] || verbs["escalate"] || verbs["bind"] || verbs["impersonate"] {
			t.Errorf("%s: executor verbs %v", mode, verbs)
		}
		o.AllowEscalation = true
		if _, fence = o.edgeRules(configs); !slices.ContainsFunc(fence.ExecutorRules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Verbs, "escalate") }) {
			t.Errorf("%s: --fence-allow-escalation grants no escalate", mode)
		}
	}
	o := DefaultOptions()
	o.Fence = false
	if own, fence := o.edgeRules(nil); fence != nil || len(own) != 1 || !slices.Equal(own[0].Verbs, []string{"*"}) {
		t.Errorf("unfenced broad: %v %v", own, fence)
	}
}

// TestFenceOptions: a protected namespace that is no namespace name is refused.
func TestFenceOptions(t *testing.T) {
	o := DefaultOptions()
	o.Name, o.Image = "florin", "img"
	o.ProtectedNamespaces = []string{"kube-system", "Bad_Name"}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `--fence-protected-namespaces: "Bad_Name" is not a namespace name`) {
		t.Errorf("error %v", err)
	}
	o.ProtectedNamespaces = nil
	o.Allow = []string{"priorityclasses.scheduling.k8s.io", "pods", "externalips"}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `--fence-allow: "pods", "externalips": neither a fenced resource nor an opt-in`) {
		t.Errorf("error %v", err)
	}
}
