package bootstrap

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// values parses Helm values as Helm does (YAML into maps).
func values(t *testing.T, data []byte) map[string]interface{} {
	t.Helper()
	var v map[string]interface{}
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("the values are not YAML: %v\n%s", err, data)
	}
	return v
}

// lookup is the value at a dotted path of parsed values, and whether it is there.
func lookup(v map[string]interface{}, path string) (interface{}, bool) {
	var cur interface{} = v
	for _, key := range strings.Split(path, ".") {
		m, ok := cur.(map[string]interface{})
		if !ok {
			return nil, false
		}
		if cur, ok = m[key]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// TestHelmValues: the values are YAML holding the keys of charts/kubestellar-syncer's values.yaml
// with what the manifest holds: sync target, a kubeconfig that reaches the upstream with the token,
// the image, replicas, qps, burst, verbosity, resources and the edge rules.
func TestHelmValues(t *testing.T) {
	e := edge()
	custom, err := Resources{RequestsCPU: "250m", RequestsMemory: "", LimitsCPU: "1", LimitsMemory: "512Mi"}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	e.Resources = &custom
	data, err := e.HelmValues()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "# Values of the Helm chart charts/kubestellar-syncer for KubeStellar syncer \"kubestellar-syncer-florin-abcdefgh\"") ||
		!strings.Contains(string(data), "helm install kubestellar-syncer-florin-abcdefgh charts/kubestellar-syncer -n kubestellar-syncer-florin-abcdefgh --create-namespace -f <this file>") {
		t.Errorf("header:\n%s", data)
	}
	v := values(t, data)
	for path, want := range map[string]interface{}{
		"syncTarget.name":           "florin",
		"syncTarget.uid":            "3f1c",
		"image.repository":          "example.com/syncer",
		"image.tag":                 "dev",
		"replicas":                  float64(2),
		"qps":                       float64(50),
		"burst":                     float64(100),
		"verbosity":                 float64(2),
		"resources.requests.cpu":    "250m",
		"resources.requests.memory": nil, // null: removes the chart's default
		"resources.limits.cpu":      "1",
		"resources.limits.memory":   "512Mi",
	} {
		got, ok := lookup(v, path)
		if !ok || !cmp.Equal(got, want) {
			t.Errorf("%s = %#v (present %v), want %#v", path, got, ok, want)
		}
	}
	kubeconfig, _ := lookup(v, "upstream.kubeconfig")
	s, _ := kubeconfig.(string)
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(s))
	if err != nil {
		t.Fatalf("upstream.kubeconfig: %v", err)
	}
	if cfg.Host != "https://mailbox:6443" || cfg.BearerToken != "tok" || string(cfg.CAData) != "CA" {
		t.Errorf("upstream.kubeconfig gives %+v", cfg)
	}
	rules, _ := lookup(v, "rbac.rules")
	raw, err := yaml.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	var got []rbacv1.PolicyRule
	if err := yaml.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e.Rules, got); diff != "" {
		t.Errorf("rbac.rules (-manifest's +values'):\n%s", diff)
	}

	// The defaults, when Resources is nil: those of the manifest, none removed.
	e.Resources = nil
	data, err = e.HelmValues()
	if err != nil {
		t.Fatal(err)
	}
	v = values(t, data)
	for path, want := range map[string]interface{}{"resources.requests.cpu": "100m", "resources.requests.memory": "144Mi",
		"resources.limits.memory": "256Mi"} {
		if got, ok := lookup(v, path); !ok || got != want {
			t.Errorf("defaults: %s = %#v, want %#v", path, got, want)
		}
	}
	// Neither the defaults nor the chart have a CPU limit: no entry rather than null, which Helm would
	// keep and the Deployment read as a limit of 0.
	if got, ok := lookup(v, "resources.limits.cpu"); ok {
		t.Errorf("defaults: resources.limits.cpu = %#v, want no entry", got)
	}
	// None at all: null for each default, nothing else.
	e.Resources = &corev1.ResourceRequirements{}
	data, err = e.HelmValues()
	if err != nil {
		t.Fatal(err)
	}
	gotResources, _ := lookup(values(t, data), "resources")
	want := map[string]interface{}{"requests": map[string]interface{}{"cpu": nil, "memory": nil}, "limits": map[string]interface{}{"memory": nil}}
	if diff := cmp.Diff(want, gotResources); diff != "" {
		t.Errorf("no resources (-want +got):\n%s", diff)
	}
}

func TestSplitImage(t *testing.T) {
	for _, tc := range []struct{ ref, repository, tag string }{
		{"example.com/syncer:dev", "example.com/syncer", "dev"},
		{"kubestellar-syncer", "kubestellar-syncer", "latest"},
		{"localhost:5000/syncer", "localhost:5000/syncer", "latest"},
		{"localhost:5000/team/syncer:v0.1.0", "localhost:5000/team/syncer", "v0.1.0"},
		{"ghcr.io/ks/syncer@sha256:abc123", "ghcr.io/ks/syncer@sha256", "abc123"},
		{"ghcr.io/ks/syncer:v1@sha256:abc123", "ghcr.io/ks/syncer:v1@sha256", "abc123"},
	} {
		repository, tag := SplitImage(tc.ref)
		if repository != tc.repository || tag != tc.tag {
			t.Errorf("SplitImage(%q) = %q, %q; want %q, %q", tc.ref, repository, tag, tc.repository, tc.tag)
		}
		if tc.tag != "latest" && repository+":"+tag != tc.ref {
			t.Errorf("the chart's join of %q gives %q", tc.ref, repository+":"+tag)
		}
	}
}

// TestRunHelmValuesHoldIdentity: the values Run returns hold the identity it created upstream (the
// ServiceAccount's UID, the token it requested) and the options.
func TestRunHelmValuesHoldIdentity(t *testing.T) {
	f := newFakeUpstream(t, nil)
	opts := testOptions()
	opts.Resources = &Resources{RequestsCPU: "50m", LimitsMemory: "256Mi"}
	res, out, err := f.run(t, opts)
	if err != nil {
		t.Fatalf("%v; output:\n%s", err, out)
	}
	v := values(t, res.HelmValues)
	for path, want := range map[string]interface{}{"syncTarget.name": "florin", "syncTarget.uid": res.UID, "image.repository": "example.com/syncer",
		"image.tag": "dev", "resources.requests.cpu": "50m", "resources.requests.memory": nil, "resources.limits.memory": "256Mi"} {
		if got, ok := lookup(v, path); !ok || got != want {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	if res.UID != "sa-uid" {
		t.Errorf("UID %q", res.UID)
	}
	kubeconfig, _ := lookup(v, "upstream.kubeconfig")
	s, _ := kubeconfig.(string)
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != testHost || cfg.BearerToken != "token-1" {
		t.Errorf("upstream.kubeconfig gives host %q token %q", cfg.Host, cfg.BearerToken)
	}
	if !strings.Contains(string(res.Manifest), "cpu: 50m") || !strings.Contains(string(res.Manifest), "memory: 256Mi") {
		t.Errorf("the manifest's Deployment lacks the resources:\n%s", res.Manifest)
	}
}
