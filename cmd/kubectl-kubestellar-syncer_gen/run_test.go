package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/syncer/pkg/bootstrap"
)

// TestRunWritesManifestAndHelmValues: one run writes the manifest (-o) and the Helm values
// (--helm-values), each readable by its owner only; both hold the identity the run created upstream
// (the ServiceAccount's UID, the issued token) and the resources the flags gave, and the next steps
// name both.
func TestRunWritesManifestAndHelmValues(t *testing.T) {
	api := newFakeAPI(t)
	dir := t.TempDir()
	manifest, valuesFile := filepath.Join(dir, "florin.yaml"), filepath.Join(dir, "florin-values.yaml")
	if err := os.WriteFile(valuesFile, []byte("old"), 0o644); err != nil { // an existing file is made private too
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run([]string{"florin", "--syncer-image=example.com/syncer:v1", "--kubeconfig=" + api.kubeconfig(t), "-o", manifest,
		"--helm-values", valuesFile, "--requests-cpu=250m", "--requests-memory=", "--limits-cpu=2", "--replicas=2", "--expected-objects=100000"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr.String())
	}
	id := bootstrap.SyncerID(api.URL, "florin")
	for _, want := range []string{"kubectl apply -f", "kubectl get deployment -n", "helm install " + id + " charts/kubestellar-syncer -n \"" + id + "\" --create-namespace -f"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q", stdout.String())
	}
	for _, f := range []string{manifest, valuesFile} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", f, fi.Mode(), err)
		}
	}

	data, err := os.ReadFile(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		SyncTarget struct{ Name, UID string } `json:"syncTarget"`
		Upstream   struct{ Kubeconfig string }
		Image      struct{ Repository, Tag string }
		Replicas   int
		Resources  map[string]map[string]*string
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatalf("the Helm values are not YAML: %v\n%s", err, data)
	}
	if values.SyncTarget.Name != "florin" || values.SyncTarget.UID != fakeUID || values.Image.Repository != "example.com/syncer" ||
		values.Image.Tag != "v1" || values.Replicas != 2 {
		t.Errorf("values %+v", values)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(values.Upstream.Kubeconfig))
	if err != nil || cfg.Host != api.URL || cfg.BearerToken != fakeToken {
		t.Errorf("upstream.kubeconfig: %v %+v", err, cfg)
	}
	str := func(s *string) string {
		if s == nil {
			return "null"
		}
		return *s
	}
	if r := values.Resources; str(r["requests"]["cpu"]) != "250m" || str(r["requests"]["memory"]) != "null" || str(r["limits"]["cpu"]) != "2" ||
		str(r["limits"]["memory"]) != "1632Mi" {
		t.Errorf("resources %s", data)
	}

	data, err = os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	var secret *corev1.Secret
	for _, doc := range strings.Split(string(data), "\n---\n") {
		switch {
		case strings.Contains(doc, "\nkind: Deployment\n"):
			dep = &appsv1.Deployment{}
			if err := yaml.Unmarshal([]byte(doc), dep); err != nil {
				t.Fatal(err)
			}
		case strings.Contains(doc, "\n  name: "+id+"-kubeconfig\n"):
			secret = &corev1.Secret{}
			if err := yaml.Unmarshal([]byte(doc), secret); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dep == nil || secret == nil {
		t.Fatalf("no Deployment or kubeconfig Secret in the manifest:\n%s", data)
	}
	res := dep.Spec.Template.Spec.Containers[0].Resources
	if !res.Requests.Cpu().Equal(resource.MustParse("250m")) || res.Requests.Memory().Value() != 0 || !res.Limits.Cpu().Equal(resource.MustParse("2")) ||
		!res.Limits.Memory().Equal(resource.MustParse("1632Mi")) {
		t.Errorf("Deployment resources %+v", res)
	}
	if !strings.Contains(string(data), "- --sync-target-uid="+fakeUID+"\n") {
		t.Errorf("the manifest lacks the sync target UID:\n%s", data)
	}
	if cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["kubeconfig"]); err != nil || cfg.BearerToken != fakeToken {
		t.Errorf("the manifest's kubeconfig: %v %+v", err, cfg)
	}
}

// TestHelmValuesOnStdout: with --helm-values - and no -o, the values alone go to stdout.
func TestHelmValuesOnStdout(t *testing.T) {
	api := newFakeAPI(t)
	var stdout, stderr bytes.Buffer
	if err := run([]string{"florin", "--syncer-image=s:1", "--kubeconfig=" + api.kubeconfig(t), "--helm-values=-"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "# Values of the Helm chart") || strings.Contains(stdout.String(), "kind: Deployment") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

// TestConnectionFlags: kubectl's flags choose the endpoint and the credentials over the kubeconfig's:
// --context, -s/--server with --token, --as.
func TestConnectionFlags(t *testing.T) {
	api := newFakeAPI(t)
	kubeconfig := api.kubeconfig(t)
	for _, tc := range []struct {
		name             string
		args             []string
		wantAuth, wantAs string
		wantErr          string
	}{
		{name: "the kubeconfig's current context", args: nil, wantAuth: "Bearer kubeconfig-token"},
		{name: "--context", args: []string{"--context=other"}, wantErr: "cannot use the upstream at https://127.0.0.1:1"},
		{name: "--context, --cluster and --user", args: []string{"--context=other", "--cluster=mailbox", "--user=admin"}, wantAuth: "Bearer kubeconfig-token"},
		{name: "-s, --certificate-authority and --token", args: []string{"--context=other", "-s", api.URL, "--certificate-authority=" + api.CAFile, "--token=flag-token"}, wantAuth: "Bearer flag-token"},
		{name: "--as", args: []string{"--as=alice"}, wantAuth: "Bearer kubeconfig-token", wantAs: "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(api.seen())
			var stdout, stderr bytes.Buffer
			args := append([]string{"florin", "--syncer-image=s:1", "--kubeconfig=" + kubeconfig, "-o", "-", "--request-timeout=3s"}, tc.args...)
			err := run(args, &stdout, &stderr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v; stderr:\n%s", err, stderr.String())
			}
			reqs := api.seen()[before:]
			if len(reqs) == 0 {
				t.Fatal("no request")
			}
			for _, r := range reqs {
				if r.authorization != tc.wantAuth || r.impersonate != tc.wantAs {
					t.Fatalf("%s %s with Authorization %q, Impersonate-User %q; want %q, %q", r.method, r.path, r.authorization, r.impersonate, tc.wantAuth, tc.wantAs)
				}
			}
		})
	}
}

// parse parses args as syncer-gen does and returns its options.
func parse(t *testing.T, args ...string) *options {
	t.Helper()
	o := newOptions()
	if err := o.command(pluginName, io.Discard, io.Discard).ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestExpectedObjects: the memory request and limit derive from --expected-objects, each unless its
// own flag is given (empty included: no entry).
func TestExpectedObjects(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		request, limit string
		wantErr        string
	}{
		{nil, "144Mi", "256Mi", ""},
		{[]string{"--expected-objects=100000"}, "848Mi", "1632Mi", ""},
		{[]string{"--expected-objects=100000", "--limits-memory=4Gi"}, "848Mi", "4Gi", ""},
		{[]string{"--expected-objects=0", "--requests-memory=100Mi"}, "100Mi", "256Mi", ""},
		{[]string{"--expected-objects=1000", "--requests-memory=", "--limits-memory="}, "", "", ""},
		{[]string{"--expected-objects=-1"}, "", "", "--expected-objects must not be negative"},
	} {
		o := newOptions()
		cmd := o.command(pluginName, io.Discard, io.Discard)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		err := o.complete(cmd.Flags())
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.resources.RequestsMemory != tc.request || o.resources.LimitsMemory != tc.limit || o.resources.RequestsCPU != "100m" {
			t.Errorf("%v: resources %+v, want memory request %q limit %q", tc.args, o.resources, tc.request, tc.limit)
		}
	}
}

// TestRequestTimeout: 15 s unless --request-timeout is given (0: none, as in kubectl).
func TestRequestTimeout(t *testing.T) {
	kubeconfig := newFakeAPI(t).kubeconfig(t)
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 15 * time.Second},
		{[]string{"--request-timeout=2m"}, 2 * time.Minute},
		{[]string{"--request-timeout=7"}, 7 * time.Second},
		{[]string{"--request-timeout=0"}, 0},
	} {
		cfg, err := parse(t, append([]string{"--kubeconfig=" + kubeconfig}, tc.args...)...).connection.ToRESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Timeout != tc.want {
			t.Errorf("%v: timeout %v, want %v", tc.args, cfg.Timeout, tc.want)
		}
	}
}

// TestNamespaceIsTheEdgeNamespace: -n/--namespace keeps its meaning, the edge namespace; kubectl's
// --namespace is not added, and the kubeconfig context's namespace stays.
func TestNamespaceIsTheEdgeNamespace(t *testing.T) {
	for _, args := range [][]string{{"-n", "edge-ns"}, {"--namespace=edge-ns"}} {
		o := parse(t, args...)
		if o.EdgeNamespace != "edge-ns" || o.connection.Namespace != nil {
			t.Errorf("%v: edge namespace %q, connection namespace %v", args, o.EdgeNamespace, o.connection.Namespace)
		}
	}
	o := parse(t)
	if o.EdgeNamespace != "" || o.UpstreamNamespace != "default" {
		t.Errorf("defaults: edge %q upstream %q", o.EdgeNamespace, o.UpstreamNamespace)
	}
	if o.resources != bootstrap.DefaultResources() || o.Resources != &o.resources {
		t.Errorf("resources %+v", o.resources)
	}
}

// TestBadInvocationsStopFirst: a missing or doubled output, bad resources and an unwritable Helm
// values file are one-line errors before any request upstream.
func TestBadInvocationsStopFirst(t *testing.T) {
	api := newFakeAPI(t)
	kubeconfig := api.kubeconfig(t)
	missing := filepath.Join(t.TempDir(), "no-such-dir", "values.yaml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-o/--output-file or --helm-values is required (a file, or - for standard output)"},
		{[]string{"-o", "-", "--helm-values", "-"}, "-o and --helm-values cannot both be - (standard output)"},
		{[]string{"-o", "-", "--requests-cpu=lots", "--limits-memory=64Mi", "--requests-memory=128Mi"},
			`--requests-cpu "lots" is not a quantity (examples: 100m, 0.5, 128Mi, 1Gi); --requests-memory 128Mi exceeds --limits-memory 64Mi`},
		{[]string{"-o", "-", "--helm-values", missing}, "cannot write the Helm values to " + missing + " (--helm-values): no such file or directory; nothing was changed upstream"},
		{[]string{"-o", "-", "--request-timeout=soon"}, "loading the kubeconfig: "},
	} {
		var stdout, stderr bytes.Buffer
		err := run(append([]string{"florin", "--syncer-image=s:1", "--kubeconfig=" + kubeconfig}, tc.args...), &stdout, &stderr)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	if n := len(api.seen()); n != 0 {
		t.Errorf("%d requests sent upstream", n)
	}
}
