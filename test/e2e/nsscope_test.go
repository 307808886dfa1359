package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/syncer/pkg/bootstrap"
)

// TestUpstreamInformersScopedToNamespaces: a syncer whose config names its namespaces lists and
// watches the selected resource in those namespaces only. It runs upstream as a ServiceAccount that
// may read ConfigMaps in the namespaces named only (a Role in each; the SyncerConfigs, CRDs and
// Namespaces cluster-wide), which a cluster-wide ConfigMap informer could not list: its upstream
// WATCHes are never refused and its refused LISTs do not grow (the one-time scan at start for
// upsynced copies is refused once per resource, by design). It syncs the first namespace's objects,
// picks up a namespace added to the config, keeps the first namespace's edge copy across the change
// (same UID, nothing deleted), and deletes the copies of a namespace removed from the config.
func TestUpstreamInformersScopedToNamespaces(t *testing.T) {
	f := newFixture(t)
	const label = "e2e.kubestellar.io/nsscope"
	nsA, nsB, other := f.namespace("a"), f.namespace("b"), f.namespace("other")
	for _, ns := range []string{nsA, nsB, other} {
		f.create(f.up, gvrConfigMaps, configMap(ns, "app", map[string]interface{}{"in": ns}))
	}
	id := f.namespaceScopedIdentity(nsA)
	f.syncerConfig(f.name, nsScope([]string{nsA}, resource("", "v1", "configmaps")))
	f.update(f.up, gvrSyncerConfig, "", f.name, withLabel(label, f.name))
	p := f.startSyncer(withArgs("--upstream-kubeconfig="+id.kubeconfig, "--syncer-config-selector="+label+"="+f.name, "--heartbeat-period=5s"))

	first := f.waitFor(f.down, gvrConfigMaps, nsA, "app", hasMark)
	f.expectSelectionValid()
	p.waitSettled()
	refused := func() (list, watch float64) {
		m := p.metrics()
		return m[`kubestellar_syncer_api_requests_total{code="403",side="upstream",verb="LIST"}`],
			m[`kubestellar_syncer_api_requests_total{code="403",side="upstream",verb="WATCH"}`]
	}
	lists0, watches := refused()
	if watches != 0 {
		t.Errorf("%v upstream WATCHes refused: an informer watches beyond the namespaces it may read", watches)
	}

	// Namespace B added: granted, then named.
	id.grantConfigMaps(f, nsB)
	f.update(f.up, gvrSyncerConfig, "", f.name, withSpec(nsScope([]string{nsA, nsB}, resource("", "v1", "configmaps"))))
	f.waitFor(f.down, gvrConfigMaps, nsB, "app", hasMark)
	p.waitSettled()
	if cm, err := f.get(f.down, gvrConfigMaps, nsA, "app"); err != nil || cm.GetUID() != first.GetUID() || cm.GetDeletionTimestamp() != nil {
		t.Errorf("the edge copy of %s/app did not stay across the scope change: %v (uid %v, want %v)", nsA, err, uidOf(cm), first.GetUID())
	}
	m := p.metrics()
	if n := m[`kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="deleted"}`]; n != 0 {
		t.Errorf("%v ConfigMaps deleted at the edge while a namespace was added", n)
	}
	if _, err := f.get(f.down, gvrConfigMaps, other, "app"); err == nil {
		t.Errorf("%s/app, in a namespace no config names, is at the edge", other)
	}

	// Namespace A removed: its copy goes, B's stays.
	second, _ := f.get(f.down, gvrConfigMaps, nsB, "app")
	f.update(f.up, gvrSyncerConfig, "", f.name, withSpec(nsScope([]string{nsB}, resource("", "v1", "configmaps"))))
	f.waitGone(f.down, gvrConfigMaps, nsA, "app")
	p.waitSettled()
	if cm, err := f.get(f.down, gvrConfigMaps, nsB, "app"); err != nil || cm.GetUID() != second.GetUID() || cm.GetDeletionTimestamp() != nil {
		t.Errorf("the edge copy of %s/app did not stay when %s left the scope: %v", nsB, nsA, err)
	}
	f.expectSelectionValid()
	if lists, watches := refused(); lists != lists0 || watches != 0 {
		t.Errorf("upstream requests refused after the start: LIST %v (%v at start), WATCH %v; an informer lists or watches beyond its namespaces",
			lists, lists0, watches)
	}
	if log := p.logText(); strings.Contains(log, "cannot list and watch") {
		t.Errorf("the syncer reported a resource it may not list and watch:\n%s", p.tail(30))
	}
}

// expectSelectionValid waits until the test's SyncerConfig says its selection is valid: no
// resource the syncer may not list and watch.
func (f *fixture) expectSelectionValid() {
	f.t.Helper()
	eventually(f.t, 30*time.Second, "SelectionValid True", func() (bool, string) {
		cfg, err := f.get(f.up, gvrSyncerConfig, "", f.name)
		if err != nil {
			return false, err.Error()
		}
		st, _, msg := conditionOf(cfg, "SelectionValid")
		return st == "True", fmt.Sprintf("SelectionValid %s %q", st, msg)
	})
}

// withSpec replaces an object's spec (the config keeps its label: replaced whole, it would leave the
// syncer's selection for a moment).
func withSpec(spec map[string]interface{}) func(*unstructured.Unstructured) {
	return func(o *unstructured.Unstructured) { o.Object["spec"] = spec }
}

func uidOf(o *unstructured.Unstructured) string {
	if o == nil {
		return ""
	}
	return string(o.GetUID())
}

// scopedIdentity is an upstream ServiceAccount (of namespace default) that may read ConfigMaps in
// the namespaces it is granted only, its kubeconfig and a client.
type scopedIdentity struct {
	sa         string
	kubeconfig string
	kube       kubernetes.Interface
}

// namespaceScopedIdentity makes an upstream ServiceAccount with what a syncer reads cluster-wide
// (syncer-gen's least rules for no selected resource: its configs, CRDs, APIBindings, Events; and
// Namespaces) and ConfigMaps in the given namespace only.
func (f *fixture) namespaceScopedIdentity(namespace string) *scopedIdentity {
	f.t.Helper()
	id := &scopedIdentity{sa: f.name + "-syncer"}
	kube := f.up.kube
	if _, err := kube.CoreV1().ServiceAccounts("default").Create(f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: id.sa}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	rules := append(bootstrap.UpstreamRules(bootstrap.RBACLeast, nil),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}})
	if _, err := kube.RbacV1().ClusterRoles().Create(f.ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: id.sa}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(f.ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: id.sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: id.sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: id.sa, Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		ctx := context.Background()
		_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, id.sa, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoles().Delete(ctx, id.sa, metav1.DeleteOptions{})
		_ = kube.CoreV1().ServiceAccounts("default").Delete(ctx, id.sa, metav1.DeleteOptions{})
	})
	tr, err := kube.CoreV1().ServiceAccounts("default").CreateToken(f.ctx, id.sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	id.kubeconfig = kubeconfigVia(f.t, upstream, upstream.URL, tr.Status.Token)
	id.kube = kubernetes.NewForConfigOrDie(upstream.TokenConfig(tr.Status.Token))
	id.grantConfigMaps(f, namespace)
	if _, err := id.kube.CoreV1().ConfigMaps("").List(f.ctx, metav1.ListOptions{}); err == nil {
		f.t.Fatal("the ServiceAccount may list configmaps cluster-wide: the test would prove nothing")
	}
	return id
}

// grantConfigMaps lets the ServiceAccount read and write ConfigMaps in a namespace (a Role and its
// binding there), and waits until the apiserver's authorizer says it may.
func (id *scopedIdentity) grantConfigMaps(f *fixture, namespace string) {
	f.t.Helper()
	kube := f.up.kube
	if _, err := kube.RbacV1().Roles(namespace).Create(f.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: id.sa},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "update", "patch"}}}},
		metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(namespace).Create(f.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: id.sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: id.sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: id.sa, Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	eventually(f.t, 30*time.Second, "the ServiceAccount to read configmaps in "+namespace, func() (bool, string) {
		_, err := id.kube.CoreV1().ConfigMaps(namespace).List(f.ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// TestManyNamespacesHoldUpNoOther: a config naming hundreds of namespaces, few of which exist, is
// added while another config's objects flow. The other config's new object still arrives within
// seconds, and the big config's objects arrive too: by default (the syncer may list ConfigMaps
// cluster-wide, as a SelfSubjectAccessReview tells) with one cluster-wide list and watch filtered to
// those namespaces; forced to watch namespace by namespace, with each namespace usable as soon as it
// is listed. The two modes run side by side, each with its own syncer and namespaces.
func TestManyNamespacesHoldUpNoOther(t *testing.T) {
	const many = 300 // past the default --max-namespace-informers (50)
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"clusterwide", nil}, {"bynamespace", []string{"--max-namespace-informers=100000"}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			other, a, b := f.namespace("other"), f.namespace("a"), f.namespace("b")
			for _, ns := range []string{other, a, b} {
				f.create(f.up, gvrConfigMaps, configMap(ns, "app", map[string]interface{}{"in": ns}))
			}
			label := "e2e.kubestellar.io/many-" + mode.name
			f.syncerConfig(f.name+"-one", nsScope([]string{other}, resource("", "v1", "configmaps")))
			f.update(f.up, gvrSyncerConfig, "", f.name+"-one", withLabel(label, "yes"))
			p := f.startSyncer(withArgs(append([]string{"--syncer-config-selector=" + label + "=yes"}, mode.flags...)...))
			f.waitFor(f.down, gvrConfigMaps, other, "app", hasMark)
			p.waitSettled()
			// Each list is a watch that begins with the current state (watch-list): count the watches.
			watches := func() float64 {
				return p.metrics()[`kubestellar_syncer_api_requests_total{code="200",side="upstream",verb="WATCH"}`]
			}
			watches0 := watches()

			names := []string{a, b}
			for i := len(names); i < many; i++ {
				names = append(names, fmt.Sprintf("%s-absent-%03d", f.name, i))
			}
			f.syncerConfig(f.name+"-many", nsScope(names, resource("", "v1", "configmaps")))
			f.update(f.up, gvrSyncerConfig, "", f.name+"-many", withLabel(label, "yes"))
			start := time.Now()
			f.create(f.up, gvrConfigMaps, configMap(other, "later", map[string]interface{}{"k": "v"}))
			f.waitFor(f.down, gvrConfigMaps, other, "later", hasMark)
			otherArrived := time.Since(start)
			f.waitFor(f.down, gvrConfigMaps, a, "app", hasMark)
			f.waitFor(f.down, gvrConfigMaps, b, "app", hasMark)
			t.Logf("%s: another config's new object at the edge %.1fs after a config naming %d namespaces came, its own objects after %.1fs",
				mode.name, otherArrived.Seconds(), many, time.Since(start).Seconds())
			if otherArrived > 10*time.Second {
				t.Errorf("another config's object took %v to arrive while a config naming %d namespaces started", otherArrived, many)
			}
			p.waitSettled()
			opened := watches() - watches0
			switch mode.name {
			case "clusterwide":
				if opened > 10 {
					t.Errorf("%v upstream watches opened for a config naming %d namespaces: want one cluster-wide (and the syncer's own few)", opened, many)
				}
				said := false
				for _, line := range strings.Split(p.logText(), "\n") {
					said = said || strings.Contains(line, "Reviewed whether the syncer may list and watch") && strings.Contains(line, "clusterWide=true")
				}
				if !said {
					t.Error("the syncer did not say it watches the ConfigMaps cluster-wide")
				}
			default:
				if opened < many {
					t.Errorf("%v upstream watches opened, want one per namespace (%d)", opened, many)
				}
			}
		})
	}
}
