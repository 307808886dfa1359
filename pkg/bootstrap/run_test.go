package bootstrap

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
)

const testHost = "https://mailbox.example.com/clusters/root:mb-1"

// fakeUpstream plays the mailbox's apiserver: NewClientset's tracker applies server-side apply
// patches and records managed fields; reactors answer what it cannot (access reviews, the version,
// TokenRequests) and assign UIDs to new ServiceAccounts, as the apiserver does.
type fakeUpstream struct {
	kube   *kubefake.Clientset
	dyn    *dynamicfake.FakeDynamicClient
	denied map[string]bool // "verb resource[.group]" the caller may not do
	tokens int
	// rejectNames are the CRDs whose names are rejected when created (as kcp does beside a bound API
	// of that name).
	rejectNames []string
}

// serve makes discovery show a resource of the edge.kubestellar.io API (the plural of a CRD's name).
func (f *fakeUpstream) serve(resource string) {
	r := metav1.APIResource{Name: resource, Verbs: metav1.Verbs{"get", "list", "watch"}}
	for _, l := range f.kube.Resources {
		if l.GroupVersion == edgev1.SchemeGroupVersion.String() {
			l.APIResources = append(l.APIResources, r)
			return
		}
	}
	f.kube.Resources = append(f.kube.Resources, &metav1.APIResourceList{GroupVersion: edgev1.SchemeGroupVersion.String(), APIResources: []metav1.APIResource{r}})
}

// serveSyncerConfigs makes discovery show the SyncerConfig resource.
func (f *fakeUpstream) serveSyncerConfigs() { f.serve(edgev1.SyncerConfigResource.Resource) }

// serveCRD serves the resource of a CRD named <plural>.<group>.
func (f *fakeUpstream) serveCRD(crd *unstructured.Unstructured) {
	plural, _, _ := strings.Cut(crd.GetName(), ".")
	f.serve(plural)
}

func newFakeUpstream(t *testing.T, kubeObjs []runtime.Object, dynObjs ...runtime.Object) *fakeUpstream {
	t.Helper()
	f := &fakeUpstream{kube: kubefake.NewClientset(kubeObjs...), denied: map[string]bool{}}
	f.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		crdGVR: "CustomResourceDefinitionList", edgev1.SyncerConfigResource: "SyncerConfigList", edgev1.EdgeSyncConfigGVR: "EdgeSyncConfigList"}, dynObjs...)
	for _, o := range dynObjs {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == "CustomResourceDefinition" {
			f.serveCRD(u)
		}
	}
	// The apiserver establishes a created CRD and serves it in discovery.
	f.dyn.PrependReactor("create", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		crd := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		if slices.Contains(f.rejectNames, crd.GetName()) {
			_ = unstructured.SetNestedSlice(crd.Object, []interface{}{map[string]interface{}{"type": "NamesAccepted", "status": "False", "reason": "ListKindConflict"}}, "status", "conditions")
		} else {
			_ = unstructured.SetNestedSlice(crd.Object, []interface{}{map[string]interface{}{"type": "Established", "status": "True"}}, "status", "conditions")
			f.serveCRD(crd)
		}
		return true, crd, f.dyn.Tracker().Create(crdGVR, crd, "")
	})
	f.kube.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		review := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		attrs := review.Spec.ResourceAttributes
		what := attrs.Verb + " " + attrs.Resource
		if attrs.Subresource != "" {
			what += "/" + attrs.Subresource
		}
		if attrs.Group != "" {
			what += "." + attrs.Group
		}
		review.Status.Allowed = !f.denied[what]
		return true, review, nil
	})
	f.kube.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		f.tokens++
		tr.Status.Token = fmt.Sprintf("token-%d", f.tokens)
		tr.Status.ExpirationTimestamp = metav1.NewTime(time.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
		return true, tr, nil
	})
	f.kube.PrependReactor("patch", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		handled, obj, err := clienttesting.ObjectReaction(f.kube.Tracker())(a)
		if sa, ok := obj.(*corev1.ServiceAccount); ok && sa.UID == "" {
			sa.UID = "sa-uid"
		}
		return handled, obj, err
	})
	return f
}

func (f *fakeUpstream) run(t *testing.T, opts Options) (*Result, string, error) {
	t.Helper()
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := run(context.Background(), upstream{host: testHost, ca: []byte("CA"), kube: f.kube, dyn: f.dyn, disc: f.kube.Discovery()}, opts, &out)
	return res, out.String(), err
}

// writes are the kube client's write actions: "apply <resource>" for a server-side apply,
// "create <resource>/<subresource>", ...
func (f *fakeUpstream) writes() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		r := a.GetResource().Resource
		switch verb := a.GetVerb(); verb {
		case "patch":
			if pt := a.(clienttesting.PatchAction).GetPatchType(); pt != types.ApplyPatchType {
				out = append(out, fmt.Sprintf("patch %s (%s)", r, pt))
			} else {
				out = append(out, "apply "+r)
			}
		case "create":
			if r != "selfsubjectaccessreviews" {
				out = append(out, "create "+r+"/"+a.GetSubresource())
			}
		case "update", "delete", "delete-collection":
			out = append(out, verb+" "+r)
		}
	}
	return out
}

func testOptions() Options {
	return Options{Name: "florin", Image: "example.com/syncer:dev", UpstreamNamespace: "default", Replicas: 1,
		QPS: 500, Burst: 1000, Verbosity: 2, Lifetime: 365 * 24 * time.Hour, RBAC: RBACBroad}
}

// TestRunAppliesIdentity: on an empty upstream, syncer-gen installs the CRD and applies the
// ServiceAccount, ClusterRole, ClusterRoleBinding and token Secret with its field manager, and the
// manifest carries the ServiceAccount's UID and the requested token.
func TestRunAppliesIdentity(t *testing.T) {
	f := newFakeUpstream(t, nil)
	res, out, err := f.run(t, testOptions())
	if err != nil {
		t.Fatalf("%v; output:\n%s", err, out)
	}
	id := SyncerID(testHost, "florin")
	if res.ID != id || res.Namespace != id || res.UID != "sa-uid" {
		t.Errorf("result %+v", res)
	}
	wantWrites := []string{
		"apply serviceaccounts",
		"apply clusterroles",
		"apply clusterrolebindings",
		"apply roles",
		"apply rolebindings",
		"create serviceaccounts/token",
		"apply secrets",
	}
	if diff := cmp.Diff(wantWrites, f.writes()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	// The syncer may renew its own token, and no other ServiceAccount's.
	renewal, err := f.kube.RbacV1().Roles("default").Get(context.Background(), id+TokenRenewalSuffix, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{id}, Verbs: []string{"create"}}}; !cmp.Equal(renewal.Rules, want) {
		t.Errorf("token renewal rules %+v, want %+v", renewal.Rules, want)
	}
	if rb, err := f.kube.RbacV1().RoleBindings("default").Get(context.Background(), id+TokenRenewalSuffix, metav1.GetOptions{}); err != nil ||
		rb.RoleRef.Name != id+TokenRenewalSuffix || len(rb.Subjects) != 1 || rb.Subjects[0].Name != id {
		t.Errorf("token renewal binding %+v, %v", rb, err)
	}
	for _, kind := range []string{"SyncerConfig", "EdgeSyncConfig"} {
		if !strings.Contains(out, "Installing the "+kind+" CRD") {
			t.Errorf("the %s CRD was not installed; output:\n%s", kind, out)
		}
	}
	for _, name := range []string{"syncerconfigs.edge.kubestellar.io", "edgesyncconfigs.edge.kubestellar.io"} {
		if _, err := f.dyn.Resource(crdGVR).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("the CRD %s: %v", name, err)
		}
	}

	ctx := context.Background()
	labels := map[string]string{managedByLabel: managedByValue, syncerNameLabel: id}
	sa, err := f.kube.CoreV1().ServiceAccounts("default").Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(labels, sa.Labels); diff != "" {
		t.Errorf("service account labels (-want +got):\n%s", diff)
	}
	if len(sa.ManagedFields) != 1 || sa.ManagedFields[0].Manager != FieldManager || sa.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("service account managed fields %+v, want one Apply entry of %q", sa.ManagedFields, FieldManager)
	}
	role, err := f.kube.RbacV1().ClusterRoles().Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(UpstreamRules(RBACBroad, nil), role.Rules); diff != "" {
		t.Errorf("cluster role rules (-want +got):\n%s", diff)
	}
	binding, err := f.kube.RbacV1().ClusterRoleBindings().Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: id}, binding.RoleRef); diff != "" {
		t.Errorf("role ref (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]rbacv1.Subject{{Kind: "ServiceAccount", Name: id, Namespace: "default"}}, binding.Subjects); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}
	secret, err := f.kube.CoreV1().Secrets("default").Get(ctx, id+"-token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["token"]) != "token-1" || secret.Type != corev1.SecretTypeOpaque || secret.Annotations[corev1.ServiceAccountNameKey] != id ||
		secret.Annotations[tokenExpiresAnnotation] == "" {
		t.Errorf("token secret %+v", secret)
	}
	if diff := cmp.Diff([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ServiceAccount", Name: id, UID: "sa-uid"}}, secret.OwnerReferences); diff != "" {
		t.Errorf("token secret owner (-want +got):\n%s", diff)
	}
	for _, a := range f.kube.Actions() {
		if a.GetSubresource() == "token" {
			tr := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenRequest)
			if got := *tr.Spec.ExpirationSeconds; got != int64((365 * 24 * time.Hour).Seconds()) {
				t.Errorf("token requested for %ds", got)
			}
		}
	}
	checkManifest(t, res, "token-1", "sa-uid")
}

// checkManifest: the manifest's kubeconfig holds the upstream, its CA and the token; the
// Deployment names the sync target's UID.
func checkManifest(t *testing.T, res *Result, token, uid string) {
	t.Helper()
	var kubeconfig []byte
	for _, doc := range strings.Split(string(res.Manifest), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if u.GetKind() == "Secret" && u.GetName() == res.ID+"-kubeconfig" {
			s, _, _ := unstructured.NestedString(u.Object, "data", KubeconfigKey)
			var err error
			if kubeconfig, err = base64.StdEncoding.DecodeString(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatalf("the manifest's kubeconfig: %v", err)
	}
	if cfg.Host != testHost || cfg.BearerToken != token || string(cfg.CAData) != "CA" {
		t.Errorf("the manifest's kubeconfig: host %q token %q CA %q", cfg.Host, cfg.BearerToken, cfg.CAData)
	}
	if !strings.Contains(string(res.Manifest), "--sync-target-uid="+uid+"\n") {
		t.Errorf("the manifest lacks --sync-target-uid=%s", uid)
	}
}

// TestRunAgainUpdatesInPlace: a second run (here over objects an earlier version wrote by update)
// keeps the ServiceAccount and its UID, replaces the rules, subjects and token, and keeps labels
// and annotations someone else added.
func TestRunAgainUpdatesInPlace(t *testing.T) {
	id := SyncerID(testHost, "florin")
	other := map[string]string{"team": "edge", syncerNameLabel: id}
	existing := []runtime.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: "default", UID: "uid-1", Labels: other}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: other},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"*"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: other},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: id},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: id, Namespace: "elsewhere"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: id + "-token", Namespace: "default", Annotations: map[string]string{"note": "kept"}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"token": []byte("old")}},
	}
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("syncerconfigs.edge.kubestellar.io")
	config := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncerConfig",
		"metadata": map[string]interface{}{"name": "c"},
		"spec": map[string]interface{}{"namespaceScope": map[string]interface{}{"namespaces": []interface{}{"app"},
			"resources": []interface{}{map[string]interface{}{"group": "", "apiVersion": "v1", "resource": "configmaps"}}}}}}
	parsed, err := edgev1.FromUnstructured(config.Object)
	if err != nil {
		t.Fatal(err)
	}
	configs := []*edgev1.SyncerConfig{parsed}
	f := newFakeUpstream(t, existing, crd, config)
	opts := testOptions()
	opts.RBAC = RBACLeast
	for i := 1; i <= 2; i++ {
		res, out, err := f.run(t, opts)
		if err != nil {
			t.Fatalf("run %d: %v; output:\n%s", i, err, out)
		}
		if strings.Contains(out, "Installing the SyncerConfig CRD") {
			t.Errorf("run %d installed the CRD again", i)
		}
		if installed := strings.Contains(out, "Installing the EdgeSyncConfig CRD"); installed != (i == 1) {
			t.Errorf("run %d: EdgeSyncConfig CRD installed %v; output:\n%s", i, installed, out)
		}
		ctx := context.Background()
		sa, err := f.kube.CoreV1().ServiceAccounts("default").Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.UID != "uid-1" || sa.UID != "uid-1" {
			t.Errorf("run %d: UID %q, service account UID %q, want uid-1", i, res.UID, sa.UID)
		}
		wantLabels := map[string]string{"team": "edge", managedByLabel: managedByValue, syncerNameLabel: id}
		if diff := cmp.Diff(wantLabels, sa.Labels); diff != "" {
			t.Errorf("run %d: service account labels (-want +got):\n%s", i, diff)
		}
		role, err := f.kube.RbacV1().ClusterRoles().Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(UpstreamRules(RBACLeast, configs), role.Rules); diff != "" {
			t.Errorf("run %d: cluster role rules (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(wantLabels, role.Labels); diff != "" {
			t.Errorf("run %d: cluster role labels (-want +got):\n%s", i, diff)
		}
		binding, err := f.kube.RbacV1().ClusterRoleBindings().Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]rbacv1.Subject{{Kind: "ServiceAccount", Name: id, Namespace: "default"}}, binding.Subjects); diff != "" {
			t.Errorf("run %d: subjects (-want +got):\n%s", i, diff)
		}
		secret, err := f.kube.CoreV1().Secrets("default").Get(ctx, id+"-token", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		token := fmt.Sprintf("token-%d", i)
		if string(secret.Data["token"]) != token || secret.Annotations["note"] != "kept" {
			t.Errorf("run %d: token secret data %q annotations %v", i, secret.Data["token"], secret.Annotations)
		}
		if len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].UID != "uid-1" {
			t.Errorf("run %d: token secret owners %+v", i, secret.OwnerReferences)
		}
		checkManifest(t, res, token, "uid-1")
	}
	for _, w := range f.writes() {
		if !strings.HasPrefix(w, "apply ") && w != "create serviceaccounts/token" {
			t.Errorf("a write that is not a server-side apply: %s", w)
		}
	}
}

// TestRunPreflight: an unusable endpoint, or a user lacking a permission, stops the bootstrap
// before any write, naming what is missing.
func TestRunPreflight(t *testing.T) {
	f := newFakeUpstream(t, nil)
	f.denied["patch clusterroles.rbac.authorization.k8s.io"] = true
	f.denied["create serviceaccounts/token"] = true
	_, _, err := f.run(t, testOptions())
	want := "the kubeconfig's user may not create serviceaccounts/token, patch clusterroles.rbac.authorization.k8s.io at " + testHost
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want it to contain %q", err, want)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes despite missing permissions: %v", w)
	}

	f = newFakeUpstream(t, nil)
	f.kube.PrependReactor("get", "version", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	_, _, err = f.run(t, testOptions())
	if err == nil || !strings.HasPrefix(err.Error(), "cannot use the upstream at "+testHost) {
		t.Errorf("unreachable upstream: error %v", err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes to an unreachable upstream: %v", w)
	}
}

// TestRunUsesABoundSyncerConfigAPI: in a KubeStellar-style kcp mailbox SyncerConfigs and
// EdgeSyncConfigs come from an APIBinding; syncer-gen sees them in discovery and installs no CRD (kcp
// would never accept it).
func TestRunUsesABoundSyncerConfigAPI(t *testing.T) {
	f := newFakeUpstream(t, nil)
	f.serveSyncerConfigs() // bound, no CRD object
	f.serve(edgev1.EdgeSyncConfigGVR.Resource)
	if _, out, err := f.run(t, testOptions()); err != nil || strings.Contains(out, "Installing the") {
		t.Fatalf("err %v; output:\n%s", err, out)
	}
	for _, a := range f.dyn.Actions() {
		if a.GetVerb() == "create" && a.GetResource() == crdGVR {
			t.Fatal("a CRD was created beside the bound API")
		}
	}
}

// TestRunStopsWhenCRDNamesRejected: a CRD whose names the upstream rejects is an error at once, with
// the reason, not a wait that ends in a timeout.
func TestRunStopsWhenCRDNamesRejected(t *testing.T) {
	f := newFakeUpstream(t, nil)
	f.rejectNames = []string{"syncerconfigs.edge.kubestellar.io"}
	start := time.Now()
	_, _, err := f.run(t, testOptions())
	if err == nil || !strings.Contains(err.Error(), "ListKindConflict") || time.Since(start) > 10*time.Second {
		t.Fatalf("err = %v after %s", err, time.Since(start))
	}
}

// TestRunGoesOnWithoutEdgeSyncConfigs: the EdgeSyncConfig API is optional; when its CRD cannot be
// installed (here its names are rejected), syncer-gen warns and bootstraps the syncer all the same.
func TestRunGoesOnWithoutEdgeSyncConfigs(t *testing.T) {
	f := newFakeUpstream(t, nil)
	f.rejectNames = []string{"edgesyncconfigs.edge.kubestellar.io"}
	res, out, err := f.run(t, testOptions())
	if err != nil || res == nil || !strings.Contains(out, "Warning: ") || !strings.Contains(out, "the syncer works without EdgeSyncConfigs") {
		t.Fatalf("err %v; output:\n%s", err, out)
	}
}

// TestRunSyncerConfigSelector: with --syncer-config-selector the syncer's Deployment reads only the
// selected configs, and least RBAC grants what those need, not what the others' need.
func TestRunSyncerConfigSelector(t *testing.T) {
	configFor := func(name, resource string, labels map[string]interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncerConfig",
			"metadata": map[string]interface{}{"name": name, "labels": labels},
			"spec": map[string]interface{}{"namespaceScope": map[string]interface{}{"namespaces": []interface{}{"app"},
				"resources": []interface{}{map[string]interface{}{"group": "", "apiVersion": "v1", "resource": resource}}}}}}
	}
	mine := configFor("mine", "configmaps", map[string]interface{}{"example.com/mailbox": "florin"})
	theirs := configFor("theirs", "secrets", map[string]interface{}{"example.com/mailbox": "other"})
	parsed, err := edgev1.FromUnstructured(mine.Object)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("syncerconfigs.edge.kubestellar.io")
	f := newFakeUpstream(t, nil, crd, mine, theirs)
	opts := testOptions()
	opts.RBAC, opts.SyncerConfigSelector = RBACLeast, "example.com/mailbox=florin"
	res, out, err := f.run(t, opts)
	if err != nil {
		t.Fatalf("%v; output:\n%s", err, out)
	}
	role, err := f.kube.RbacV1().ClusterRoles().Get(context.Background(), res.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(UpstreamRules(RBACLeast, []*edgev1.SyncerConfig{parsed}), role.Rules); diff != "" {
		t.Errorf("upstream rules: want those of the selected config only (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(res.Manifest), "--syncer-config-selector=example.com/mailbox=florin") {
		t.Errorf("the manifest's Deployment does not pass the selector:\n%s", res.Manifest)
	}
	bad := testOptions()
	bad.SyncerConfigSelector = "a b"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "--syncer-config-selector") {
		t.Errorf("an unparsable selector: %v", err)
	}
}

// TestRunForAnAPIExport: with --apiexport-endpoint-slice the identity may read that slice and the
// content of its export, nothing else in the provider workspace; no config API is installed there;
// the manifest runs the syncer with the flag. A missing slice is an error that says where to point
// the kubeconfig, and least RBAC is refused.
func TestRunForAnAPIExport(t *testing.T) {
	slice := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice",
		"metadata": map[string]interface{}{"name": "edge.kubestellar.io"},
		"spec":     map[string]interface{}{"export": map[string]interface{}{"name": "edge-export", "path": "root:mb-1"}}}}
	f := newFakeUpstream(t, nil, slice)
	opts := testOptions()
	opts.APIExportEndpointSlice = "edge.kubestellar.io"
	res, out, err := f.run(t, opts)
	if err != nil {
		t.Fatalf("%v; output:\n%s", err, out)
	}
	cr, err := f.kube.RbacV1().ClusterRoles().Get(context.Background(), res.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexportendpointslices"}, ResourceNames: []string{"edge.kubestellar.io"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports/content"}, ResourceNames: []string{"edge-export"}, Verbs: []string{"*"}},
	}
	if diff := cmp.Diff(want, cr.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if crds, err := f.dyn.Resource(crdGVR).List(context.Background(), metav1.ListOptions{}); err != nil || len(crds.Items) != 0 {
		t.Errorf("CRDs in the provider workspace: %d (%v)", len(crds.Items), err)
	}
	if !strings.Contains(string(res.Manifest), "--apiexport-endpoint-slice=edge.kubestellar.io") || !strings.Contains(out, `APIExport "edge-export"`) {
		t.Errorf("the manifest or the output does not name the slice and its export; output:\n%s", out)
	}
	if strings.Contains(out, "grant") {
		t.Errorf("a note to grant elsewhere for an export in the provider workspace itself:\n%s", out)
	}

	opts.APIExportEndpointSlice = "nope"
	if _, _, err := f.run(t, opts); err == nil || !strings.Contains(err.Error(), "provider workspace") {
		t.Errorf("a missing slice: %v", err)
	}
	opts.RBAC = RBACLeast
	if err := opts.Validate(); err == nil || !strings.Contains(err.Error(), "--rbac least does not apply") {
		t.Errorf("least RBAC with a slice: %v", err)
	}
}
