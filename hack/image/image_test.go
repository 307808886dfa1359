package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Every path the image holds (the flattened file system), and nothing else.
var wantPaths = []string{
	"/etc", "/etc/group", "/etc/nsswitch.conf", "/etc/passwd", "/etc/ssl", "/etc/ssl/certs",
	"/etc/ssl/certs/ca-certificates.crt", "/home", "/home/nonroot", "/root", "/syncer", "/tmp",
}

// The CA bundle's licence, when the build machine has it (hack/image's -ca-copyright).
var optionalPaths = []string{
	"/usr", "/usr/share", "/usr/share/doc", "/usr/share/doc/ca-certificates",
	"/usr/share/doc/ca-certificates/copyright",
}

// TestImage inspects the image hack/build-image.sh built (make image-check sets IMAGE_OUT): the
// layout and the two tarballs, each platform's config, every file of every layer, the static
// /syncer run from the unpacked root file system as the image's user, the image rebuilt from what it
// holds (the same digest), and the image run by an OCI runtime (runc or crun) where one is found and
// this machine lets it make containers (else that part is skipped, saying why).
func TestImage(t *testing.T) {
	out := os.Getenv("IMAGE_OUT")
	if out == "" {
		skip(t, "IMAGE_OUT is not set: `make image-check` builds the image and runs this test on it")
	}
	p, err := layout.FromPath(filepath.Join(out, "layout"))
	if err != nil {
		t.Fatalf("the OCI layout (run make image): %v", err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	topm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topm.Manifests) != 1 {
		t.Fatalf("index.json lists %d entries, want the one index", len(topm.Manifests))
	}
	d := topm.Manifests[0]
	if d.MediaType != types.OCIImageIndex || d.Annotations["org.opencontainers.image.ref.name"] == "" || d.Annotations["io.containerd.image.name"] == "" {
		t.Fatalf("index.json's entry: media type %s, annotations %v; want an OCI index with ref.name and io.containerd.image.name", d.MediaType, d.Annotations)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	imgs := map[string]v1.Image{}
	for _, m := range im.Manifests {
		if m.Platform == nil || m.MediaType != types.OCIManifestSchema1 {
			t.Fatalf("index entry %s: media type %s, platform %v; want an OCI manifest with its platform", m.Digest, m.MediaType, m.Platform)
		}
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		platforms = append(platforms, m.Platform.String())
		imgs[m.Platform.String()] = img
	}
	if want := strings.Fields(os.Getenv("IMAGE_EXPECT_PLATFORMS")); len(want) > 0 && !slices.Equal(platforms, want) {
		t.Errorf("the index's platforms are %v, want %v", platforms, want)
	}
	if !slices.Contains(platforms, "linux/amd64") {
		t.Errorf("the index has no linux/amd64 image: %v", platforms)
	}
	for _, m := range im.Manifests {
		t.Run(m.Platform.String(), func(t *testing.T) { checkImage(t, imgs[m.Platform.String()], *m.Platform, m.Digest) })
	}
	t.Run("tarballs", func(t *testing.T) { checkTarballs(t, out, d.Digest, imgs["linux/amd64"]) })
}

// file is one path of the image as its layers leave it.
type file struct {
	hdr  *tar.Header
	data []byte
}

func checkImage(t *testing.T, img v1.Image, plat v1.Platform, digest v1.Hash) {
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest %s, config %s: want OCI media types", m.MediaType, m.Config.MediaType)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != plat.OS || cf.Architecture != plat.Architecture || plat.OS != "linux" {
		t.Errorf("config says %s/%s, the index %s", cf.OS, cf.Architecture, plat)
	}
	if c.User != "65532:65532" {
		t.Errorf("User %q, want 65532:65532 (the Deployment's runAsUser, distroless's nonroot)", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/syncer"}) || len(c.Cmd) != 0 {
		t.Errorf("Entrypoint %q Cmd %q, want [/syncer] and no Cmd (the Deployment passes args only)", c.Entrypoint, c.Cmd)
	}
	if c.WorkingDir != "/home/nonroot" {
		t.Errorf("WorkingDir %q, want /home/nonroot", c.WorkingDir)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	if env["PATH"] == "" || env["SSL_CERT_FILE"] != "/etc/ssl/certs/ca-certificates.crt" || len(env) != 2 {
		t.Errorf("Env %q, want PATH and SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt only", c.Env)
	}
	for _, k := range []string{"source", "version", "revision", "title", "description"} {
		if c.Labels["org.opencontainers.image."+k] == "" {
			t.Errorf("no label org.opencontainers.image.%s: %v", k, c.Labels)
		}
	}
	version, revision := c.Labels["org.opencontainers.image.version"], c.Labels["org.opencontainers.image.revision"]
	if want := os.Getenv("IMAGE_EXPECT_REVISION"); want != "" && revision != want {
		t.Errorf("revision label %q, want this checkout's %s (a stale _output/image?)", revision, want)
	}
	if _, ok := c.ExposedPorts["8443/tcp"]; !ok || len(c.ExposedPorts) != 2 {
		t.Errorf("ExposedPorts %v, want 8443/tcp (metrics) and 8081/tcp (health)", c.ExposedPorts)
	}
	if _, ok := c.ExposedPorts["8081/tcp"]; !ok {
		t.Errorf("ExposedPorts %v, want 8081/tcp (health)", c.ExposedPorts)
	}

	// Every layer: its blob matches its digest and its content the config's diff ID; its files are
	// listed; the last layer's entry for a path wins.
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != len(cf.RootFS.DiffIDs) || len(cf.History) != len(layers) {
		t.Fatalf("%d layers, %d diff IDs, %d history entries", len(layers), len(cf.RootFS.DiffIDs), len(cf.History))
	}
	files := map[string]file{}
	var compressed, unpacked int64
	for i, l := range layers {
		mt, _ := l.MediaType()
		if mt != types.OCILayer {
			t.Errorf("layer %d: media type %s, want %s", i, mt, types.OCILayer)
		}
		want, _ := l.Digest()
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		got, n, err := v1.SHA256(rc)
		rc.Close()
		if err != nil || got != want {
			t.Fatalf("layer %d: blob hashes to %s (%v), the manifest says %s", i, got, err, want)
		}
		compressed += n
		rc, err = l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		unpacked += int64(len(raw))
		if got, _, _ := v1.SHA256(bytes.NewReader(raw)); got != cf.RootFS.DiffIDs[i] {
			t.Fatalf("layer %d: content hashes to %s, the config's diff ID is %s", i, got, cf.RootFS.DiffIDs[i])
		}
		t.Logf("layer %d %s (%s):", i, want, cf.History[i].CreatedBy)
		tr := tar.NewReader(bytes.NewReader(raw))
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("layer %d: %v", i, err)
			}
			name := path.Clean("/" + h.Name)
			if name != "/"+strings.TrimSuffix(h.Name, "/") || strings.Contains(path.Base(name), ".wh.") {
				t.Errorf("layer %d: entry %q (not a clean path, or a whiteout)", i, h.Name)
			}
			if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir {
				t.Errorf("layer %d: %s is of tar type %q: only files and directories are expected", i, name, h.Typeflag)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("  %c %04o %5d:%-5d %9d %s", map[byte]byte{tar.TypeDir: 'd', tar.TypeReg: '-'}[h.Typeflag], h.Mode, h.Uid, h.Gid, h.Size, name)
			files[name] = file{hdr: h, data: data}
		}
	}
	cfgSize := m.Config.Size
	raw, _ := img.RawManifest()
	t.Logf("%s %s: %d layers, %.1f MB compressed (layers, config, manifest), %.1f MB unpacked",
		plat, digest, len(layers), float64(compressed+cfgSize+int64(len(raw)))/1e6, float64(unpacked)/1e6)

	var got []string
	for n := range files {
		if !slices.Contains(optionalPaths, n) {
			got = append(got, n)
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, wantPaths) {
		t.Errorf("the image holds %q, want exactly %q (and optionally %q)", got, wantPaths, optionalPaths)
	}
	for _, sh := range []string{"/bin/sh", "/bin/bash", "/bin/busybox", "/usr/bin/sh", "/sh"} {
		if _, ok := files[sh]; ok {
			t.Errorf("%s: the image must have no shell", sh)
		}
	}
	for n, f := range files {
		h := f.hdr
		if h.Mode&0o002 != 0 && n != "/tmp" {
			t.Errorf("%s (mode %o): writable by others", n, h.Mode)
		}
		if h.Uid == 0 && h.Mode&0o020 != 0 && n != "/tmp" {
			t.Errorf("%s (mode %o): owned by root and writable by its group", n, h.Mode)
		}
		if h.Mode&0o6000 != 0 || (h.Mode&0o1000 != 0 && n != "/tmp") {
			t.Errorf("%s (mode %o): setuid, setgid or sticky", n, h.Mode)
		}
		if n != "/home/nonroot" && (h.Uid != 0 || h.Gid != 0) {
			t.Errorf("%s is owned by %d:%d, want root (only the nonroot user's home is its)", n, h.Uid, h.Gid)
		}
	}
	checkEntry(t, files, "/tmp", tar.TypeDir, 0o1777, 0)
	checkEntry(t, files, "/home/nonroot", tar.TypeDir, 0o700, 65532)
	checkEntry(t, files, "/root", tar.TypeDir, 0o700, 0)
	checkEntry(t, files, "/syncer", tar.TypeReg, 0o755, 0)
	for _, n := range []string{"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/ssl/certs/ca-certificates.crt"} {
		checkEntry(t, files, n, tar.TypeReg, 0o644, 0)
	}
	if !hasLine(files["/etc/passwd"].data, "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin") ||
		!hasLine(files["/etc/passwd"].data, "root:x:0:0:root:/root:/sbin/nologin") {
		t.Errorf("/etc/passwd has no nonroot 65532 (home /home/nonroot) or root entry:\n%s", files["/etc/passwd"].data)
	}
	if !hasLine(files["/etc/group"].data, "nonroot:x:65532:") || !hasLine(files["/etc/group"].data, "root:x:0:") {
		t.Errorf("/etc/group has no nonroot 65532 or root:\n%s", files["/etc/group"].data)
	}
	if !hasLine(files["/etc/nsswitch.conf"].data, "hosts: files dns") {
		t.Errorf("/etc/nsswitch.conf: no 'hosts: files dns':\n%s", files["/etc/nsswitch.conf"].data)
	}
	if n := countCerts(t, files["/etc/ssl/certs/ca-certificates.crt"].data); n < 1 {
		t.Errorf("the CA bundle holds no certificate")
	} else {
		t.Logf("CA bundle: %d certificates", n)
	}

	// The binary, as the image holds it.
	rootfs := unpack(t, files)
	syncer := filepath.Join(rootfs, "syncer")
	checkStatic(t, syncer, plat)
	if plat.OS == runtime.GOOS && plat.Architecture == runtime.GOARCH {
		help := runDirect(t, rootfs, c, "--help")
		if !strings.Contains(help, "--upstream-kubeconfig") {
			t.Errorf("/syncer --help printed no --upstream-kubeconfig:\n%s", help)
		}
		var wantVersion string
		if strings.Contains(help, "--version") {
			wantVersion = fmt.Sprintf("syncer %s (revision %s, ", version, revision)
			line := strings.TrimSpace(runDirect(t, rootfs, c, "--version"))
			if !strings.HasPrefix(line, wantVersion) || !strings.HasSuffix(line, ", "+plat.OS+"/"+plat.Architecture+")") {
				t.Errorf("/syncer --version printed %q, want %q...%s/%s) as the labels say", line, wantVersion, plat.OS, plat.Architecture)
			}
		} else {
			t.Logf("/syncer has no --version: checked --help only")
		}
		t.Run("runtime", func(t *testing.T) { runInRuntime(t, rootfs, c, help, wantVersion) })
	} else {
		t.Logf("%s: not run here (this machine is %s/%s); its ELF header and build information are checked", plat, runtime.GOOS, runtime.GOARCH)
	}

	// The image is a function of its inputs: the same binary, CA bundle, labels and time give the
	// same digest (no build-time clock, no random, no file order from the build machine).
	s := spec{Version: version, Revision: revision, Source: c.Labels["org.opencontainers.image.source"],
		Created: cf.Created.Time, CABundle: files["/etc/ssl/certs/ca-certificates.crt"].data}
	if f, ok := files["/usr/share/doc/ca-certificates/copyright"]; ok {
		s.CACopyright = f.data
	}
	again, err := buildImage(s, platform{OS: plat.OS, Arch: plat.Architecture, Syncer: files["/syncer"].data})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := again.Digest(); d != digest {
		t.Errorf("rebuilt from the same inputs, the image's digest is %s, not %s: the build is not reproducible", d, digest)
	}
}

func checkEntry(t *testing.T, files map[string]file, name string, typ byte, mode int64, owner int) {
	t.Helper()
	f, ok := files[name]
	if !ok {
		t.Errorf("%s: missing", name)
		return
	}
	if f.hdr.Typeflag != typ || f.hdr.Mode != mode || f.hdr.Uid != owner || f.hdr.Gid != owner {
		t.Errorf("%s: type %q mode %o owner %d:%d, want type %q mode %o owner %d:%d", name, f.hdr.Typeflag, f.hdr.Mode, f.hdr.Uid, f.hdr.Gid, typ, mode, owner, owner)
	}
}

func hasLine(data []byte, line string) bool {
	return slices.Contains(strings.Split(string(data), "\n"), line)
}

func countCerts(t *testing.T, data []byte) int {
	n := 0
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return n
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			t.Errorf("CA bundle: certificate %d: %v", n+1, err)
		}
		n++
	}
}

// unpack writes the image's files into a new root file system, with their owners when this test
// runs as root. Its parents are opened to all so the image's user can reach /syncer.
func unpack(t *testing.T, files map[string]file) string {
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names) // parents first
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		f, dst := files[n], filepath.Join(rootfs, n)
		var err error
		if f.hdr.Typeflag == tar.TypeDir {
			err = os.Mkdir(dst, 0o700)
		} else {
			err = os.WriteFile(dst, f.data, 0o600)
		}
		if err == nil && os.Geteuid() == 0 {
			err = os.Lchown(dst, f.hdr.Uid, f.hdr.Gid)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Modes last (a 0700 directory of another user's, written into first, would stop a non-root test).
	for _, n := range names {
		if err := os.Chmod(filepath.Join(rootfs, n), os.FileMode(files[n].hdr.Mode&0o777)|modeFlags(files[n].hdr.Mode)); err != nil {
			t.Fatal(err)
		}
	}
	for d := filepath.Dir(rootfs); d != os.TempDir() && d != "/" && os.Geteuid() == 0; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return rootfs
}

func modeFlags(mode int64) os.FileMode {
	var m os.FileMode
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}

// checkStatic: an ELF executable for the platform, with no interpreter and no shared library, built
// without cgo for that platform from the syncer's main package.
func checkStatic(t *testing.T, bin string, plat v1.Platform) {
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("/syncer: not an ELF file: %v", err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[plat.Architecture]
	if f.Machine != want || f.Type != elf.ET_EXEC {
		t.Errorf("/syncer: ELF %v %v, want %v ET_EXEC for %s", f.Machine, f.Type, want, plat)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("/syncer has an ELF interpreter (PT_INTERP): dynamically linked, it cannot run on an image without libc")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("/syncer needs shared libraries %v (DT_NEEDED; %v): it cannot run on an image without them", libs, err)
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("/syncer: no Go build information: %v", err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if bi.Path != "github.com/kubestellar/syncer/cmd/syncer" || settings["CGO_ENABLED"] != "0" ||
		settings["GOOS"] != plat.OS || settings["GOARCH"] != plat.Architecture || settings["-trimpath"] != "true" {
		t.Errorf("/syncer: built from %s with %v; want cmd/syncer, CGO_ENABLED=0, -trimpath, %s", bi.Path, settings, plat)
	}
}

// runDirect runs /syncer from the unpacked root file system with the image's environment and
// working directory only. When the test is root, chrooted there (so with nothing of this machine's:
// no libc, no loader) as the image's user.
func runDirect(t *testing.T, rootfs string, c v1.Config, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(rootfs, "syncer"), args...)
	cmd.Env = c.Env
	cmd.Dir = filepath.Join(rootfs, c.WorkingDir)
	if os.Geteuid() == 0 {
		cmd.Path, cmd.Dir = "/syncer", c.WorkingDir
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("/syncer %s (from the image's root file system): %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// runtimeBin is the OCI runtime to run the image with: IMAGE_RUNTIME, else runc or crun on PATH;
// why none, else.
func runtimeBin() (string, string) {
	why := "IMAGE_RUNTIME is unset"
	if p := os.Getenv("IMAGE_RUNTIME"); p != "" {
		_, err := os.Stat(p)
		if err == nil {
			return p, ""
		}
		why = fmt.Sprintf("IMAGE_RUNTIME: %v", err)
	}
	for _, n := range []string{"runc", "crun"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, ""
		}
	}
	return "", why + ", and neither runc nor crun is on PATH (make image-check fetches runc from Debian)"
}

// runInRuntime runs the image's entrypoint in a container made by an OCI runtime from the unpacked
// root file system and the image's config: its user, environment and working directory, a read-only
// root, no capabilities, no new privileges (as the Deployment's security context). The runtime must
// first make a container (create) on this machine, else the test is skipped with its error: a
// sandbox without the namespaces, mounts or cgroups it needs is no fault of the image.
func runInRuntime(t *testing.T, rootfs string, c v1.Config, wantHelp, wantVersion string) {
	rt, why := runtimeBin()
	if rt == "" {
		skip(t, "no OCI runtime: "+why)
	}
	if os.Geteuid() != 0 {
		// Rootless, the runtime may map this user only (more needs newuidmap and /etc/subuid ranges),
		// and it needs the container's root mapped: the image's user 65532 would be unmapped.
		skip(t, "not root: a rootless runtime cannot map both the container's root and the image's user 65532 without subordinate IDs (newuidmap, /etc/subuid); run the test as root to run the image in a container")
	}
	ver, _ := exec.Command(rt, "--version").Output()
	t.Logf("runtime %s: %s", rt, strings.SplitN(string(ver), "\n", 2)[0])
	state := t.TempDir()
	n := 0
	run := func(verb string, args ...string) (string, string, int) {
		n++
		bundle := filepath.Join(t.TempDir(), "bundle")
		if err := os.Mkdir(bundle, 0o700); err != nil {
			t.Fatal(err)
		}
		writeRuntimeConfig(t, bundle, rootfs, c, args)
		id := fmt.Sprintf("kubestellar-syncer-image-test-%d-%d", os.Getpid(), n)
		stdout, stderr := filepath.Join(bundle, "stdout"), filepath.Join(bundle, "stderr")
		code := runtimeCmd(t, rt, state, stdout, stderr, verb, "--bundle", bundle, id)
		if verb == "create" {
			runtimeCmd(t, rt, state, os.DevNull, os.DevNull, "delete", "--force", id)
		}
		o, _ := os.ReadFile(stdout)
		e, _ := os.ReadFile(stderr)
		return string(o), string(e), code
	}
	if _, stderr, code := run("create", append(c.Entrypoint, "--help")...); code != 0 {
		skip(t, fmt.Sprintf("%s cannot make a container on this machine (create exited %d), so the image was not run in one:\n%s", rt, code, stderr))
	}
	stdout, stderr, code := run("run", append(c.Entrypoint, "--help")...)
	if code != 0 || stdout != wantHelp {
		t.Fatalf("%s run: /syncer --help exited %d; its output differs from the direct run's:\n%s\nstderr:\n%s", rt, code, stdout, stderr)
	}
	t.Logf("%s ran the image: /syncer --help on a read-only root, no capabilities, exit 0, %d lines of help", filepath.Base(rt), strings.Count(stdout, "\n"))
	// Not root: /root (0700, root's) is closed to the process, so the kubeconfig there cannot even
	// be looked for (root, even without capabilities, would find it missing instead).
	stdout, stderr, code = run("run", append(c.Entrypoint, "--upstream-kubeconfig=/root/kubeconfig",
		"--sync-target-name=image-test", "--sync-target-uid=image-test")...)
	if code == 0 || !strings.Contains(stderr, "/root/kubeconfig: permission denied") {
		t.Fatalf("%s run: /syncer --upstream-kubeconfig=/root/kubeconfig exited %d, want a failure to stat it as a user other than root (permission denied):\n%s%s", rt, code, stdout, stderr)
	}
	t.Logf("%s ran the image as %s (not root: %s)", filepath.Base(rt), c.User, strings.TrimSpace(stderr))
	if wantVersion != "" {
		stdout, stderr, code = run("run", append(c.Entrypoint, "--version")...)
		if code != 0 || !strings.HasPrefix(stdout, wantVersion) {
			t.Fatalf("%s run: /syncer --version exited %d, printed %q (want %q...)\nstderr:\n%s", rt, code, stdout, wantVersion, stderr)
		}
		t.Logf("%s ran the image: %s", filepath.Base(rt), strings.TrimSpace(stdout))
	}
}

// runtimeCmd runs the runtime with its state under state and the container's standard output and
// error in files (a container outliving `create` would hold a pipe open), and returns its exit code.
func runtimeCmd(t *testing.T, rt, state, stdout, stderr string, args ...string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, rt, append([]string{"--root", state}, args...)...)
	o, err := os.Create(stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	e, err := os.Create(stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, o, e
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	default:
		fmt.Fprintf(e, "%s %s: %v\n", rt, strings.Join(args, " "), err)
		return -1
	}
}

// writeRuntimeConfig writes an OCI runtime config.json (runtime-spec 1.0) for the image's config, as
// a container engine would: the user, environment, working directory and entrypoint from the image;
// a read-only root; no capabilities, no new privileges; its own PID, IPC, UTS, mount and network
// namespaces.
func writeRuntimeConfig(t *testing.T, bundle, rootfs string, c v1.Config, args []string) {
	var uid, gid uint32
	if _, err := fmt.Sscanf(c.User, "%d:%d", &uid, &gid); err != nil {
		t.Fatalf("User %q: %v", c.User, err)
	}
	mount := func(dst, typ, src string, opts ...string) map[string]any {
		return map[string]any{"destination": dst, "type": typ, "source": src, "options": opts}
	}
	mounts := []map[string]any{
		mount("/proc", "proc", "proc"),
		mount("/dev", "tmpfs", "tmpfs", "nosuid", "strictatime", "mode=755", "size=65536k"),
		mount("/dev/pts", "devpts", "devpts", "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"),
		mount("/dev/shm", "tmpfs", "shm", "nosuid", "noexec", "nodev", "mode=1777", "size=65536k"),
		mount("/dev/mqueue", "mqueue", "mqueue", "nosuid", "noexec", "nodev"),
		mount("/sys", "sysfs", "sysfs", "nosuid", "noexec", "nodev", "ro"),
	}
	namespaces := []map[string]string{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}, {"type": "network"}}
	linux := map[string]any{
		"maskedPaths": []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
			"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"},
		"readonlyPaths": []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
	}
	linux["namespaces"] = namespaces
	none := []string{}
	cfg := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"terminal": false,
			"user":     map[string]uint32{"uid": uid, "gid": gid},
			"args":     args,
			"env":      c.Env,
			"cwd":      c.WorkingDir,
			"capabilities": map[string][]string{
				"bounding": none, "effective": none, "inheritable": none, "permitted": none, "ambient": none,
			},
			"rlimits":         []map[string]any{{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}},
			"noNewPrivileges": true,
		},
		"root":     map[string]any{"path": rootfs, "readonly": true},
		"hostname": "syncer",
		"mounts":   mounts,
		"linux":    linux,
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkTarballs: the OCI tar holds the layout (the same index), and the docker-archive the
// linux/amd64 image (the same config and layers).
func checkTarballs(t *testing.T, out string, index v1.Hash, amd64 v1.Image) {
	dir := t.TempDir()
	f, err := os.Open(filepath.Join(out, "syncer-image.oci.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+h.Name)))
		if h.Typeflag == tar.TypeDir {
			err = os.MkdirAll(dst, 0o755)
		} else {
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(dst, data, 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("syncer-image.oci.tar: not an OCI layout: %v", err)
	}
	ii, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := ii.IndexManifest()
	if err != nil || len(m.Manifests) != 1 || m.Manifests[0].Digest != index {
		t.Fatalf("syncer-image.oci.tar: index.json %+v (%v), want the layout's index %s", m, err, index)
	}
	if _, err := ii.ImageIndex(index); err != nil {
		t.Fatal(err)
	}

	img, err := tarball.ImageFromPath(filepath.Join(out, "syncer-image.docker.tar"), nil)
	if err != nil {
		t.Fatalf("syncer-image.docker.tar: %v", err)
	}
	got, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := amd64.ConfigName()
	if got != want {
		t.Errorf("syncer-image.docker.tar: config %s, the layout's linux/amd64 image has %s", got, want)
	}
	gl, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	wl, _ := amd64.Layers()
	if len(gl) != len(wl) {
		t.Fatalf("syncer-image.docker.tar: %d layers, want %d", len(gl), len(wl))
	}
	for i := range gl {
		g, _ := gl[i].DiffID()
		w, _ := wl[i].DiffID()
		if g != w {
			t.Errorf("syncer-image.docker.tar: layer %d is %s, want %s", i, g, w)
		}
	}
}

// skip skips what this machine cannot do, except in CI ($CI set), which provides it (the image
// built, runc from Debian's package, root): there a skip would pass without running, so it fails.
func skip(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("would skip in CI, which provides what this test needs: %s", reason)
	}
	t.Skip(reason)
}
