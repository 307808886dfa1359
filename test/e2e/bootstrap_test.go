package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/test/testenv"
)

// syncerGen runs the plugin as kubectl would; it returns its stderr, and fails the test on an error
// unless wantErr.
func syncerGen(t *testing.T, wantErr bool, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(pluginBin, args...)
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	go func() { done <- cmd.Run() }()
	select {
	case err := <-done:
		if (err != nil) != wantErr {
			t.Fatalf("syncer-gen %v: err=%v, want error %v; stderr:\n%s", args, err, wantErr, stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("syncer-gen %v did not return within 60s (it must fail fast); stderr:\n%s", args, stderr.String())
	}
	return stderr.String()
}

func kubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := kubectlCommand(context.Background(), kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return out
}

// kubectlCommand runs the real kubectl with a kubeconfig and returns its combined output.
func kubectlCommand(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(os.Getenv("E2E_BIN"), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// bootstrapPod runs syncer-gen against the upstream and applies its manifest, unchanged, at the edge
// with kubectl (server-side apply: every object validated by the apiserver): the syncer runs as a
// Pod of the generated Deployment, from the syncer's image, with the mounted kubeconfig Secret for
// upstream and the in-cluster config of the generated ServiceAccount at the edge, so both sides'
// generated RBAC is what it runs with. It returns the syncer's ID, a client of the edge with that
// ServiceAccount's token (to check what it may not do) and the Deployment, rolled out.
func bootstrapPod(t *testing.T, f *fixture, name, rbac string, genArgs ...string) (id string, edgeKube kubernetes.Interface, d *syncerDeployment) {
	t.Helper()
	// The identity goes at the end with the upstream's clients of then (a restart of kcp changes its
	// admin token).
	return bootstrapPodAt(t, f, upstream, func() clients { return mustClients(upstream) }, name, rbac,
		append([]string{"--syncer-config-selector=" + testLabel + "=" + f.name}, genArgs...)...)
}

// bootstrapPodAt is bootstrapPod with syncer-gen's kubeconfig that of up (whose clients, as upClients
// gives them, remove the identity at the end), and no config selector but what genArgs give.
func bootstrapPodAt(t *testing.T, f *fixture, up *testenv.Server, upClients func() clients, name, rbac string, genArgs ...string) (id string, edgeKube kubernetes.Interface, d *syncerDeployment) {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "syncer.yaml")
	args := append([]string{name, "--syncer-image=" + syncerImage(t), "-o", manifest,
		"--kubeconfig", up.Kubeconfig, "--rbac=" + rbac, "--lifetime=2h"}, genArgs...)
	stderr := syncerGen(t, false, args...)
	for _, want := range []string{"kubectl apply -f", "kubectl get deployment -n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the plugin's output does not tell the next step %q:\n%s", want, stderr)
		}
	}
	id = bootstrap.SyncerID(up.URL, name)
	t.Cleanup(func() {
		ctx := context.Background()
		upClients := upClients()
		_ = f.down.kube.CoreV1().Namespaces().Delete(ctx, id, metav1.DeleteOptions{}) // the syncer's pods first: it stops writing
		_ = upClients.kube.RbacV1().ClusterRoles().Delete(ctx, id, metav1.DeleteOptions{})
		_ = upClients.kube.RbacV1().ClusterRoleBindings().Delete(ctx, id, metav1.DeleteOptions{})
		_ = upClients.kube.CoreV1().ServiceAccounts("default").Delete(ctx, id, metav1.DeleteOptions{})
		_ = upClients.kube.RbacV1().Roles("default").Delete(ctx, id+bootstrap.TokenRenewalSuffix, metav1.DeleteOptions{})
		_ = upClients.kube.RbacV1().RoleBindings("default").Delete(ctx, id+bootstrap.TokenRenewalSuffix, metav1.DeleteOptions{})
		for _, name := range []string{id, id + bootstrap.MetricsReaderSuffix, id + bootstrap.ExecutorSuffix} {
			_ = f.down.kube.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		}
		for _, name := range []string{id, id + "-auth-delegator", id + bootstrap.ExecutorSuffix} {
			_ = f.down.kube.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		}
		_ = f.down.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, id+bootstrap.FenceSuffix, metav1.DeleteOptions{})
		_ = f.down.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, id+bootstrap.FenceSuffix, metav1.DeleteOptions{})
	})
	kubectl(t, env.Downstream.Kubeconfig, "apply", "--server-side", "-f", manifest)
	d = &syncerDeployment{f: f, namespace: id, name: id, lease: "kubestellar-syncer-" + name, metricsReader: id + bootstrap.MetricsReaderSuffix, manifest: manifest}
	d.waitAvailable(2 * time.Minute)

	tr, err := f.down.kube.CoreV1().ServiceAccounts(id).CreateToken(f.ctx, id, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return id, kubernetes.NewForConfigOrDie(env.Downstream.TokenConfig(tr.Status.Token)), d
}

// TestBootstrapSyncerGen: the plugin's identity and manifest run a syncer that syncs both ways with
// only the generated permissions; running the plugin again updates the same objects.
func TestBootstrapSyncerGen(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("app")
	f.create(f.up, gvrConfigMaps, configMap(ns, "settings", map[string]interface{}{"k": "v"}))
	spec := nsScope([]string{ns}, resource("", "v1", "configmaps"))
	spec["upsync"] = []interface{}{map[string]interface{}{"apiGroup": "", "resources": []interface{}{"configmaps"},
		"namespaces": []interface{}{ns}, "names": []interface{}{"edge-report"}}}
	f.syncerConfig(f.name, spec)
	id, _, d := bootstrapPod(t, f, f.name, bootstrap.RBACBroad)

	f.waitFor(f.down, gvrConfigMaps, ns, "settings", hasMark)
	f.create(f.down, gvrConfigMaps, configMap(ns, "edge-report", map[string]interface{}{"result": "pass"}))
	f.waitFor(f.up, gvrConfigMaps, ns, "edge-report", upsynced)
	d.expectServing()

	// Again: the same identity, updated in place.
	syncerGen(t, false, f.name, "--syncer-image="+syncerImage(t), "-o", filepath.Join(t.TempDir(), "again.yaml"), "--kubeconfig", upstream.Kubeconfig)
	sas, err := f.up.kube.CoreV1().ServiceAccounts("default").List(f.ctx, metav1.ListOptions{LabelSelector: "edge.kubestellar.io/syncer=" + id})
	if err != nil || len(sas.Items) != 1 {
		t.Fatalf("after a second run: %v service accounts labelled %s (%v)", len(sas.Items), id, err)
	}
	applied := false
	for _, mf := range sas.Items[0].ManagedFields {
		applied = applied || (mf.Manager == bootstrap.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply)
	}
	if !applied {
		t.Errorf("the service account was not server-side applied by %q: %+v", bootstrap.FieldManager, sas.Items[0].ManagedFields)
	}
	if _, err := f.up.kube.CoreV1().Secrets("default").Get(f.ctx, id+"-token", metav1.GetOptions{}); err != nil {
		t.Errorf("the upstream token Secret: %v", err)
	}
}

// TestBootstrapLeastRBAC: with --rbac=least the syncer still syncs what its SyncerConfigs select,
// and the edge apiserver refuses it what they do not.
func TestBootstrapLeastRBAC(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("app")
	f.create(f.up, gvrConfigMaps, configMap(ns, "settings", map[string]interface{}{"k": "v"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	_, edgeKube, d := bootstrapPod(t, f, f.name, bootstrap.RBACLeast)
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", hasMark)
	f.update(f.up, gvrConfigMaps, ns, "settings", func(o *unstructured.Unstructured) { o.Object["data"] = map[string]interface{}{"k": "v2"} })
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", dataEquals("k", "v2"))
	_, err := edgeKube.CoreV1().Secrets(ns).Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-selected"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("creating a Secret (not in the SyncerConfigs) as the syncer: %v, want Forbidden", err)
	}
	_, err = edgeKube.RbacV1().ClusterRoles().Create(f.ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: f.name + "-escalate"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("creating a ClusterRole as the syncer: %v, want Forbidden", err)
	}
	d.expectServing()

	// Secrets added to the config without running syncer-gen again: the syncer may not list them, and
	// says so where the user looks, naming the resource and the verb (the heartbeat is every 20 s).
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps"), resource("", "v1", "secrets")))
	eventually(t, 60*time.Second, "SelectionValid naming the resource the syncer may not list", func() (bool, string) {
		cfg, err := f.get(f.up, gvrSyncerConfig, "", f.name)
		if err != nil {
			return false, err.Error()
		}
		st, _, msg := conditionOf(cfg, "SelectionValid")
		ready, _, _ := conditionOf(cfg, "Ready")
		return st == "False" && ready == "False" && strings.Contains(msg, "cannot list and watch") && strings.Contains(msg, "secrets") &&
			strings.Contains(msg, "forbidden"), fmt.Sprintf("SelectionValid %s %q, Ready %s", st, msg, ready)
	})
}

// TestBootstrapFailsFast: an unreachable endpoint and a user without permissions are clear errors
// within seconds, not retries forever (kubestellar/kubestellar#1310).
func TestBootstrapFailsFast(t *testing.T) {
	f := newFixture(t)
	start := time.Now()
	unreachable := kubeconfigVia(t, upstream, "https://127.0.0.1:1", "")
	stderr := syncerGen(t, true, "edge1", "--syncer-image=x", "-o", "-", "--kubeconfig", unreachable)
	if !strings.Contains(stderr, "cannot use the upstream at https://127.0.0.1:1") || time.Since(start) > 20*time.Second {
		t.Errorf("unreachable endpoint: after %v, stderr %q", time.Since(start), stderr)
	}

	// A ServiceAccount with no permissions upstream.
	sa := f.name + "-nobody"
	if _, err := f.up.kube.CoreV1().ServiceAccounts("default").Create(f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.up.kube.CoreV1().ServiceAccounts("default").Delete(f.ctx, sa, metav1.DeleteOptions{}) })
	tr, err := f.up.kube.CoreV1().ServiceAccounts("default").CreateToken(f.ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stderr = syncerGen(t, true, "edge1", "--syncer-image=x", "-o", "-", "--kubeconfig", kubeconfigVia(t, upstream, upstream.URL, tr.Status.Token))
	if !strings.Contains(stderr, "may not create serviceaccounts") {
		t.Errorf("no-permission user: stderr %q", stderr)
	}
	stderr = syncerGen(t, true, "Not_A_Name", "-o", "-", "--kubeconfig", upstream.Kubeconfig)
	if !strings.Contains(stderr, "not a valid name") || !strings.Contains(stderr, "--syncer-image is required") {
		t.Errorf("bad arguments: stderr %q", stderr)
	}
}

// TestUninstall: the steps of docs/install.md "Removing the syncer from a site", with the real
// kubectl. Deleting the manifest stops the syncer and leaves what it wrote at the edge running; the
// identity upstream goes by its label (and its token stops working); then the objects it wrote go by
// theirs.
func TestUninstall(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("app")
	f.create(f.up, gvrConfigMaps, configMap(ns, "settings", map[string]interface{}{"k": "v"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	id, _, d := bootstrapPod(t, f, f.name, bootstrap.RBACBroad)
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", hasMark)
	token := bootstrapToken(t, f, id)

	// 2. The syncer at the edge; what it wrote stays.
	kubectl(t, env.Downstream.Kubeconfig, "delete", "-f", d.manifest, "--ignore-not-found", "--wait=true")
	if _, err := f.down.kube.AppsV1().Deployments(id).Get(f.ctx, id, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the syncer's Deployment after kubectl delete -f: %v", err)
	}
	if out := strings.TrimSpace(kubectl(t, env.Downstream.Kubeconfig, "get", "clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding",
		"-l", "edge.kubestellar.io/syncer="+id, "-o", "name")); out != "" {
		t.Errorf("left at the edge: %s", out)
	}
	if _, err := f.get(f.down, gvrNamespaces, "", ns); err != nil {
		t.Errorf("the namespace it wrote is gone with the syncer: %v", err)
	}
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", hasMark)

	// 3. Its identity upstream.
	kubectl(t, upstream.Kubeconfig, "delete", "serviceaccount,secret,role,rolebinding", "-n", "default", "-l", "edge.kubestellar.io/syncer="+id)
	kubectl(t, upstream.Kubeconfig, "delete", "clusterrole,clusterrolebinding", "-l", "edge.kubestellar.io/syncer="+id)
	for _, kind := range []string{"serviceaccount,secret,role,rolebinding", "clusterrole,clusterrolebinding"} {
		if out := strings.TrimSpace(kubectl(t, upstream.Kubeconfig, "get", kind, "-A", "-l", "edge.kubestellar.io/syncer="+id, "-o", "name")); out != "" {
			t.Errorf("left upstream: %s", out)
		}
	}
	old := kubernetes.NewForConfigOrDie(upstream.TokenConfig(token.Value))
	eventually(t, 30*time.Second, "the upstream refuses the removed identity's token", func() (bool, string) {
		_, err := old.CoreV1().ConfigMaps(ns).List(f.ctx, metav1.ListOptions{})
		return apierrors.IsUnauthorized(err), fmt.Sprintf("%v", err)
	})

	// 1. The objects it wrote, by their label: the namespaced ones, then the cluster-scoped ones but
	// namespaces and CRDs; an object made at the edge in a namespace it wrote stays until the
	// namespace goes, which is a deliberate last step.
	f.create(f.down, gvrConfigMaps, configMap(ns, "made-at-the-edge", map[string]interface{}{"k": "v"}))
	label := mapping.OwnerLabel + "=" + mapping.OwnerLabelValue(f.name)
	for _, scope := range []string{"--namespaced=true", "--namespaced=false"} {
		out, err := exec.Command(filepath.Join(os.Getenv("E2E_BIN"), "kubectl"), "--kubeconfig", env.Downstream.Kubeconfig,
			"api-resources", "--verbs=list,delete", scope, "-o", "name").Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range strings.Fields(string(out)) {
			args := []string{"delete", r, "-l", label, "--ignore-not-found", "--wait=false"}
			switch {
			case r == "namespaces" || r == "customresourcedefinitions.apiextensions.k8s.io":
				continue
			case scope == "--namespaced=true":
				args = append(args, "-A")
			}
			kubectl(t, env.Downstream.Kubeconfig, args...)
		}
	}
	f.waitGone(f.down, gvrConfigMaps, ns, "settings")
	if _, err := f.get(f.down, gvrConfigMaps, ns, "made-at-the-edge"); err != nil {
		t.Errorf("an object made at the edge, in a namespace the syncer wrote, before that namespace is deleted: %v", err)
	}
	kubectl(t, env.Downstream.Kubeconfig, "delete", "namespaces", "-l", label, "--wait=false")
	eventually(t, 60*time.Second, "the namespace it wrote going", func() (bool, string) {
		n, err := f.get(f.down, gvrNamespaces, "", ns)
		return apierrors.IsNotFound(err) || (err == nil && n.GetDeletionTimestamp() != nil), fmt.Sprintf("%v", err)
	})
}
