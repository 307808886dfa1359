package bootstrap

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubestellar/syncer/cmd/syncer/options"
	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
)

func TestSyncerIDIsStable(t *testing.T) {
	a := SyncerID("https://mailbox.example.com/clusters/root:mb-1", "florin")
	if a != SyncerID("https://mailbox.example.com/clusters/root:mb-1", "florin") {
		t.Error("not stable")
	}
	if a == SyncerID("https://mailbox.example.com/clusters/root:mb-2", "florin") || a == SyncerID("https://mailbox.example.com/clusters/root:mb-1", "guilder") {
		t.Error("workspace or name does not change the ID")
	}
	if !strings.HasPrefix(a, "kubestellar-syncer-florin-") || len(a) != len("kubestellar-syncer-florin-")+8 {
		t.Errorf("ID %q", a)
	}
	long := SyncerID("https://x", strings.Repeat("a", 200))
	if len(long) > 63 {
		t.Errorf("ID of %d characters", len(long))
	}
}

// edge is syncer-gen's default: fenced, broad.
func edge() Edge {
	own, executor := FencedRules(RBACBroad, nil)
	return Edge{ID: "kubestellar-syncer-florin-abcdefgh", Namespace: "kubestellar-syncer-florin-abcdefgh", SyncTargetName: "florin",
		SyncTargetUID: "3f1c", Image: "example.com/syncer:dev", Replicas: 2, QPS: 50, Burst: 100, Verbosity: 2,
		UpstreamServer: "https://mailbox:6443", UpstreamCA: []byte("CA"), UpstreamToken: "tok", UpstreamContext: "default",
		Rules: own, Fence: &Fence{ExecutorRules: executor, ProtectedNamespaces: nil}}
}

// TestDeploymentMatchesSyncerAndImage: the Deployment's arguments are accepted by the syncer's own
// flag parsing and validation, it uses the image's entrypoint, and its probes and ports point at
// the ports its arguments set.
func TestDeploymentMatchesSyncerAndImage(t *testing.T) {
	objs, err := edge().Objects()
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			dep = d
		}
	}
	c := dep.Spec.Template.Spec.Containers[0]
	o := options.NewOptions()
	fs := pflag.NewFlagSet("syncer", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(c.Args); err != nil {
		t.Fatalf("the syncer rejects the Deployment's args %v: %v", c.Args, err)
	}
	fs.Visit(func(f *pflag.Flag) {
		if f.Deprecated != "" {
			t.Errorf("the Deployment uses the deprecated syncer flag --%s (%s)", f.Name, f.Deprecated)
		}
	})
	t.Setenv("POD_NAMESPACE", dep.Namespace)
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("the syncer's validation rejects the Deployment's args: %v", err)
	}
	if !o.LeaderElect || o.LeaderElectResourceNamespace != dep.Namespace || o.SyncTargetName != "florin" || o.SyncTargetUID != "3f1c" || o.FromKubeconfig != "/kubestellar/kubeconfig" {
		t.Errorf("parsed options %+v", o)
	}
	if len(c.Command) != 0 {
		t.Errorf("the Deployment overrides the image's entrypoint with %v", c.Command)
	}
	if *dep.Spec.Template.Spec.SecurityContext.RunAsUser != nonRootUID {
		t.Error("runAsUser differs from the image's user")
	}
	sc := c.SecurityContext
	if *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 || !*dep.Spec.Template.Spec.SecurityContext.RunAsNonRoot {
		t.Errorf("security context not restricted: %+v", sc)
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.Ports[1].ContainerPort != HealthPort ||
		o.HealthProbeBindAddress != ":8081" || o.MetricsBindAddress != ":8443" || !o.MetricsSecure {
		t.Errorf("probes/ports disagree with the args: %+v %+v", c.Ports, o)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Error("no resource requests")
	}
	if c.VolumeMounts[0].MountPath != "/kubestellar/" || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("kubeconfig mount %+v", c.VolumeMounts[0])
	}
}

func TestKubeconfigSecret(t *testing.T) {
	data, err := edge().Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://mailbox:6443" || cfg.BearerToken != "tok" || string(cfg.CAData) != "CA" {
		t.Errorf("kubeconfig gives %+v", cfg)
	}
	manifest, err := edge().Manifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Namespace", "ServiceAccount", "Secret", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment"} {
		if !strings.Contains(string(manifest), "\nkind: "+kind+"\n") {
			t.Errorf("manifest lacks a %s", kind)
		}
	}
	if strings.Contains(string(manifest), "creationTimestamp") {
		t.Error("manifest has creationTimestamp lines")
	}
}

func TestLeastRules(t *testing.T) {
	configs := []*edgev1.SyncerConfig{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: edgev1.SyncerConfigSpec{
		NamespaceScope: edgev1.NamespaceScopeDownsyncs{Namespaces: []string{"app"}, Resources: []edgev1.NamespaceScopeDownsyncResource{
			{GroupResource: metav1.GroupResource{Resource: "configmaps"}, APIVersion: "v1"}}},
		Upsync: []edgev1.UpsyncSet{{APIGroup: "wgpolicyk8s.io", Resources: []string{"policyreports"}, Namespaces: []string{"*"}, Names: []string{"*"}}},
	}}}
	allows := func(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
		for _, r := range rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						if (g == group || g == "*") && (res == resource || res == "*") && (v == verb || v == "*") {
							return true
						}
					}
				}
			}
		}
		return false
	}
	down := DownstreamRules(RBACLeast, configs)
	for _, c := range []struct {
		group, resource, verb string
		want                  bool
	}{
		{"", "configmaps", "create", true},
		{"", "configmaps", "delete", true},
		{"", "namespaces", "create", true},
		{"apiextensions.k8s.io", "customresourcedefinitions", "watch", true},
		{"wgpolicyk8s.io", "policyreports", "watch", true},
		{"wgpolicyk8s.io", "policyreports", "create", false},
		{"", "secrets", "get", false},
		{"apps", "deployments", "create", false},
	} {
		if got := allows(down, c.group, c.resource, c.verb); got != c.want {
			t.Errorf("downstream least: %s %s.%s = %v, want %v", c.verb, c.resource, c.group, got, c.want)
		}
	}
	up := UpstreamRules(RBACLeast, configs)
	for _, c := range []struct {
		group, resource, verb string
		want                  bool
	}{
		{"", "configmaps", "watch", true},
		{"", "configmaps/status", "update", true},
		{"", "configmaps", "delete", false},
		{"wgpolicyk8s.io", "policyreports", "create", true},
		{"edge.kubestellar.io", "syncerconfigs/status", "patch", true},
		{"edge.kubestellar.io", "edgesyncconfigs", "watch", true},
		{"edge.kubestellar.io", "edgesyncconfigs/status", "patch", true},
		{"", "events", "create", true},
		{"", "secrets", "get", false},
	} {
		if got := allows(up, c.group, c.resource, c.verb); got != c.want {
			t.Errorf("upstream least: %s %s.%s = %v, want %v", c.verb, c.resource, c.group, got, c.want)
		}
	}
	if !allows(DownstreamRules(RBACBroad, nil), "", "secrets", "delete") || !allows(UpstreamRules(RBACBroad, nil), "x.io", "things", "create") {
		t.Error("broad rules are not broad")
	}

	// Entries named by kind get their group (RBAC names resources); a conversion grants the other
	// side's group: the denatured one upstream for upsync, the natural one at the edge for downsync.
	crd := func(name string) edgev1.EdgeSyncConfigResource {
		return edgev1.EdgeSyncConfigResource{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: name}
	}
	configs = []*edgev1.SyncerConfig{{ObjectMeta: metav1.ObjectMeta{Name: "k"}, Spec: edgev1.SyncerConfigSpec{
		NamespacedObjects: []edgev1.NamespaceScopeDownsyncObjects{{GroupResource: metav1.GroupResource{Group: "wgpolicyk8s.io.denatured"}, Kind: "PolicyReport",
			ObjectsByNamespace: []edgev1.NamespaceAndNames{{Namespace: "app", Names: []string{"*"}}}}},
		Upsync:      []edgev1.UpsyncSet{{APIGroup: "wgpolicyk8s.io", Kinds: []string{"ClusterPolicyReport"}, Names: []string{"*"}}},
		Conversions: []edgev1.Conversion{{Upstream: crd("policyreports.wgpolicyk8s.io.denatured"), Downstream: crd("policyreports.wgpolicyk8s.io")}},
	}}}
	up, down = UpstreamRules(RBACLeast, configs), DownstreamRules(RBACLeast, configs)
	for _, c := range []struct {
		rules                 []rbacv1.PolicyRule
		side                  string
		group, resource, verb string
		want                  bool
	}{
		{up, "upstream", "wgpolicyk8s.io.denatured", "policyreports", "watch", true},
		{up, "upstream", "wgpolicyk8s.io.denatured", "clusterpolicyreports", "create", true},
		{up, "upstream", "wgpolicyk8s.io", "clusterpolicyreports", "create", true},
		{down, "downstream", "wgpolicyk8s.io", "policyreports", "create", true},
		{down, "downstream", "wgpolicyk8s.io", "clusterpolicyreports", "watch", true},
		{down, "downstream", "wgpolicyk8s.io.denatured", "policyreports", "create", true},
		{down, "downstream", "apps", "deployments", "create", false},
	} {
		if got := allows(c.rules, c.group, c.resource, c.verb); got != c.want {
			t.Errorf("%s least with kinds and conversions: %s %s.%s = %v, want %v", c.side, c.verb, c.resource, c.group, got, c.want)
		}
	}
}

// TestRecommendedLabels: every object of the edge manifest, and the syncer's pods, carry
// Kubernetes' recommended labels, as the Helm chart's objects do; the Deployment's selector stays
// the one older manifests have (a selector cannot change).
func TestRecommendedLabels(t *testing.T) {
	objs, err := edge().Objects()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"app.kubernetes.io/name": "kubestellar-syncer", "app.kubernetes.io/instance": edge().ID,
		"app.kubernetes.io/component": "syncer", "app.kubernetes.io/part-of": "kubestellar", "app.kubernetes.io/managed-by": "kubestellar-syncer-gen"}
	check := func(what string, labels map[string]string) {
		for k, v := range want {
			if labels[k] != v {
				t.Errorf("%s: label %s=%q, want %q", what, k, labels[k], v)
			}
		}
	}
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("%T %s", o, m.GetName()), m.GetLabels())
		if d, ok := o.(*appsv1.Deployment); ok {
			check("pod template", d.Spec.Template.Labels)
			if sel := d.Spec.Selector.MatchLabels; len(sel) != 1 || sel["app"] != edge().ID {
				t.Errorf("selector %v, want app=%s only", sel, edge().ID)
			}
		}
	}
}
