package main

import (
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestRun builds an image of stand-in binaries twice (the same digests: reproducible), writes the
// layout and tarballs, and pushes the index to a registry in memory.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(ca, "not a certificate, but bytes to ship")
	write(filepath.Join(dir, "amd64"), "amd64 syncer")
	write(filepath.Join(dir, "arm64"), "arm64 syncer")
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	tag := u.Host + "/kubestellar-syncer:test"
	bins := []string{"linux/amd64=" + filepath.Join(dir, "amd64"), "linux/arm64=" + filepath.Join(dir, "arm64")}
	s := spec{Version: "v0.0.0-test", Revision: "0123abcd", Source: "https://example.invalid/syncer", Created: time.Unix(1700000000, 0).UTC()}
	var digests []string
	for i, out := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")} {
		if err := run(out, tag, "linux/amd64", i == 1, bins, s, ca, ""); err != nil {
			t.Fatal(err)
		}
		p, err := layout.FromPath(filepath.Join(out, "layout"))
		if err != nil {
			t.Fatal(err)
		}
		ii, _ := p.ImageIndex()
		m, err := ii.IndexManifest()
		if err != nil || len(m.Manifests) != 1 {
			t.Fatalf("index.json: %+v %v", m, err)
		}
		if got := m.Manifests[0].Annotations["io.containerd.image.name"]; got != tag {
			t.Errorf("io.containerd.image.name %q, want %q", got, tag)
		}
		digests = append(digests, m.Manifests[0].Digest.String())
		oci, _ := os.ReadFile(filepath.Join(out, "syncer-image.oci.tar"))
		digests = append(digests, string(oci))
		if _, err := tarball.ImageFromPath(filepath.Join(out, "syncer-image.docker.tar"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if digests[0] != digests[2] || digests[1] != digests[3] {
		t.Errorf("two builds of the same inputs differ (index %s and %s, or their OCI tars)", digests[0], digests[2])
	}
	ref, _ := name.ParseReference(tag)
	pushed, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("the pushed index: %v", err)
	}
	if d, _ := pushed.Digest(); d.String() != digests[0] {
		t.Errorf("pushed %s, built %s", d, digests[0])
	}
	if err := run(filepath.Join(dir, "c"), tag, "linux/s390x", false, bins, s, ca, ""); err == nil || !strings.Contains(err.Error(), "s390x") {
		t.Errorf("a -docker-platform not built: %v", err)
	}
}
