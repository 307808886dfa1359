// Command krewmanifest renders the krew plugin manifest (plugins/kubestellar.yaml, a Go template)
// for a release: its tag, and the sha256 of the plugin's archive of each platform, read from the
// release directory (kubectl-kubestellar-syncer_gen_<tag>_<os>_<arch>.tar.gz). hack/release.sh runs
// it; the result goes to standard output.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/template"
)

// platforms are the plugin's archives, by the template's keys.
var platforms = []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"}

func main() {
	tmpl := flag.String("template", "plugins/kubestellar.yaml", "the krew manifest template")
	tag := flag.String("tag", "", "the release's tag, e.g. v0.1.0")
	dir := flag.String("dir", "", "the release directory holding the plugin's archives")
	flag.Parse()
	if err := render(os.Stdout, *tmpl, *tag, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "krewmanifest:", err)
		os.Exit(1)
	}
}

func render(w io.Writer, tmplPath, tag, dir string) error {
	if tag == "" || dir == "" {
		return fmt.Errorf("-tag and -dir are required")
	}
	sums := map[string]string{}
	for _, p := range platforms {
		sum, err := sha256File(filepath.Join(dir, fmt.Sprintf("kubectl-kubestellar-syncer_gen_%s_%s.tar.gz", tag, p)))
		if err != nil {
			return err
		}
		sums[p] = sum
	}
	raw, err := os.ReadFile(tmplPath)
	if err != nil {
		return err
	}
	t, err := template.New("krew").Option("missingkey=error").Parse(string(raw))
	if err != nil {
		return err
	}
	return t.Execute(w, map[string]interface{}{"TagName": tag, "SHA256": sums})
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
