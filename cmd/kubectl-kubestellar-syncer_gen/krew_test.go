package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's Plugin (v1alpha2) a manifest must fill.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats,omitempty"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

const krewManifest = "../../plugins/kubestellar.yaml"

// TestKrewManifest: plugins/kubestellar.yaml is YAML as it stands; rendered for a release it is a
// krew Plugin with every required field, one archive per platform (linux and darwin, amd64 and
// arm64) under the release's URL, and a name whose krew link is the name under which the binary
// takes `syncer-gen` as its command, so that krew users invoke `kubectl kubestellar syncer-gen`.
func TestKrewManifest(t *testing.T) {
	raw, err := os.ReadFile(krewManifest)
	if err != nil {
		t.Fatal(err)
	}
	var unrendered krewPlugin
	if err := yaml.UnmarshalStrict(raw, &unrendered); err != nil {
		t.Fatalf("the template is not YAML: %v", err)
	}

	sums := map[string]string{}
	for i, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
		sums[p] = strings.Repeat(fmt.Sprintf("%x", i+10), 64)
	}
	tmpl, err := template.New("krew").Option("missingkey=error").Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var rendered bytes.Buffer
	if err := tmpl.Execute(&rendered, map[string]interface{}{"TagName": "v0.1.0", "SHA256": sums}); err != nil {
		t.Fatalf("rendering: %v", err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(rendered.Bytes(), &p); err != nil {
		t.Fatalf("the rendered manifest: %v\n%s", err, rendered.String())
	}

	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" {
		t.Errorf("apiVersion %q kind %q", p.APIVersion, p.Kind)
	}
	if !regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(p.Metadata.Name) {
		t.Errorf("name %q: krew names are lowercase words joined by -", p.Metadata.Name)
	}
	// krew links bin as kubectl-<name>, each - of the name made _ (pluginNameToBin in krew).
	if link := "kubectl-" + strings.ReplaceAll(p.Metadata.Name, "-", "_"); link != krewName {
		t.Errorf("krew links the plugin as %s; the binary takes syncer-gen as its command under %s", link, krewName)
	}
	if p.Spec.Version != "v0.1.0" || !strings.HasPrefix(p.Spec.Homepage, "https://") || p.Spec.ShortDescription == "" ||
		len(p.Spec.ShortDescription) > 60 || strings.HasSuffix(p.Spec.ShortDescription, ".") || len(p.Spec.Description) < 100 {
		t.Errorf("version %q, homepage %q, shortDescription %q (%d characters), description of %d characters",
			p.Spec.Version, p.Spec.Homepage, p.Spec.ShortDescription, len(p.Spec.ShortDescription), len(p.Spec.Description))
	}
	if !strings.Contains(p.Spec.Description, "kubectl kubestellar syncer-gen") || !strings.Contains(p.Spec.Description, "kubectl_complete-kubestellar") {
		t.Error("the description does not show the invocation and the completion link")
	}
	seen := map[string]bool{}
	for _, pl := range p.Spec.Platforms {
		platform := pl.Selector.MatchLabels["os"] + "_" + pl.Selector.MatchLabels["arch"]
		if len(pl.Selector.MatchLabels) != 2 || seen[platform] {
			t.Errorf("selector %v", pl.Selector.MatchLabels)
		}
		seen[platform] = true
		want := "https://github.com/kubestellar/syncer/releases/download/v0.1.0/kubectl-kubestellar-syncer_gen_v0.1.0_" + platform + ".tar.gz"
		if pl.URI != want {
			t.Errorf("%s: uri %q, want %q", platform, pl.URI, want)
		}
		if pl.Sha256 != sums[platform] || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(pl.Sha256) {
			t.Errorf("%s: sha256 %q", platform, pl.Sha256)
		}
		if pl.Bin != pluginName || len(pl.Files) == 0 || pl.Files[0].From != pluginName || pl.Files[0].To != "." {
			t.Errorf("%s: bin %q, files %+v", platform, pl.Bin, pl.Files)
		}
	}
	if len(seen) != 4 || !seen["linux_amd64"] || !seen["linux_arm64"] || !seen["darwin_amd64"] || !seen["darwin_arm64"] {
		t.Errorf("platforms %v", seen)
	}
}
