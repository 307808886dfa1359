// Command image builds the syncer's container image without a container engine: an OCI image index
// (one image per platform) made with go-containerregistry from two layers it writes itself, a
// distroless-style static base and the static /syncer, so no base image is pulled. It writes, under
// -out:
//
//	layout/                 an OCI image layout (skopeo copy --all oci:..., crane push --index, oras)
//	syncer-image.oci.tar    the same layout as one tar (docker load since Docker 25, podman load)
//	syncer-image.docker.tar one platform's image as a docker-archive (docker load, kind load)
//
// and, with -push, pushes the index to -tag's registry (credentials as docker login stores them).
// `image node-images` writes the test bed's pause and testapp images instead (nodeimages.go).
// hack/build-image.sh builds the binaries and runs it (make image); image_test.go inspects the
// result (make image-check).
package main

import (
	"archive/tar"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type binaries []string

func (b *binaries) String() string     { return strings.Join(*b, ",") }
func (b *binaries) Set(v string) error { *b = append(*b, v); return nil }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "node-images" {
		if err := runNodeImages(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "image:", err)
			os.Exit(1)
		}
		return
	}
	var bins binaries
	flag.Var(&bins, "binary", "os/arch=path of a static syncer built for that platform (repeat for each platform; the first is the index's first)")
	out := flag.String("out", "", "output directory (its layout/ and tarballs are replaced)")
	tag := flag.String("tag", "kubestellar-syncer:dev", "the image's name: in the layout's annotations and the docker-archive; where -push pushes")
	version := flag.String("version", "", "org.opencontainers.image.version")
	revision := flag.String("revision", "", "org.opencontainers.image.revision (the git commit)")
	source := flag.String("source", "https://github.com/kubestellar/syncer", "org.opencontainers.image.source")
	created := flag.Int64("created", 0, "the image's creation time and every file's, in Unix seconds (the commit's time: reproducible)")
	ca := flag.String("ca", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to ship (Debian's ca-certificates)")
	caCopyright := flag.String("ca-copyright", "/usr/share/doc/ca-certificates/copyright", "the CA bundle's licence, shipped beside it (empty: none)")
	dockerPlatform := flag.String("docker-platform", "", "the platform written to the docker-archive, which holds one (default: the first -binary's)")
	push := flag.Bool("push", false, "also push the index to -tag")
	flag.Parse()
	if err := run(*out, *tag, *dockerPlatform, *push, bins, spec{
		Version: *version, Revision: *revision, Source: *source, Created: time.Unix(*created, 0).UTC(),
	}, *ca, *caCopyright); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(out, tag, dockerPlatform string, push bool, bins []string, s spec, ca, caCopyright string) error {
	start := time.Now()
	if out == "" || len(bins) == 0 || s.Version == "" {
		return errors.New("-out, -version and at least one -binary are required")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag: %w", err)
	}
	if s.CABundle, err = os.ReadFile(ca); err != nil {
		return fmt.Errorf("the CA bundle (Debian: apt-get install ca-certificates): %w", err)
	}
	if caCopyright != "" {
		if s.CACopyright, err = os.ReadFile(caCopyright); err != nil {
			return fmt.Errorf("the CA bundle's licence (-ca-copyright '' to ship none): %w", err)
		}
	}
	var ps []platform
	for _, b := range bins {
		plat, path, ok := strings.Cut(b, "=")
		osName, arch, ok2 := strings.Cut(plat, "/")
		if !ok || !ok2 {
			return fmt.Errorf("-binary %q: want os/arch=path", b)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		ps = append(ps, platform{OS: osName, Arch: arch, Syncer: data})
	}
	idx, imgs, err := buildIndex(s, ps)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}

	// The layout, written beside the old one and swapped in whole.
	dir := filepath.Join(out, "layout")
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	lp, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          containerdName(ref),
	})); err != nil {
		return fmt.Errorf("writing the layout: %w", err)
	}
	// go-containerregistry writes layer blobs 0600 and index.json 0777 (less the umask): make the
	// layout readable by all, as any build output.
	if err := filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(path, mode)
	}); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	if err := tarDir(dir, filepath.Join(out, "syncer-image.oci.tar"), s.Created); err != nil {
		return err
	}
	if dockerPlatform == "" {
		dockerPlatform = ps[0].String()
	}
	dockerImg, ok := imgs[dockerPlatform]
	if !ok {
		return fmt.Errorf("-docker-platform %s: not built", dockerPlatform)
	}
	if err := tarball.WriteToFile(filepath.Join(out, "syncer-image.docker.tar"), ref, dockerImg); err != nil {
		return fmt.Errorf("writing the docker-archive: %w", err)
	}

	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image: %s index %s (%s, %s)\n", containerdName(ref), d, s.Version, s.Revision)
	for _, p := range ps {
		img := imgs[p.String()]
		md, _ := img.Digest()
		comp, uncomp, err := sizes(img)
		if err != nil {
			return err
		}
		fmt.Printf("image:   %-12s %s  %.1f MB compressed, %.1f MB unpacked\n", p, md, mb(comp), mb(uncomp))
	}
	fmt.Printf("image: wrote %s, %s and %s in %.1fs\n", dir, filepath.Join(out, "syncer-image.oci.tar"),
		filepath.Join(out, "syncer-image.docker.tar"), time.Since(start).Seconds())
	if push {
		if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		fmt.Printf("image: pushed %s@%s\n", containerdName(ref), d)
	}
	return nil
}

// containerdName is the image's full name as containerd (and so docker load of an OCI archive) reads
// it: docker.io/library/kubestellar-syncer:dev for kubestellar-syncer:dev.
func containerdName(ref name.Tag) string {
	n := ref.Name()
	if rest, ok := strings.CutPrefix(n, name.DefaultRegistry+"/"); ok {
		return "docker.io/" + rest
	}
	return n
}

func mb(n int64) float64 { return float64(n) / 1e6 }

// sizes is what a registry stores for an image (its layers, config and manifest, compressed) and
// what its layers unpack to.
func sizes(img v1.Image) (compressed, unpacked int64, err error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, 0, err
	}
	compressed = m.Config.Size + int64(len(raw))
	layers, err := img.Layers()
	if err != nil {
		return 0, 0, err
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return 0, 0, err
		}
		compressed += n
		rc, err := l.Uncompressed()
		if err != nil {
			return 0, 0, err
		}
		u, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return 0, 0, err
		}
		unpacked += u
	}
	return compressed, unpacked, nil
}

// tarDir writes dir's files into the tar file out, in lexical order, dated t and owned by root: the
// same layout gives the same tar.
func tarDir(dir, out string, t time.Time) error {
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: t, Format: tar.FormatPAX, Mode: 0o644, Typeflag: tar.TypeReg}
		if d.IsDir() {
			h.Name, h.Mode, h.Typeflag = h.Name+"/", 0o755, tar.TypeDir
			return tw.WriteHeader(h)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Size = int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}
