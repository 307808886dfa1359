package release

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubestellar/syncer/test/support"
)

// release is the directory make release wrote (RELEASE_DIR) and its version (RELEASE_VERSION).
func release(t *testing.T) (dir, version string) {
	t.Helper()
	dir, version = os.Getenv("RELEASE_DIR"), os.Getenv("RELEASE_VERSION")
	if dir == "" || version == "" {
		support.Skip(t, "RELEASE_DIR and RELEASE_VERSION name a release to check: run make release-check")
	}
	return dir, version
}

func sha256Of(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestFilesAndChecksums: the release holds exactly the files it promises, and SHA256SUMS gives each
// one's checksum.
func TestFilesAndChecksums(t *testing.T) {
	dir, v := release(t)
	want := []string{"SHA256SUMS", "kubestellar.yaml", "kubestellar-syncer-" + strings.TrimPrefix(v, "v") + ".tgz",
		"kubestellar-syncer_" + v + "_image.oci.tar", "syncer_" + v + "_linux_amd64", "syncer_" + v + "_linux_arm64"}
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
		want = append(want, "kubectl-kubestellar-syncer_gen_"+v+"_"+p+".tar.gz")
	}
	slices.Sort(want)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	summed := map[string]bool{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		summed[name] = true
		if got := sha256Of(t, filepath.Join(dir, name)); got != sum {
			t.Errorf("%s: sha256 %s, SHA256SUMS says %s", name, got, sum)
		}
	}
	for _, name := range want {
		if !summed[name] && name != "SHA256SUMS" {
			t.Errorf("SHA256SUMS has no line for %s", name)
		}
	}
}

// TestBinariesTellTheVersion: the syncer and the plugin (from its archive, as krew unpacks it) of
// this machine's platform print the release's version.
func TestBinariesTellTheVersion(t *testing.T) {
	dir, v := release(t)
	if runtime.GOOS != "linux" {
		t.Skip("the syncer is built for linux only")
	}
	plugin := filepath.Join(t.TempDir(), "kubectl-kubestellar-syncer_gen")
	extract(t, filepath.Join(dir, fmt.Sprintf("kubectl-kubestellar-syncer_gen_%s_linux_%s.tar.gz", v, runtime.GOARCH)), "kubectl-kubestellar-syncer_gen", plugin)
	for _, bin := range []string{filepath.Join(dir, "syncer_"+v+"_linux_"+runtime.GOARCH), plugin} {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), " "+v+" ") {
			t.Errorf("%s --version: %q, %v; want version %s", filepath.Base(bin), out, err, v)
		}
	}
}

// extract writes the one file name of a .tar.gz to path (executable), failing on anything else in it.
func extract(t *testing.T, archive, name, path string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	found := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != name || found {
			t.Fatalf("%s holds %s, want only %s", filepath.Base(archive), h.Name, name)
		}
		if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: %s has mode %o, owner %d:%d; want 755, 0:0", filepath.Base(archive), name, h.Mode, h.Uid, h.Gid)
		}
		found = true
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatalf("%s holds no %s", filepath.Base(archive), name)
	}
}

// TestKrewManifest: the rendered krew manifest is the release's version, and each platform's
// sha256 is its archive's.
func TestKrewManifest(t *testing.T) {
	dir, v := release(t)
	raw, err := os.ReadFile(filepath.Join(dir, "kubestellar.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Spec struct {
			Version   string `json:"version"`
			Platforms []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.Version != v || len(p.Spec.Platforms) != 4 {
		t.Fatalf("version %q, %d platforms", p.Spec.Version, len(p.Spec.Platforms))
	}
	seen := map[string]bool{}
	for _, pl := range p.Spec.Platforms {
		key := pl.Selector.MatchLabels["os"] + "/" + pl.Selector.MatchLabels["arch"]
		if seen[key] {
			t.Errorf("platform %s twice", key)
		}
		seen[key] = true
		archive := fmt.Sprintf("kubectl-kubestellar-syncer_gen_%s_%s_%s.tar.gz", v, pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"])
		if !strings.HasSuffix(pl.URI, "/"+v+"/"+archive) || pl.SHA256 != sha256Of(t, filepath.Join(dir, archive)) {
			t.Errorf("platform %v: uri %s sha256 %s; want the archive %s and its checksum", pl.Selector.MatchLabels, pl.URI, pl.SHA256, archive)
		}
	}
}

// TestChartPackage: the packaged chart renders with only the required values, running the image
// tagged with the release's version.
func TestChartPackage(t *testing.T) {
	dir, v := release(t)
	helm := os.Getenv("HELM_BIN")
	if helm == "" {
		support.Skip(t, "HELM_BIN is helm (make helm-bin)")
	}
	out, err := exec.Command(helm, "template", "florin", filepath.Join(dir, "kubestellar-syncer-"+strings.TrimPrefix(v, "v")+".tgz"),
		"--set", "syncTarget.name=florin", "--set", "syncTarget.uid=u", "--set", "upstream.existingSecret=mailbox").CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `image: "kubestellar-syncer:`+v+`"`) {
		t.Errorf("the chart does not run kubestellar-syncer:%s:\n%s", v, out)
	}
}

// TestImageLayout: the image is an OCI layout (oci-layout, and an index of linux/amd64 and
// linux/arm64 manifests).
func TestImageLayout(t *testing.T) {
	dir, v := release(t)
	f, err := os.Open(filepath.Join(dir, "kubestellar-syncer_"+v+"_image.oci.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if name := strings.TrimPrefix(h.Name, "./"); name == "oci-layout" || name == "index.json" || strings.HasPrefix(name, "blobs/") {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[name] = b
		}
	}
	if _, ok := files["oci-layout"]; !ok {
		t.Fatal("no oci-layout file")
	}
	var index struct {
		Manifests []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) == 0 {
		t.Fatalf("index.json: %v, %d manifests", err, len(index.Manifests))
	}
	var platforms []string
	for _, m := range index.Manifests {
		blob := files["blobs/"+strings.Replace(m.Digest, ":", "/", 1)]
		var inner struct {
			Manifests []struct {
				Platform struct {
					OS           string `json:"os"`
					Architecture string `json:"architecture"`
				} `json:"platform"`
			} `json:"manifests"`
		}
		if err := json.Unmarshal(blob, &inner); err != nil {
			t.Fatalf("%s: %v", m.Digest, err)
		}
		for _, im := range inner.Manifests {
			platforms = append(platforms, im.Platform.OS+"/"+im.Platform.Architecture)
		}
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
}

// TestEveryBinaryIsItsPlatforms: each syncer binary, and the plugin in each archive, is an executable
// of the OS and architecture its name says.
func TestEveryBinaryIsItsPlatforms(t *testing.T) {
	dir, v := release(t)
	elfMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	machoCPU := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}
	check := func(path, goos, arch string) {
		t.Helper()
		switch goos {
		case "linux":
			f, err := elf.Open(path)
			if err != nil {
				t.Errorf("%s: not an ELF executable: %v", filepath.Base(path), err)
				return
			}
			defer f.Close()
			if f.Machine != elfMachine[arch] || f.Type != elf.ET_EXEC {
				t.Errorf("%s: machine %v type %v, want %v executable", filepath.Base(path), f.Machine, f.Type, elfMachine[arch])
			}
		case "darwin":
			f, err := macho.Open(path)
			if err != nil {
				t.Errorf("%s: not a Mach-O executable: %v", filepath.Base(path), err)
				return
			}
			defer f.Close()
			if f.Cpu != machoCPU[arch] || f.Type != macho.TypeExec {
				t.Errorf("%s: cpu %v type %v, want %v executable", filepath.Base(path), f.Cpu, f.Type, machoCPU[arch])
			}
		}
	}
	for _, arch := range []string{"amd64", "arm64"} {
		check(filepath.Join(dir, "syncer_"+v+"_linux_"+arch), "linux", arch)
	}
	for _, goos := range []string{"linux", "darwin"} {
		for _, arch := range []string{"amd64", "arm64"} {
			plugin := filepath.Join(t.TempDir(), "kubectl-kubestellar-syncer_gen")
			extract(t, filepath.Join(dir, fmt.Sprintf("kubectl-kubestellar-syncer_gen_%s_%s_%s.tar.gz", v, goos, arch)), "kubectl-kubestellar-syncer_gen", plugin)
			check(plugin, goos, arch)
		}
	}
}
