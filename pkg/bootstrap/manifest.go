package bootstrap

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Ports and paths of the syncer container; the Deployment and the image agree on them.
const (
	MetricsPort = 8443 // HTTPS, --metrics-secure
	// MetricsReaderSuffix names the ClusterRole that may read the metrics (<ID>-metrics-reader).
	MetricsReaderSuffix = "-metrics-reader"
	HealthPort          = 8081
	KubeconfigMount     = "/kubestellar/"
	KubeconfigKey       = "kubeconfig"
	ContainerName       = "kubestellar-syncer"
	nonRootUID          = 65532
	managedByLabel      = "app.kubernetes.io/managed-by"
	managedByValue      = "kubestellar-syncer-gen"
	syncerNameLabel     = "edge.kubestellar.io/syncer"
)

// Edge is what the edge manifest is made of.
type Edge struct {
	ID, Namespace  string
	SyncTargetName string
	SyncTargetUID  string
	Image          string
	Replicas       int32
	QPS            float32
	Burst          int
	Verbosity      int
	// MaxObjectsPerResource is the syncer's --max-objects-per-resource (0: no limit).
	MaxObjectsPerResource int
	// SyncerConfigSelector is the syncer's --syncer-config-selector; empty: every config.
	SyncerConfigSelector string
	Rules                []rbacv1.PolicyRule
	UpstreamServer       string
	UpstreamCA           []byte
	UpstreamToken        string
	UpstreamContext      string // namespace of the kubeconfig context
	// Resources of the syncer container; nil means syncer-gen's defaults (DefaultResources).
	Resources *corev1.ResourceRequirements
	// SignaturePolicy is the syncer's --signature-policy (empty or Off: none), SignatureKeys the PEM
	// public keys it verifies with, in the Secret <ID>-signature-keys mounted at SignatureKeysMount.
	SignaturePolicy string
	SignatureKeys   []byte
	// APIExportEndpointSlice is the syncer's --apiexport-endpoint-slice (empty: one mailbox).
	APIExportEndpointSlice string
	// Fence, when set, makes the syncer write at the edge as an executor the edge owner bounds; Rules
	// are then the syncer's own (what it reads, the Events it records). Nil: it writes as itself.
	Fence *Fence
}

// UpstreamTokenSuffix names the Secret at the edge the syncer keeps its renewed upstream token in
// (<ID>-upstream-token, --upstream-token-secret): the manifest creates it empty and never fills it,
// so that applying the manifest again does not roll the token back.
const UpstreamTokenSuffix = "-upstream-token"

// UpstreamTokenRules are what the syncer needs at the edge to keep its renewed token in the Secret
// named secret.
func UpstreamTokenRules(secret string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{secret}, Verbs: []string{"get", "update"}}}
}

// ReleaseSuffix names the edge's release object (<ID>-release): a ConfigMap the edge owner annotates
// to release the deletions the breaker holds.
const ReleaseSuffix = "-release"

// ReleaseRules let the syncer read its release object (list and watch by name) and nothing else there.
func ReleaseRules(configMap string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{configMap}, Verbs: []string{"get", "list", "watch"}}}
}

// SignatureKeysMount is where the signature keys' Secret is mounted.
const SignatureKeysMount = "/kubestellar/signature-keys/"

// verifies tells whether the syncer verifies signatures.
func (e Edge) verifies() bool { return e.SignaturePolicy != "" && e.SignaturePolicy != "Off" }

// SyncerArgs are the syncer's arguments in the Deployment; the image's ENTRYPOINT is the syncer.
func (e Edge) SyncerArgs() []string {
	args := []string{
		"--upstream-kubeconfig=" + KubeconfigMount + KubeconfigKey,
		"--sync-target-name=" + e.SyncTargetName,
		"--sync-target-uid=" + e.SyncTargetUID,
	}
	if e.SyncerConfigSelector != "" {
		args = append(args, "--syncer-config-selector="+e.SyncerConfigSelector)
	}
	if e.APIExportEndpointSlice != "" {
		args = append(args, "--apiexport-endpoint-slice="+e.APIExportEndpointSlice)
	}
	args = append(args,
		"--upstream-qps="+strconv.FormatFloat(float64(e.QPS), 'f', -1, 32),
		"--upstream-burst="+strconv.Itoa(e.Burst),
		"--downstream-qps=-1", // the edge's API Priority and Fairness paces the syncer
		"--metrics-bind-address=:"+strconv.Itoa(MetricsPort),
		"--metrics-secure",
		"--health-probe-bind-address=:"+strconv.Itoa(HealthPort),
		"--leader-elect",
		"--upstream-token-secret="+e.ID+UpstreamTokenSuffix,
		"--deletion-release-configmap="+e.ID+ReleaseSuffix,
		"-v="+strconv.Itoa(e.Verbosity),
		"--max-objects-per-resource="+strconv.Itoa(e.MaxObjectsPerResource),
	)
	if e.Fence != nil {
		args = append(args, "--executor="+e.ID+ExecutorSuffix)
		if len(e.Fence.ProtectedNamespaces) > 0 {
			// Kept to the edge for reads too: nothing in them is upsynced.
			args = append(args, "--protected-namespaces="+strings.Join(e.Fence.ProtectedNamespaces, ","))
		}
		if len(e.Fence.Allow) > 0 {
			// The syncer leaves out of its selection the fenced resources not allowed.
			args = append(args, "--fence-allow="+strings.Join(e.Fence.Allow, ","))
		}
	}
	if e.verifies() {
		args = append(args, "--signature-policy="+e.SignaturePolicy, "--signature-keys="+SignatureKeysMount)
	}
	return args
}

// MetricsReaderRules are what a scraper needs of a syncer with --metrics-secure.
func MetricsReaderRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
}

// Kubeconfig is the upstream kubeconfig the syncer mounts.
func (e Edge) Kubeconfig() ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["upstream"] = &clientcmdapi.Cluster{Server: e.UpstreamServer, CertificateAuthorityData: e.UpstreamCA}
	cfg.AuthInfos["syncer"] = &clientcmdapi.AuthInfo{Token: e.UpstreamToken}
	cfg.Contexts["upstream"] = &clientcmdapi.Context{Cluster: "upstream", AuthInfo: "syncer", Namespace: e.UpstreamContext}
	cfg.CurrentContext = "upstream"
	return runtime.Encode(clientcmdlatest.Codec, cfg)
}

// resources are the container's requests and limits.
func (e Edge) resources() corev1.ResourceRequirements {
	if e.Resources == nil {
		return defaultRequirements()
	}
	return *e.Resources.DeepCopy()
}

// labels are on every object of the edge manifest: Kubernetes' recommended labels (as the Helm
// chart sets them) and the syncer's ID.
func (e Edge) labels() map[string]string {
	return map[string]string{
		managedByLabel:                managedByValue,
		syncerNameLabel:               e.ID,
		"app.kubernetes.io/name":      "kubestellar-syncer",
		"app.kubernetes.io/instance":  e.ID,
		"app.kubernetes.io/component": "syncer",
		"app.kubernetes.io/part-of":   "kubestellar",
	}
}

func (e Edge) meta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: e.labels()}
}

// Objects are the edge manifest's objects, in apply order.
func (e Edge) Objects() ([]runtime.Object, error) {
	kubeconfig, err := e.Kubeconfig()
	if err != nil {
		return nil, err
	}
	objs := []runtime.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: e.meta(e.Namespace, "")},
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: e.meta(e.ID, e.Namespace)},
		// No long-lived token Secret of the ServiceAccount: the Pod's projected token expires and is bound
		// to the Pod; a never-expiring one, readable by whatever reads Secrets here, would outlive both.
		&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}, ObjectMeta: e.meta(e.ID, ""), Rules: e.Rules},
		&rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"}, ObjectMeta: e.meta(e.ID, ""),
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: e.ID},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: e.ID, Namespace: e.Namespace}}},
		// --metrics-secure: the syncer asks the edge who a scraper is and whether it may read.
		&rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"}, ObjectMeta: e.meta(e.ID+"-auth-delegator", ""),
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:auth-delegator"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: e.ID, Namespace: e.Namespace}}},
		// Bound to the scraper's identity by the user (kube-prometheus's Prometheus may get /metrics already).
		&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}, ObjectMeta: e.meta(e.ID+MetricsReaderSuffix, ""),
			Rules: MetricsReaderRules()},
		&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: e.meta(e.ID+"-leader-election", e.Namespace),
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}}}},
		&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: e.meta(e.ID+"-leader-election", e.Namespace),
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: e.ID + "-leader-election"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: e.ID, Namespace: e.Namespace}}},
		&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: e.meta(e.ID+"-kubeconfig", e.Namespace),
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{KubeconfigKey: kubeconfig}},
		// Empty: the syncer fills it with each token it renews; applying the manifest again leaves them.
		&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: e.meta(e.ID+UpstreamTokenSuffix, e.Namespace), Type: corev1.SecretTypeOpaque},
		&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: e.meta(e.ID+UpstreamTokenSuffix, e.Namespace),
			Rules: UpstreamTokenRules(e.ID + UpstreamTokenSuffix)},
		&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: e.meta(e.ID+UpstreamTokenSuffix, e.Namespace),
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: e.ID + UpstreamTokenSuffix},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: e.ID, Namespace: e.Namespace}}},
		// Empty: the edge owner releases the deletions the breaker holds by annotating it; the syncer reads
		// it, and writes nothing here.
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: e.meta(e.ID+ReleaseSuffix, e.Namespace)},
		&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: e.meta(e.ID+ReleaseSuffix, e.Namespace),
			Rules: ReleaseRules(e.ID + ReleaseSuffix)},
		&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: e.meta(e.ID+ReleaseSuffix, e.Namespace),
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: e.ID + ReleaseSuffix},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: e.ID, Namespace: e.Namespace}}},
	}
	if e.verifies() {
		// The keys are the edge owner's: the mailbox never sees them, nor can change them.
		objs = append(objs, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: e.meta(e.ID+"-signature-keys", e.Namespace),
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{SignatureKeysFile: e.SignatureKeys}})
	}
	if e.Fence != nil {
		objs = append(objs, e.fenceObjects()...)
	}
	return append(objs, e.deployment()), nil
}

// SignatureKeysFile is the key of the public keys in the Secret <ID>-signature-keys.
const SignatureKeysFile = "keys.pem"

// deployment runs the syncer's image with its arguments, probes and the upstream kubeconfig.
func (e Edge) deployment() *appsv1.Deployment {
	podLabels := map[string]string{"app": e.ID} // the selector: never changes, so re-applying works
	templateLabels := e.labels()
	templateLabels["app"] = e.ID
	mounts := []corev1.VolumeMount{{Name: "kubestellar-config", MountPath: KubeconfigMount, ReadOnly: true}}
	volumes := []corev1.Volume{{Name: "kubestellar-config", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: e.ID + "-kubeconfig", Items: []corev1.KeyToPath{{Key: KubeconfigKey, Path: KubeconfigKey}}}}}}
	if e.verifies() {
		mounts = append(mounts, corev1.VolumeMount{Name: "signature-keys", MountPath: SignatureKeysMount, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "signature-keys", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: e.ID + "-signature-keys"}}})
	}
	probe := func(path string, initial int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("health")}},
			InitialDelaySeconds: initial, PeriodSeconds: 10, TimeoutSeconds: 2, FailureThreshold: 3,
		}
	}
	return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: e.meta(e.ID, e.Namespace),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(e.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: templateLabels, Annotations: map[string]string{
					"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(MetricsPort), "prometheus.io/path": "/metrics",
					"prometheus.io/scheme": "https"}},
				Spec: corev1.PodSpec{
					ServiceAccountName: e.ID,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](nonRootUID), RunAsGroup: ptr.To[int64](nonRootUID),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name:            ContainerName,
						Image:           e.Image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            e.SyncerArgs(),
						Env: []corev1.EnvVar{
							{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							// The Lease identity: a restarted container of the Pod leads again at once.
							{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
						},
						Ports:                    []corev1.ContainerPort{{Name: "metrics", ContainerPort: MetricsPort}, {Name: "health", ContainerPort: HealthPort}},
						LivenessProbe:            probe("/healthz", 10),
						ReadinessProbe:           probe("/readyz", 5),
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						Resources:                e.resources(),
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), Privileged: ptr.To(false),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						VolumeMounts: mounts,
					}},
					Volumes: volumes,
				},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
		}}
}

// Manifest renders the objects as one multi-document YAML.
func (e Edge) Manifest() ([]byte, error) {
	objs, err := e.Objects()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# KubeStellar syncer %q for sync target %q, generated by kubectl kubestellar syncer-gen.\n# Apply to the edge cluster: kubectl apply -f <this file>\n", e.ID, e.SyncTargetName)
	for _, o := range objs {
		data, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		buf.WriteString("---\n")
		buf.Write(removeCreationTimestamp(data))
	}
	return buf.Bytes(), nil
}

// removeCreationTimestamp drops the "creationTimestamp: null" lines typed objects marshal to.
func removeCreationTimestamp(data []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		if bytes.Equal(bytes.TrimSpace(line), []byte("creationTimestamp: null")) {
			continue
		}
		out = append(out, line)
	}
	return bytes.Join(out, []byte("\n"))
}
