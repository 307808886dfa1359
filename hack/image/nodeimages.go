package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The test bed's node images (`image node-images`, hack/build-node-images.sh): what test/testenv
// imports into the node's containerd so that no image ever comes from outside the machine.
//
//	pause.docker.tar    the pod sandbox image containerd's sandbox_image names: pause/ built here
//	testapp.docker.tar  a workload image for tests and the demo: Debian's static busybox, every applet
//	                    a link in /bin (sh, sleep, httpd, wget, nc, ...), and /www/index.html for httpd
const (
	pauseTag   = "kubestellar-syncer-pause:dev"
	testappTag = "kubestellar-syncer-testapp:dev"
)

func runNodeImages(args []string) error {
	fs := flag.NewFlagSet("node-images", flag.ExitOnError)
	out := fs.String("out", "", "output directory: pause.docker.tar and testapp.docker.tar are replaced")
	pause := fs.String("pause", "", "the static pause binary (go build ./pause)")
	busybox := fs.String("busybox", "", "Debian's static busybox (busybox-static), run here for its list of applets")
	busyboxVersion := fs.String("busybox-version", "", "busybox-static's Debian version, for the testapp image's version label")
	pauseName := fs.String("pause-tag", pauseTag, "the pause image's name")
	testappName := fs.String("testapp-tag", testappTag, "the testapp image's name")
	created := fs.Int64("created", 0, "the images' creation time and every file's, in Unix seconds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *pause == "" || *busybox == "" {
		return fmt.Errorf("node-images: -out, -pause and -busybox are required")
	}
	start := time.Now()
	t := time.Unix(*created, 0).UTC()
	pauseBin, err := os.ReadFile(*pause)
	if err != nil {
		return err
	}
	bb, err := os.ReadFile(*busybox)
	if err != nil {
		return err
	}
	list, err := exec.Command(*busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %w", *busybox, err)
	}
	applets := strings.Fields(string(list))
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	pauseImg, err := singleLayerImage(t, []entry{{name: "pause", mode: 0o755, data: pauseBin}}, v1.Config{
		Entrypoint: []string{"/pause"},
		User:       "65535:65535", // as registry.k8s.io/pause
		Labels: map[string]string{
			"org.opencontainers.image.title":       "kubestellar-syncer-pause",
			"org.opencontainers.image.description": "the test bed's pod sandbox: hack/image/pause, built here from source",
		},
	}, "/pause: hack/image/pause (CGO_ENABLED=0, -trimpath, stripped)")
	if err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	testappImg, err := singleLayerImage(t, testappEntries(bb, applets), v1.Config{
		Cmd:        []string{"sh"},
		Env:        []string{"PATH=/bin"},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":       "kubestellar-syncer-testapp",
			"org.opencontainers.image.description": "the test bed's workload image: Debian's busybox-static, applets linked in /bin",
			"org.opencontainers.image.version":     *busyboxVersion,
		},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
	}, "Debian busybox-static "+*busyboxVersion+": /bin/busybox and a link in /bin per applet; /etc/passwd, /etc/group, /tmp, /www/index.html")
	if err != nil {
		return fmt.Errorf("testapp image: %w", err)
	}
	for _, im := range []struct {
		file, tag string
		img       v1.Image
	}{{"pause.docker.tar", *pauseName, pauseImg}, {"testapp.docker.tar", *testappName, testappImg}} {
		ref, err := name.NewTag(im.tag)
		if err != nil {
			return err
		}
		path := filepath.Join(*out, im.file)
		if err := tarball.WriteToFile(path+".tmp", ref, im.img); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return err
		}
		d, _ := im.img.Digest()
		fmt.Printf("image: %s %s in %s\n", containerdName(ref), d, path)
	}
	fmt.Printf("image: node images written in %.1fs\n", time.Since(start).Seconds())
	return nil
}

// testappEntries is the testapp image's one layer: busybox, its applets as links, a root and a
// nobody user, a sticky /tmp and a page for httpd.
func testappEntries(busybox []byte, applets []string) []entry {
	es := []entry{
		{name: "bin/", mode: 0o755},
		{name: "bin/busybox", mode: 0o755, data: busybox},
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnobody:x:65534:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{name: "root/", mode: 0o700},
		{name: "tmp/", mode: 0o1777},
		{name: "www/", mode: 0o755},
		{name: "www/index.html", mode: 0o644, data: []byte("kubestellar-syncer-testapp\n")},
	}
	for _, a := range applets {
		if a != "busybox" && !strings.Contains(a, "/") {
			es = append(es, entry{name: "bin/" + a, mode: 0o777, link: "busybox"})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	return es
}

// singleLayerImage makes an OCI image of this machine's platform from one layer of entries.
func singleLayerImage(t time.Time, entries []entry, cfg v1.Config, createdBy string) (v1.Image, error) {
	layer, err := layerOf(t, entries)
	if err != nil {
		return nil, err
	}
	img, err := imageOf(t, "linux", runtime.GOARCH, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{
		Created: v1.Time{Time: t}, Author: "hack/image", CreatedBy: createdBy,
	}})
}
