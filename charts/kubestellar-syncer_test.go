package charts

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kubestellar/syncer/test/support"

	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/syncer/cmd/syncer/options"
	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

const (
	chartDir  = "kubestellar-syncer"
	release   = "florin"
	namespace = "edge-florin"
	// fullname is <release>-<chart name>, the name of the release's objects.
	fullname = "florin-kubestellar-syncer"
	stName   = "florin"
	stUID    = "3f1c0d2e-uid"
)

// syncerGen is what `kubectl kubestellar syncer-gen` chooses by default: the chart's defaults must
// be the same.
var syncerGen = bootstrap.DefaultOptions()

// helmBin is $HELM_BIN; the test is skipped without it.
func helmBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HELM_BIN")
	if bin == "" {
		support.Skip(t, "HELM_BIN is not set: the chart tests run the real helm (`make helm-bin` builds it; `make test-unit` sets HELM_BIN)")
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		t.Fatalf("HELM_BIN=%q is not a file: %v", bin, err)
	}
	return bin
}

// helm runs helm with its own empty configuration and cache: it returns stdout, and an error
// holding stderr.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := helmBin(t)
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"), "KUBECONFIG="+filepath.Join(home, "no-kubeconfig"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}

// requiredValues are the values without a default: the sync target and the upstream kubeconfig.
func requiredValues() []string {
	return []string{"--set", "syncTarget.name=" + stName, "--set", "syncTarget.uid=" + stUID, "--set", "upstream.existingSecret=florin-mailbox"}
}

// render is `helm template` of the chart as release florin in namespace edge-florin.
func render(t *testing.T, values ...string) *manifest {
	t.Helper()
	out, err := helm(t, append([]string{"template", release, chartDir, "--namespace", namespace}, values...)...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseManifest(out)
	if err != nil {
		t.Fatalf("parsing helm template's output: %v\n%s", err, out)
	}
	return m
}

// manifest is the rendered objects, each also decoded strictly into its typed form as the apiserver
// decodes it (case-sensitive field names; unknown or duplicate fields are errors).
type manifest struct {
	objs  []*unstructured.Unstructured
	typed map[string]runtime.Object // by kind/namespace/name
}

func key(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func parseManifest(out string) (*manifest, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, policyv1.AddToScheme, admissionregistrationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	strict := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
	want := map[string]bool{"ServiceAccount": true, "Secret": true, "ConfigMap": true, "Service": true, "ClusterRole": true, "ClusterRoleBinding": true,
		"Role": true, "RoleBinding": true, "Deployment": true, "PodDisruptionBudget": true,
		"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}
	m := &manifest{typed: map[string]runtime.Object{}}
	for _, doc := range strings.Split(out, "\n---") {
		u := &unstructured.Unstructured{}
		if err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096).Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				continue
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		switch kind := u.GetKind(); {
		case want[kind]:
			typed, _, err := strict.Decode([]byte(doc), nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", kind, u.GetName(), err)
			}
			m.typed[key(kind, u.GetNamespace(), u.GetName())] = typed
		case kind == "ServiceMonitor" || kind == "PodMonitor": // no Go types here: checked as unstructured
		default:
			return nil, fmt.Errorf("unexpected kind %s", kind)
		}
		m.objs = append(m.objs, u)
	}
	return m, nil
}

// kinds lists "Kind namespace/name", sorted.
func (m *manifest) kinds() []string {
	var out []string
	for _, o := range m.objs {
		out = append(out, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	sort.Strings(out)
	return out
}

func (m *manifest) get(t *testing.T, kind, ns, name string) runtime.Object {
	t.Helper()
	o, ok := m.typed[key(kind, ns, name)]
	if !ok {
		t.Fatalf("no %s %s/%s in %v", kind, ns, name, m.kinds())
	}
	return o
}

func (m *manifest) unstructured(t *testing.T, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range m.objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s/%s in %v", kind, ns, name, m.kinds())
	return nil
}

func (m *manifest) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	return m.get(t, "Deployment", namespace, fullname).(*appsv1.Deployment)
}

// appVersion is the chart's appVersion: the default image tag and the version label.
func appVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
		Version    string `json:"version"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.AppVersion == "" {
		t.Fatal("Chart.yaml has no appVersion")
	}
	return chart.AppVersion
}

// parseSyncerArgs parses args with the syncer's own flag set, completes them as in a pod of
// namespace podNS and validates them: what the syncer does at start.
func parseSyncerArgs(t *testing.T, args []string, podNS string) *options.Options {
	t.Helper()
	o := options.NewOptions()
	fs := pflag.NewFlagSet("syncer", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the syncer rejects the args %q: %v", args, err)
	}
	if fs.NArg() > 0 {
		t.Errorf("the args have positional arguments %q, which the syncer ignores", fs.Args())
	}
	fs.Visit(func(f *pflag.Flag) {
		if f.Deprecated != "" {
			t.Errorf("the args use the deprecated syncer flag --%s (%s)", f.Name, f.Deprecated)
		}
	})
	t.Setenv("POD_NAMESPACE", podNS)
	t.Setenv("POD_UID", "0b1c") // the downward API's, checked by checkCommon
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("the syncer's validation rejects the args %q: %v", args, err)
	}
	return o
}

// checkCommon checks what holds for every value set: the recommended labels on every object, the
// namespaces, the Deployment's args as the syncer parses them, its mounts, ports, probes and
// security context, and that the RBAC binds the ServiceAccount the pods run as. version is the
// expected app.kubernetes.io/version. It returns the parsed args.
func checkCommon(t *testing.T, m *manifest, version string) *options.Options {
	t.Helper()
	wantLabels := map[string]string{
		"app.kubernetes.io/name":       "kubestellar-syncer",
		"app.kubernetes.io/instance":   release,
		"app.kubernetes.io/version":    version,
		"app.kubernetes.io/component":  "syncer",
		"app.kubernetes.io/part-of":    "kubestellar",
		"app.kubernetes.io/managed-by": "Helm",
	}
	for _, o := range m.objs {
		got := o.GetLabels()
		for k, v := range wantLabels {
			if got[k] != v {
				t.Errorf("%s %s: label %s = %q, want %q", o.GetKind(), o.GetName(), k, got[k], v)
			}
		}
		if !strings.HasPrefix(got["helm.sh/chart"], "kubestellar-syncer-") {
			t.Errorf("%s %s: label helm.sh/chart = %q", o.GetKind(), o.GetName(), got["helm.sh/chart"])
		}
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			if o.GetNamespace() != "" {
				t.Errorf("%s %s has a namespace", o.GetKind(), o.GetName())
			}
		case "Role", "RoleBinding": // in the Lease's namespace
		default:
			if o.GetNamespace() != namespace {
				t.Errorf("%s %s: namespace %q, want the release's %q", o.GetKind(), o.GetName(), o.GetNamespace(), namespace)
			}
		}
	}

	dep := m.deployment(t)
	pod := dep.Spec.Template
	if dep.Spec.Selector == nil || len(dep.Spec.Selector.MatchLabels) == 0 || len(dep.Spec.Selector.MatchExpressions) != 0 {
		t.Fatalf("the Deployment's selector %+v: want labels", dep.Spec.Selector)
	}
	if sel := labels.SelectorFromSet(dep.Spec.Selector.MatchLabels); !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("the Deployment's selector %v does not match its pod labels %v", sel, pod.Labels)
	}
	for k, v := range wantLabels {
		if pod.Labels[k] != v {
			t.Errorf("pod label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if len(c.Command) != 0 {
		t.Errorf("the container overrides the image's entrypoint with %q", c.Command)
	}
	o := parseSyncerArgs(t, c.Args, namespace)
	if o.SyncTargetName != stName || o.SyncTargetUID != stUID {
		t.Errorf("sync target %q %q, want %q %q", o.SyncTargetName, o.SyncTargetUID, stName, stUID)
	}

	// The kubeconfig: the arg names the file the Secret's key is mounted as, read-only.
	if len(c.VolumeMounts) != 1 || len(pod.Spec.Volumes) != 1 || c.VolumeMounts[0].Name != pod.Spec.Volumes[0].Name {
		t.Fatalf("mounts %+v volumes %+v", c.VolumeMounts, pod.Spec.Volumes)
	}
	mount, vol := c.VolumeMounts[0], pod.Spec.Volumes[0]
	if vol.Secret == nil || len(vol.Secret.Items) != 1 || !mount.ReadOnly ||
		filepath.Join(mount.MountPath, vol.Secret.Items[0].Path) != o.FromKubeconfig || o.FromKubeconfig != bootstrap.KubeconfigMount+bootstrap.KubeconfigKey {
		t.Errorf("--upstream-kubeconfig=%s is not the mounted Secret key: mount %+v, volume %+v", o.FromKubeconfig, mount, vol)
	}

	// Ports, probes and the bind addresses agree.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if o.MetricsBindAddress != fmt.Sprintf(":%d", ports["metrics"]) || o.HealthProbeBindAddress != fmt.Sprintf(":%d", ports["health"]) {
		t.Errorf("bind addresses %s %s, container ports %v", o.MetricsBindAddress, o.HealthProbeBindAddress, ports)
	}
	for _, p := range []struct {
		probe *corev1.Probe
		path  string
	}{{c.LivenessProbe, "/healthz"}, {c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "health" {
			t.Errorf("probe on %s: %+v", p.path, p.probe)
		}
	}
	if len(c.Env) != 2 || c.Env[0].Name != "POD_NAMESPACE" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" ||
		c.Env[1].Name != "POD_UID" || c.Env[1].ValueFrom == nil || c.Env[1].ValueFrom.FieldRef.FieldPath != "metadata.uid" {
		t.Errorf("env %+v: want POD_NAMESPACE and POD_UID from the downward API", c.Env)
	}

	// Restricted: non-root as the image's user, RuntimeDefault seccomp, read-only root filesystem,
	// no privilege escalation, every capability dropped.
	psc, sc := pod.Spec.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil {
		t.Fatalf("security contexts %+v %+v", psc, sc)
	}
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 || psc.RunAsGroup == nil || *psc.RunAsGroup != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context not restricted: %+v", psc)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Privileged == nil || *sc.Privileged || sc.Capabilities == nil || !cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container security context not restricted: %+v", sc)
	}

	// The ServiceAccount the pods run as is the one created and bound.
	saName := pod.Spec.ServiceAccountName
	m.get(t, "ServiceAccount", namespace, saName)
	crb := m.get(t, "ClusterRoleBinding", "", namespace+":"+fullname).(*rbacv1.ClusterRoleBinding)
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: saName, Namespace: namespace}}
	if !cmp.Equal(crb.Subjects, wantSubjects) || crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != crb.Name {
		t.Errorf("ClusterRoleBinding %+v", crb)
	}
	m.get(t, "ClusterRole", "", crb.RoleRef.Name)
	if o.LeaderElect {
		rb := m.get(t, "RoleBinding", o.LeaderElectResourceNamespace, fullname+"-leader-election").(*rbacv1.RoleBinding)
		if !cmp.Equal(rb.Subjects, wantSubjects) || rb.RoleRef.Kind != "Role" {
			t.Errorf("leader election RoleBinding %+v", rb)
		}
		role := m.get(t, "Role", o.LeaderElectResourceNamespace, rb.RoleRef.Name).(*rbacv1.Role)
		if !allows(role.Rules, "coordination.k8s.io", "leases", "get", "create", "update") {
			t.Errorf("the Lease Role does not allow get, create and update on leases: %+v", role.Rules)
		}
	} else {
		for _, o := range m.objs {
			if (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && strings.HasSuffix(o.GetName(), "-leader-election") {
				t.Errorf("%s %s/%s without leader election", o.GetKind(), o.GetNamespace(), o.GetName())
			}
		}
	}
	return o
}

// allows tells whether the rules grant every verb on the resource.
func allows(rules []rbacv1.PolicyRule, group, resource string, verbs ...string) bool {
	for _, verb := range verbs {
		ok := false
		for _, r := range rules {
			if (contains(r.APIGroups, group) || contains(r.APIGroups, "*")) && (contains(r.Resources, resource) || contains(r.Resources, "*")) &&
				(contains(r.Verbs, verb) || contains(r.Verbs, "*")) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestChartLint: `helm lint --strict` passes with the required values, alone and with every optional
// object on.
func TestChartLint(t *testing.T) {
	for _, values := range [][]string{
		requiredValues(),
		append(requiredValues(), "--set", "replicas=2", "--set", "metrics.service.enabled=true", "--set", "metrics.serviceMonitor.enabled=true",
			"--set", "metrics.podMonitor.enabled=true", "--set", "podDisruptionBudget.enabled=true"),
	} {
		if out, err := helm(t, append([]string{"lint", chartDir, "--strict", "--namespace", namespace}, values...)...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// TestChartValueSets renders the chart with several value sets and checks each.
func TestChartValueSets(t *testing.T) {
	helmBin(t)
	inline := filepath.Join(t.TempDir(), "upstream.kubeconfig")
	kubeconfig, err := syncerGenEdge().Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inline, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--set", "syncTarget.name=" + stName, "--set", "syncTarget.uid=" + stUID}
	for _, c := range []struct {
		name    string
		values  []string
		version string // the app.kubernetes.io/version label; empty: the appVersion
		check   func(t *testing.T, m *manifest, o *options.Options)
	}{{
		name:   "defaults",
		values: requiredValues(),
		check: func(t *testing.T, m *manifest, o *options.Options) {
			want := []string{
				"ClusterRole /edge-florin:" + fullname, "ClusterRole /edge-florin:" + fullname + bootstrap.ExecutorSuffix,
				"ClusterRole /edge-florin:" + fullname + "-metrics-reader",
				"ClusterRoleBinding /edge-florin:" + fullname, "ClusterRoleBinding /edge-florin:" + fullname + "-auth-delegator",
				"ClusterRoleBinding /edge-florin:" + fullname + bootstrap.ExecutorSuffix,
				"ConfigMap edge-florin/" + fullname + bootstrap.ReleaseSuffix,
				"Deployment edge-florin/" + fullname, "Role edge-florin/" + fullname + bootstrap.ExecutorSuffix,
				"Role edge-florin/" + fullname + "-leader-election", "Role edge-florin/" + fullname + bootstrap.ReleaseSuffix,
				"Role edge-florin/" + fullname + bootstrap.UpstreamTokenSuffix,
				"RoleBinding edge-florin/" + fullname + bootstrap.ExecutorSuffix, "RoleBinding edge-florin/" + fullname + "-leader-election",
				"RoleBinding edge-florin/" + fullname + bootstrap.ReleaseSuffix, "RoleBinding edge-florin/" + fullname + bootstrap.UpstreamTokenSuffix,
				"Secret edge-florin/" + fullname + bootstrap.UpstreamTokenSuffix,
				"ServiceAccount edge-florin/" + fullname, "ServiceAccount edge-florin/" + fullname + bootstrap.ExecutorSuffix,
				"ValidatingAdmissionPolicy /edge-florin." + fullname + bootstrap.FenceSuffix,
				"ValidatingAdmissionPolicyBinding /edge-florin." + fullname + bootstrap.FenceSuffix,
			}
			if diff := cmp.Diff(want, m.kinds()); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			dep := m.deployment(t)
			if *dep.Spec.Replicas != syncerGen.Replicas || o.QPS != syncerGen.QPS || o.Burst != syncerGen.Burst || o.Logs.Verbosity != logsapi.VerbosityLevel(syncerGen.Verbosity) {
				t.Errorf("replicas %d qps %v burst %d: want syncer-gen's defaults", *dep.Spec.Replicas, o.QPS, o.Burst)
			}
			if !o.LeaderElect || o.LeaderElectResourceNamespace != namespace || o.LeaderElectResourceName != "kubestellar-syncer-"+stName {
				t.Errorf("leader election %v %s/%s", o.LeaderElect, o.LeaderElectResourceNamespace, o.LeaderElectResourceName)
			}
			if img := dep.Spec.Template.Spec.Containers[0].Image; img != "kubestellar-syncer:"+appVersion(t) {
				t.Errorf("image %s: want the appVersion as the tag", img)
			}
			vol := dep.Spec.Template.Spec.Volumes[0].Secret
			if vol.SecretName != "florin-mailbox" || vol.Items[0].Key != "kubeconfig" {
				t.Errorf("kubeconfig volume %+v", vol)
			}
			own, executor := bootstrap.FencedRules(bootstrap.RBACBroad, nil)
			cr := m.get(t, "ClusterRole", "", namespace+":"+fullname).(*rbacv1.ClusterRole)
			if diff := cmp.Diff(own, cr.Rules); diff != "" {
				t.Errorf("ClusterRole rules are not syncer-gen's fenced --rbac=broad (-want +got):\n%s", diff)
			}
			cr = m.get(t, "ClusterRole", "", namespace+":"+fullname+bootstrap.ExecutorSuffix).(*rbacv1.ClusterRole)
			if diff := cmp.Diff(executor, cr.Rules); diff != "" {
				t.Errorf("executor ClusterRole rules are not syncer-gen's fenced --rbac=broad (-want +got):\n%s", diff)
			}
			if o.Executor != namespace+"/"+fullname+bootstrap.ExecutorSuffix {
				t.Errorf("--executor=%s", o.Executor)
			}
		},
	}, {
		name:   "existing secret with its own key",
		values: append(base, "--set", "upstream.existingSecret=mailbox-creds", "--set", "upstream.existingSecretKey=config", "--set", "upstream.context=mb"),
		check: func(t *testing.T, m *manifest, o *options.Options) {
			dep := m.deployment(t)
			vol := dep.Spec.Template.Spec.Volumes[0].Secret
			if vol.SecretName != "mailbox-creds" || vol.Items[0].Key != "config" || vol.Items[0].Path != "kubeconfig" {
				t.Errorf("kubeconfig volume %+v", vol)
			}
			if o.FromContext != "mb" {
				t.Errorf("--upstream-context %q", o.FromContext)
			}
			for _, obj := range m.objs {
				if obj.GetKind() == "Secret" && obj.GetName() != fullname+"-token" && obj.GetName() != fullname+bootstrap.UpstreamTokenSuffix {
					t.Errorf("a Secret %s made with an existing Secret", obj.GetName())
				}
			}
			if _, ok := dep.Spec.Template.Annotations["checksum/kubeconfig"]; ok {
				t.Error("a kubeconfig checksum without an inline kubeconfig")
			}
		},
	}, {
		name:   "inline kubeconfig",
		values: append(base, "--set-file", "upstream.kubeconfig="+inline),
		check: func(t *testing.T, m *manifest, o *options.Options) {
			s := m.get(t, "Secret", namespace, fullname+"-kubeconfig").(*corev1.Secret)
			if !bytes.Equal(s.Data["kubeconfig"], kubeconfig) || s.Type != corev1.SecretTypeOpaque {
				t.Errorf("kubeconfig Secret %s: data %q", s.Type, s.Data["kubeconfig"])
			}
			dep := m.deployment(t)
			vol := dep.Spec.Template.Spec.Volumes[0].Secret
			if vol.SecretName != s.Name || vol.Items[0].Key != "kubeconfig" {
				t.Errorf("kubeconfig volume %+v", vol)
			}
			if dep.Spec.Template.Annotations["checksum/kubeconfig"] == "" {
				t.Error("no checksum/kubeconfig annotation: a new kubeconfig would not roll the pods")
			}
		},
	}, {
		name: "metrics Service, ServiceMonitor, PodMonitor and PDB",
		values: append(requiredValues(), "--set", "replicas=2", "--set", "metrics.port=9090", "--set", "metrics.service.enabled=true",
			"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.serviceMonitor.labels.release=prom",
			"--set", "metrics.podMonitor.enabled=true", "--set", "metrics.podMonitor.bearerTokenSecret.name=scraper",
			"--set", "metrics.podMonitor.bearerTokenSecret.key=token", "--set", "podDisruptionBudget.enabled=true"),
		check: func(t *testing.T, m *manifest, o *options.Options) {
			dep := m.deployment(t)
			podLabels := labels.Set(dep.Spec.Template.Labels)
			if o.MetricsBindAddress != ":9090" || dep.Spec.Template.Annotations["prometheus.io/port"] != "9090" {
				t.Errorf("metrics address %s, annotations %v", o.MetricsBindAddress, dep.Spec.Template.Annotations)
			}
			svc := m.get(t, "Service", namespace, fullname+"-metrics").(*corev1.Service)
			if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) || len(svc.Spec.Ports) != 1 ||
				svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
				t.Errorf("metrics Service %+v does not reach the pods' metrics port", svc.Spec)
			}
			sm := m.unstructured(t, "ServiceMonitor", namespace, fullname)
			pm := m.unstructured(t, "PodMonitor", namespace, fullname)
			for _, mon := range []struct {
				obj       *unstructured.Unstructured
				endpoints string
				target    labels.Set
			}{{sm, "endpoints", labels.Set(svc.Labels)}, {pm, "podMetricsEndpoints", podLabels}} {
				if mon.obj.GetAPIVersion() != "monitoring.coreos.com/v1" {
					t.Errorf("%s apiVersion %s", mon.obj.GetKind(), mon.obj.GetAPIVersion())
				}
				match, _, _ := unstructured.NestedStringMap(mon.obj.Object, "spec", "selector", "matchLabels")
				if len(match) == 0 || !labels.SelectorFromSet(match).Matches(mon.target) {
					t.Errorf("%s selects %v, not its target %v", mon.obj.GetKind(), match, mon.target)
				}
				nss, _, _ := unstructured.NestedStringSlice(mon.obj.Object, "spec", "namespaceSelector", "matchNames")
				eps, _, _ := unstructured.NestedSlice(mon.obj.Object, "spec", mon.endpoints)
				if !cmp.Equal(nss, []string{namespace}) || len(eps) != 1 {
					t.Fatalf("%s namespaces %v endpoints %v", mon.obj.GetKind(), nss, eps)
				}
				ep := eps[0].(map[string]interface{})
				relabel, _ := ep["relabelings"].([]interface{})
				if ep["port"] != "metrics" || ep["path"] != "/metrics" || len(relabel) != 1 ||
					relabel[0].(map[string]interface{})["targetLabel"] != "job" || relabel[0].(map[string]interface{})["replacement"] != "kubestellar-syncer" {
					t.Errorf("%s endpoint %v: want port metrics, path /metrics, job kubestellar-syncer (the alerting rules' job)", mon.obj.GetKind(), ep)
				}
				// --metrics-secure: HTTPS and a bearer token (the Prometheus's own, or the named Secret's).
				token := ep["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
				if ref, _ := ep["bearerTokenSecret"].(map[string]interface{}); ref["name"] == "scraper" && ref["key"] == "token" {
					token = true
				}
				if skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify"); ep["scheme"] != "https" || !token || !skip || !o.MetricsSecure {
					t.Errorf("%s endpoint %v, syncer secure %v: want https with a bearer token", mon.obj.GetKind(), ep, o.MetricsSecure)
				}
			}
			if sm.GetLabels()["release"] != "prom" {
				t.Errorf("ServiceMonitor labels %v: want the extra label", sm.GetLabels())
			}
			pdb := m.get(t, "PodDisruptionBudget", namespace, fullname).(*policyv1.PodDisruptionBudget)
			if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.MaxUnavailable != nil ||
				!labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(podLabels) {
				t.Errorf("PDB %+v", pdb.Spec)
			}
			if *dep.Spec.Replicas != 2 || !o.LeaderElect {
				t.Errorf("replicas %d, leader election %v", *dep.Spec.Replicas, o.LeaderElect)
			}
		},
	}, {
		name:   "leader election off",
		values: append(requiredValues(), "--set", "leaderElection.enabled=false"),
		check: func(t *testing.T, m *manifest, o *options.Options) {
			if o.LeaderElect {
				t.Error("--leader-elect with leader election off")
			}
			for _, a := range m.deployment(t).Spec.Template.Spec.Containers[0].Args {
				if strings.HasPrefix(a, "--leader-elect") {
					t.Errorf("arg %s with leader election off", a)
				}
			}
		},
	}, {
		name:   "fence off",
		values: append(requiredValues(), "--set", "fence.enabled=false"),
		check: func(t *testing.T, m *manifest, o *options.Options) {
			for _, k := range m.kinds() {
				if strings.Contains(k, bootstrap.ExecutorSuffix) || strings.Contains(k, bootstrap.FenceSuffix) {
					t.Errorf("%s with the fence off", k)
				}
			}
			if o.Executor != "" {
				t.Errorf("--executor=%s with the fence off", o.Executor)
			}
			// The syncer writes as itself: its ClusterRole holds what the executor's would.
			own, executor := bootstrap.FencedRules(bootstrap.RBACBroad, nil)
			cr := m.get(t, "ClusterRole", "", namespace+":"+fullname).(*rbacv1.ClusterRole)
			if diff := cmp.Diff(append(own, executor...), cr.Rules); diff != "" {
				t.Errorf("ClusterRole rules (-want +got):\n%s", diff)
			}
		},
	}, {
		name:    "everything chosen",
		version: "v1.2.3_build.7", // the image tag made a label value
		values: append(requiredValues(), "--set", "replicas=3", "--set", "leaderElection.namespace=leases", "--set", "leaderElection.name=florin-lease",
			"--set", "qps=50.5", "--set", "burst=100000000", "--set", "verbosity=4", "--set", "extraArgs={--workers=32,--adopt-existing}",
			"--set", "image.repository=registry.example.com/ks/syncer", "--set", "image.tag=v1.2.3+build.7", "--set", "image.pullPolicy=Always",
			"--set", "imagePullSecrets[0].name=regcred", "--set", "priorityClassName=system-cluster-critical",
			"--set-string", "nodeSelector.edge=true", "--set", "tolerations[0].operator=Exists",
			"--set", "podAnnotations.team=edge", "--set", "podLabels.tier=control", "--set", "podLabels.app\\.kubernetes\\.io/name=hijack",
			"--set", "resources.limits.memory=2Gi", "--set", "probes.port=9091",
			"--set", "serviceAccount.tokenSecret=false", "--set", "upstream.renewToken=false",
			"--set-json", `rbac.rules=[{"apiGroups":[""],"resources":["configmaps","namespaces"],"verbs":["get","list","watch"]}]`),
		check: func(t *testing.T, m *manifest, o *options.Options) {
			dep := m.deployment(t)
			pod := dep.Spec.Template
			c := pod.Spec.Containers[0]
			if o.LeaderElectResourceNamespace != "leases" || o.LeaderElectResourceName != "florin-lease" || o.QPS != 50.5 ||
				o.Burst != 100000000 || o.Workers != 32 || !o.AdoptExisting || o.HealthProbeBindAddress != ":9091" {
				t.Errorf("parsed options %+v", o)
			}
			if !contains(c.Args, "-v=4") {
				t.Errorf("args %q: want -v=4", c.Args)
			}
			if o.UpstreamTokenSecret != "" {
				t.Errorf("--upstream-token-secret=%s with upstream.renewToken false", o.UpstreamTokenSecret)
			}
			if c.Image != "registry.example.com/ks/syncer:v1.2.3+build.7" || c.ImagePullPolicy != corev1.PullAlways {
				t.Errorf("image %s %s", c.Image, c.ImagePullPolicy)
			}
			if pod.Labels["tier"] != "control" || pod.Labels["app.kubernetes.io/name"] != "kubestellar-syncer" || pod.Annotations["team"] != "edge" ||
				pod.Annotations["prometheus.io/scrape"] != "true" {
				t.Errorf("pod labels %v annotations %v: want podLabels and podAnnotations added, the chart's labels kept", pod.Labels, pod.Annotations)
			}
			if pod.Spec.PriorityClassName != "system-cluster-critical" || pod.Spec.NodeSelector["edge"] != "true" || len(pod.Spec.Tolerations) != 1 ||
				len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "regcred" {
				t.Errorf("pod spec %+v", pod.Spec)
			}
			if c.Resources.Limits.Memory().String() != "2Gi" || c.Resources.Requests.Cpu().String() != "100m" {
				t.Errorf("resources %+v", c.Resources)
			}
			role := m.get(t, "Role", "leases", fullname+"-leader-election").(*rbacv1.Role)
			if role.Namespace != "leases" {
				t.Errorf("Lease Role in %s", role.Namespace)
			}
			cr := m.get(t, "ClusterRole", "", namespace+":"+fullname).(*rbacv1.ClusterRole)
			if !allows(cr.Rules, "", "configmaps", "get", "list", "watch") || allows(cr.Rules, "", "configmaps", "create") || allows(cr.Rules, "", "secrets", "get") {
				t.Errorf("rbac.rules not used: %+v", cr.Rules)
			}
			for _, obj := range m.objs {
				if obj.GetKind() == "Secret" {
					t.Errorf("Secret %s with serviceAccount.tokenSecret false and an existing kubeconfig Secret", obj.GetName())
				}
			}
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			m := render(t, c.values...)
			version := appVersion(t)
			if c.version != "" {
				version = c.version
			}
			o := checkCommon(t, m, version)
			c.check(t, m, o)
		})
	}
}

// TestChartRefuses: the values the chart cannot work with fail `helm template` with a message that
// names them.
func TestChartRefuses(t *testing.T) {
	helmBin(t)
	upstream := []string{"--set", "upstream.existingSecret=florin-mailbox"}
	for _, c := range []struct {
		name   string
		values []string
		want   string
	}{
		{"no sync target name", append([]string{"--set", "syncTarget.uid=" + stUID}, upstream...), "syncTarget.name is required"},
		{"no sync target uid", append([]string{"--set", "syncTarget.name=" + stName}, upstream...), "syncTarget.uid is required"},
		{"no values at all", nil, "is required"},
		{"no upstream kubeconfig", []string{"--set", "syncTarget.name=" + stName, "--set", "syncTarget.uid=" + stUID}, "the upstream kubeconfig is required"},
		{"two upstream kubeconfigs", append(requiredValues(), "--set", "upstream.kubeconfig=apiVersion: v1"), "give the upstream kubeconfig one way only"},
		{"replicas without leader election", append(requiredValues(), "--set", "replicas=2", "--set", "leaderElection.enabled=false"), "enable leader election or set replicas to 1"},
		{"ServiceMonitor without Service", append(requiredValues(), "--set", "metrics.serviceMonitor.enabled=true"), "metrics.serviceMonitor.enabled needs metrics.service.enabled"},
		{"PDB blocking every eviction", append(requiredValues(), "--set", "podDisruptionBudget.enabled=true"), "would block every voluntary eviction"},
		{"existing ServiceAccount without a name", append(requiredValues(), "--set", "serviceAccount.create=false"), "serviceAccount.name is required"},
		{"signatures without keys", append(requiredValues(), "--set", "signatures.policy=Enforce"), "signatures.policy Enforce needs signatures.publicKeys"},
		{"an unknown signature policy", append(requiredValues(), "--set", "signatures.policy=Lax"), `signatures.policy "Lax": want Off, Warn, Enforce or Strict`},
		{"a fence opt-in that is none", append(requiredValues(), "--set", "fence.allow={pods}"), `fence.allow: "pods" is not a fenced resource nor an opt-in`},
		{"a metrics certificate without secure metrics", append(requiredValues(), "--set", "metrics.secure=false", "--set", "metrics.certSecret=tls"), "metrics.certSecret needs metrics.secure"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"template", release, chartDir, "--namespace", namespace}, c.values...)...)
			if err == nil {
				t.Fatalf("helm template succeeded; want an error with %q:\n%s", c.want, out)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// syncerGenEdge is what syncer-gen renders for the same sync target with its defaults, named as the
// chart names the release's objects.
func syncerGenEdge() bootstrap.Edge {
	own, executor := bootstrap.FencedRules(bootstrap.RBACBroad, nil)
	return bootstrap.Edge{ID: fullname, Namespace: namespace, SyncTargetName: stName, SyncTargetUID: stUID, Image: "kubestellar-syncer:0.1.0",
		Replicas: syncerGen.Replicas, QPS: syncerGen.QPS, Burst: syncerGen.Burst, Verbosity: syncerGen.Verbosity,
		MaxObjectsPerResource: syncerGen.MaxObjectsPerResource,
		UpstreamServer:        "https://mailbox.example.com:6443", UpstreamCA: []byte("CA"), UpstreamToken: "token", UpstreamContext: "default",
		Rules: own, Fence: &bootstrap.Fence{ExecutorRules: executor, ProtectedNamespaces: nil}}
}

// TestChartMatchesSyncerGen: the chart installs what syncer-gen's manifest installs (but the
// Namespace, which Helm's --create-namespace makes): the same kinds, the same container (the args as
// the syncer parses them, image, ports, probes, env, resources, security contexts, mounts), the same
// volumes, rules and Secrets. Three ways: the chart's defaults with only the required values (its
// defaults are syncer-gen's), and the values syncer-gen writes with --helm-values (Edge.HelmValues),
// for its defaults and for chosen settings (a resource entry removed by a null among them).
func TestChartMatchesSyncerGen(t *testing.T) {
	helmBin(t)
	chosen := syncerGenEdge()
	chosen.Image, chosen.Replicas, chosen.QPS, chosen.Burst, chosen.Verbosity = "registry.example.com/ks/syncer:v2.0.1", 3, 50.5, 99, 4
	chosen.MaxObjectsPerResource = 0 // no limit
	chosen.Rules, chosen.Fence.ExecutorRules = bootstrap.FencedRules(bootstrap.RBACLeast, nil)
	chosen.Fence.ExecutorRules = append(chosen.Fence.ExecutorRules, bootstrap.EscalationRules()...)
	chosen.Fence.ProtectedNamespaces, chosen.Fence.AllowWebhooks, chosen.Fence.AllowEscalation = []string{"kube-system", "payments"}, true, true
	chosen.Fence.Allow = []string{"storageclasses.storage.k8s.io", "endpoints", wellknown.AllowExternalIPs}
	unfenced := syncerGenEdge()
	unfenced.Rules, unfenced.Fence = bootstrap.DownstreamRules(bootstrap.RBACBroad, nil), nil
	chosen.SyncerConfigSelector, chosen.APIExportEndpointSlice = "example.com/mailbox=florin", "edge.kubestellar.io"
	chosen.SignaturePolicy, chosen.SignatureKeys = "Enforce", []byte("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n")
	resources, err := bootstrap.Resources{RequestsCPU: "250m", LimitsCPU: "1", LimitsMemory: "512Mi"}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	chosen.Resources = &resources
	for _, c := range []struct {
		name       string
		edge       bootstrap.Edge
		helmValues bool
	}{
		{"chart defaults", syncerGenEdge(), false},
		{"syncer-gen --helm-values", syncerGenEdge(), true},
		{"syncer-gen --helm-values with chosen settings", chosen, true}, // no comma: helm -f splits its argument at commas
		{"syncer-gen --helm-values unfenced", unfenced, true},
	} {
		t.Run(c.name, func(t *testing.T) { matchSyncerGen(t, c.edge, c.helmValues) })
	}
}

// matchSyncerGen renders the chart for the edge, from the required values or from its Helm values,
// and compares the objects with the edge's manifest.
func matchSyncerGen(t *testing.T, edge bootstrap.Edge, helmValues bool) {
	var m *manifest
	if helmValues {
		values, err := edge.HelmValues()
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(file, values, 0o600); err != nil {
			t.Fatal(err)
		}
		m = render(t, "-f", file)
	} else {
		kubeconfig, err := edge.Kubeconfig()
		if err != nil {
			t.Fatal(err)
		}
		inline := filepath.Join(t.TempDir(), "upstream.kubeconfig")
		if err := os.WriteFile(inline, kubeconfig, 0o600); err != nil {
			t.Fatal(err)
		}
		m = render(t, "--set", "syncTarget.name="+edge.SyncTargetName, "--set", "syncTarget.uid="+edge.SyncTargetUID, "--set-file", "upstream.kubeconfig="+inline)
	}
	objs, err := edge.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var genKinds, chartKinds []string
	for _, o := range objs {
		if kind := o.GetObjectKind().GroupVersionKind().Kind; kind != "Namespace" {
			genKinds = append(genKinds, kind)
		}
	}
	for _, o := range m.objs {
		chartKinds = append(chartKinds, o.GetKind())
	}
	sort.Strings(genKinds)
	sort.Strings(chartKinds)
	if diff := cmp.Diff(genKinds, chartKinds); diff != "" {
		t.Errorf("kinds (-syncer-gen +chart):\n%s", diff)
	}

	for _, o := range objs {
		switch want := o.(type) {
		case *appsv1.Deployment:
			got := m.deployment(t)
			if *got.Spec.Replicas != *want.Spec.Replicas || got.Spec.Strategy.Type != want.Spec.Strategy.Type {
				t.Errorf("replicas %d strategy %s, syncer-gen %d %s", *got.Spec.Replicas, got.Spec.Strategy.Type, *want.Spec.Replicas, want.Spec.Strategy.Type)
			}
			gp, wp := got.Spec.Template, want.Spec.Template
			for k, v := range wp.Annotations {
				if gp.Annotations[k] != v {
					t.Errorf("pod annotation %s = %q, syncer-gen %q", k, gp.Annotations[k], v)
				}
			}
			if !equality.Semantic.DeepEqual(gp.Spec.SecurityContext, wp.Spec.SecurityContext) {
				t.Errorf("pod security context %+v, syncer-gen %+v", gp.Spec.SecurityContext, wp.Spec.SecurityContext)
			}
			if !equality.Semantic.DeepEqual(gp.Spec.Volumes, wp.Spec.Volumes) {
				t.Errorf("volumes %+v, syncer-gen %+v", gp.Spec.Volumes, wp.Spec.Volumes)
			}
			gc, wc := gp.Spec.Containers[0], wp.Spec.Containers[0]
			opts := []cmp.Option{cmpopts.IgnoreUnexported(options.Options{})}
			if diff := cmp.Diff(parseSyncerArgs(t, wc.Args, namespace), parseSyncerArgs(t, gc.Args, namespace), opts...); diff != "" {
				t.Errorf("the syncer's options from the args (-syncer-gen +chart):\n%s", diff)
			}
			for i := range wc.Ports {
				if wc.Ports[i].Protocol == "" {
					wc.Ports[i].Protocol = corev1.ProtocolTCP // the apiserver's default
				}
			}
			gc.Args, wc.Args = nil, nil
			quantities := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
			if diff := cmp.Diff(wc, gc, quantities); diff != "" {
				t.Errorf("container apart from the args (-syncer-gen +chart):\n%s", diff)
			}
		case *rbacv1.ClusterRole:
			name := namespace + ":" + fullname + strings.TrimPrefix(want.Name, edge.ID)
			got := m.get(t, "ClusterRole", "", name).(*rbacv1.ClusterRole)
			if diff := cmp.Diff(want.Rules, got.Rules); diff != "" {
				t.Errorf("ClusterRole rules (-syncer-gen +chart):\n%s", diff)
			}
		case *rbacv1.ClusterRoleBinding:
			name := namespace + ":" + fullname + strings.TrimPrefix(want.Name, edge.ID)
			got := m.get(t, "ClusterRoleBinding", "", name).(*rbacv1.ClusterRoleBinding)
			if want.RoleRef.Name == "system:auth-delegator" && got.RoleRef != want.RoleRef {
				t.Errorf("ClusterRoleBinding %s binds %+v, syncer-gen %+v", name, got.RoleRef, want.RoleRef)
			}
		case *rbacv1.Role:
			got := m.get(t, "Role", namespace, want.Name).(*rbacv1.Role)
			if diff := cmp.Diff(want.Rules, got.Rules); diff != "" {
				t.Errorf("Lease Role rules (-syncer-gen +chart):\n%s", diff)
			}
		case *rbacv1.RoleBinding:
			got := m.get(t, "RoleBinding", namespace, want.Name).(*rbacv1.RoleBinding)
			if diff := cmp.Diff(want.Subjects, got.Subjects); diff != "" || got.RoleRef != want.RoleRef {
				t.Errorf("Lease RoleBinding (-syncer-gen +chart):\n%s %+v", diff, got.RoleRef)
			}
		case *corev1.Secret:
			got := m.get(t, "Secret", namespace, want.Name).(*corev1.Secret)
			if got.Type != want.Type || !cmp.Equal(got.Data, want.Data, cmpopts.EquateEmpty()) ||
				got.Annotations[corev1.ServiceAccountNameKey] != want.Annotations[corev1.ServiceAccountNameKey] {
				t.Errorf("Secret %s: %s %v %v, syncer-gen %s %v %v", want.Name, got.Type, got.Annotations, got.Data, want.Type, want.Annotations, want.Data)
			}
		case *corev1.ServiceAccount:
			got := m.get(t, "ServiceAccount", namespace, want.Name).(*corev1.ServiceAccount)
			if !equality.Semantic.DeepEqual(got.AutomountServiceAccountToken, want.AutomountServiceAccountToken) {
				t.Errorf("ServiceAccount %s automounts %v, syncer-gen %v", want.Name, got.AutomountServiceAccountToken, want.AutomountServiceAccountToken)
			}
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			got := m.get(t, "ValidatingAdmissionPolicy", "", namespace+"."+want.Name).(*admissionregistrationv1.ValidatingAdmissionPolicy)
			if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
				t.Errorf("the fence's policy (-syncer-gen +chart):\n%s", diff)
			}
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			got := m.get(t, "ValidatingAdmissionPolicyBinding", "", namespace+"."+want.Name).(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
			if !cmp.Equal(got.Spec.ValidationActions, want.Spec.ValidationActions) || got.Spec.PolicyName != namespace+"."+want.Spec.PolicyName {
				t.Errorf("the fence's policy binding %+v, syncer-gen %+v", got.Spec, want.Spec)
			}
		}
	}
}
