package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubestellar/syncer/pkg/bootstrap"
)

// helmCommand runs the real helm ($HELM_BIN, `make helm-bin`) against the edge cluster, with its own
// empty configuration and cache; it returns the combined output.
func helmCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := os.Getenv("HELM_BIN")
	if fi, err := os.Stat(bin); bin == "" || err != nil || fi.IsDir() {
		t.Fatalf("helm is missing (HELM_BIN=%q; `make helm-bin` builds it, `make test-e2e` sets it): %v", bin, err)
	}
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", env.Downstream.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func runHelm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmCommand(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// selfContainedKubeconfig writes the server's kubeconfig with every file it names inlined, as a
// kubeconfig in a Secret must be.
func selfContainedKubeconfig(t *testing.T, path string) (string, []byte) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		t.Fatal(err)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "upstream.kubeconfig")
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return out, data
}

// TestHelmChart: the chart's objects pass the edge apiserver's validation (server-side dry run, with
// the optional Service and PodDisruptionBudget on); `helm install` with an inline kubeconfig of the
// upstream under test makes them, labelled as the chart says; the ServiceAccount may do what the
// syncer needs, and a syncer run with the Deployment's own arguments, the installed kubeconfig Secret
// and that ServiceAccount's token syncs and leads; `helm uninstall` removes every object. Only the
// edge is installed to, so it runs the same against either upstream.
func TestHelmChart(t *testing.T) {
	f := newFixture(t)
	chart := filepath.Join(repoRoot, "charts", "kubestellar-syncer")
	release, edgeNS := f.name, f.name+"-edge"
	fullname := release + "-kubestellar-syncer"
	clusterRole := edgeNS + ":" + fullname
	upKubeconfigFile, upKubeconfig := selfContainedKubeconfig(t, upstream.Kubeconfig)
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = helmCommand(t, "uninstall", release, "--namespace", edgeNS)
		_ = f.down.kube.RbacV1().ClusterRoles().Delete(ctx, clusterRole, metav1.DeleteOptions{})
		_ = f.down.kube.RbacV1().ClusterRoleBindings().Delete(ctx, clusterRole, metav1.DeleteOptions{})
		_ = f.down.kube.CoreV1().Namespaces().Delete(ctx, edgeNS, metav1.DeleteOptions{})
	})
	kubectl(t, env.Downstream.Kubeconfig, "create", "namespace", edgeNS)
	imageRepo, imageTag, _ := strings.Cut(syncerImage(t), ":")
	values := []string{"--namespace", edgeNS, "--set", "syncTarget.name=" + f.name, "--set", "syncTarget.uid=uid-" + f.name,
		"--set", "image.repository=" + imageRepo, "--set", "image.tag=" + imageTag, "--set-file", "upstream.kubeconfig=" + upKubeconfigFile,
		"--set", "syncerConfigSelector=" + testLabel + "=" + f.name}

	// The edge apiserver accepts every object (strict field validation), by default and with the
	// optional Service and PodDisruptionBudget. (ServiceMonitor and PodMonitor need the Prometheus
	// Operator's CRDs, which this edge does not have.)
	for _, extra := range [][]string{nil, {"--set", "replicas=2", "--set", "metrics.service.enabled=true", "--set", "podDisruptionBudget.enabled=true"}} {
		rendered := runHelm(t, append(append([]string{"template", release, chart}, values...), extra...)...)
		file := filepath.Join(t.TempDir(), "rendered.yaml")
		if err := os.WriteFile(file, []byte(rendered), 0o600); err != nil {
			t.Fatal(err)
		}
		out := kubectl(t, env.Downstream.Kubeconfig, "apply", "--dry-run=server", "--validate=strict", "-f", file)
		if n := strings.Count(out, "(server dry run)"); n < 9 {
			t.Errorf("server dry run of %v applied %d objects:\n%s", extra, n, out)
		}
	}

	runHelm(t, append([]string{"install", release, chart}, values...)...)

	// Every object the chart makes, found by the release's labels.
	instance := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/name=kubestellar-syncer," +
		"app.kubernetes.io/managed-by=Helm,app.kubernetes.io/part-of=kubestellar,app.kubernetes.io/component=syncer,app.kubernetes.io/version"}
	want := map[string][]string{
		"deployments":         {edgeNS + "/" + fullname},
		"serviceaccounts":     {edgeNS + "/" + fullname, edgeNS + "/" + fullname + bootstrap.ExecutorSuffix},
		"secrets":             {edgeNS + "/" + fullname + "-kubeconfig", edgeNS + "/" + fullname + bootstrap.UpstreamTokenSuffix},
		"clusterroles":        {"/" + clusterRole, "/" + clusterRole + bootstrap.ExecutorSuffix, "/" + clusterRole + bootstrap.MetricsReaderSuffix},
		"clusterrolebindings": {"/" + clusterRole, "/" + clusterRole + "-auth-delegator", "/" + clusterRole + bootstrap.ExecutorSuffix},
		"roles": {edgeNS + "/" + fullname + bootstrap.ExecutorSuffix, edgeNS + "/" + fullname + "-leader-election",
			edgeNS + "/" + fullname + bootstrap.ReleaseSuffix, edgeNS + "/" + fullname + bootstrap.UpstreamTokenSuffix},
		"rolebindings": {edgeNS + "/" + fullname + bootstrap.ExecutorSuffix, edgeNS + "/" + fullname + "-leader-election",
			edgeNS + "/" + fullname + bootstrap.ReleaseSuffix, edgeNS + "/" + fullname + bootstrap.UpstreamTokenSuffix},
		"validatingadmissionpolicies":       {"/" + edgeNS + "." + fullname + bootstrap.FenceSuffix},
		"validatingadmissionpolicybindings": {"/" + edgeNS + "." + fullname + bootstrap.FenceSuffix},
	}
	gvrs := map[string]schema.GroupVersionResource{
		"validatingadmissionpolicies": gvrVAPs, "validatingadmissionpolicybindings": gvrVAPBindings,
		"deployments": gvrDeployments, "serviceaccounts": {Version: "v1", Resource: "serviceaccounts"}, "secrets": {Version: "v1", Resource: "secrets"},
		"clusterroles": gvrClusterRoles, "clusterrolebindings": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		"roles": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, "rolebindings": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	}
	listed := func(res string) []string {
		list, err := f.down.dyn.Resource(gvrs[res]).List(f.ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range list.Items {
			names = append(names, o.GetNamespace()+"/"+o.GetName())
		}
		sort.Strings(names)
		return names
	}
	for res, names := range want {
		if got := listed(res); strings.Join(got, " ") != strings.Join(names, " ") {
			t.Errorf("%s labelled as release %s: %v, want %v", res, release, got, names)
		}
	}

	// The kubeconfig Secret holds the inline kubeconfig, which reaches the upstream under test.
	secret, err := f.down.kube.CoreV1().Secrets(edgeNS).Get(f.ctx, fullname+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(secret.Data["kubeconfig"], upKubeconfig) {
		t.Fatal("the kubeconfig Secret does not hold the inline kubeconfig")
	}
	upCfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamic.NewForConfigOrDie(upCfg).Resource(gvrSyncerConfig).List(f.ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing SyncerConfigs upstream (%s) with the installed kubeconfig: %v", upstream.Name, err)
	}
	// The ServiceAccount may read what the syncer reads and act as its executor, which may write what
	// the syncer writes (and another one in the namespace may not: the check discriminates).
	sa := "system:serviceaccount:" + edgeNS + ":" + fullname
	executor := sa + bootstrap.ExecutorSuffix
	for _, c := range []struct {
		as   string
		args []string
		want string
	}{
		{sa, []string{"list", "configmaps", "--all-namespaces"}, "yes"},
		{sa, []string{"create", "deployments.apps", "-n", "some-app"}, "no"},
		{sa, []string{"impersonate", "serviceaccounts/" + fullname + bootstrap.ExecutorSuffix, "-n", edgeNS}, "yes"},
		{executor, []string{"create", "deployments.apps", "-n", "some-app"}, "yes"},
		{executor, []string{"delete", "namespaces"}, "yes"},
		{executor, []string{"bind", "clusterroles"}, "no"},
		{sa, []string{"watch", "customresourcedefinitions.apiextensions.k8s.io"}, "yes"},
		{sa, []string{"update", "leases.coordination.k8s.io", "-n", edgeNS}, "yes"},
		{"system:serviceaccount:" + edgeNS + ":default", []string{"list", "configmaps", "--all-namespaces"}, "no"},
	} {
		// The answer is the last line (exit status 1 for no); a warning may come first.
		out, _ := kubectlCommand(f.ctx, env.Downstream.Kubeconfig, append([]string{"auth", "can-i", "--as=" + c.as}, c.args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := lines[len(lines)-1]; got != c.want {
			t.Errorf("kubectl auth can-i --as=%s %v: %q, want %q", c.as, c.args, got, c.want)
		}
	}

	// The chart's Deployment runs the syncer from its image, with the installed kubeconfig Secret as the
	// upstream and the chart's ServiceAccount at the edge (in-cluster config): it syncs, leads, and
	// meets no permission error.
	ns := f.namespace("app")
	f.create(f.up, gvrConfigMaps, configMap(ns, "settings", map[string]interface{}{"k": "v"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	d := &syncerDeployment{f: f, namespace: edgeNS, name: fullname, lease: "kubestellar-syncer-" + f.name,
		metricsReader: clusterRole + bootstrap.MetricsReaderSuffix}
	d.waitAvailable(2 * time.Minute)
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", hasMark)
	d.expectServing()

	// Uninstalling removes every object the chart made.
	runHelm(t, "uninstall", release, "--namespace", edgeNS, "--wait")
	for res, names := range want {
		for _, name := range names {
			nsName := strings.SplitN(name, "/", 2)
			f.waitGone(f.down, gvrs[res], nsName[0], nsName[1])
		}
	}
	if out, err := helmCommand(t, "status", release, "--namespace", edgeNS); err == nil {
		t.Errorf("helm status after uninstall succeeded:\n%s", out)
	}
	if _, err := f.down.kube.CoreV1().Namespaces().Get(f.ctx, edgeNS, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Error("uninstall removed the namespace, which the chart does not own")
	}
}
