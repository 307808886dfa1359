// Command testenv starts (`up`) or stops (`down`) the local control plane of package testenv, for
// `make testenv` and `make testenv-down`, by default with a real node at the edge (-node=false: none;
// -node-image adds an image to it). `up` returns once both apiservers are ready and leaves the
// processes running; running it again while they run does nothing. With -kcp, `up` also starts kcp and
// makes the mailbox workspaces (root:espw, root:mailbox bound to it, root:mailbox-plain with CRDs),
// with kubeconfigs DIR/kcp-<workspace>.kubeconfig. `down` also removes what the node made.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/kubestellar/syncer/test/testenv"
)

func main() {
	dir := flag.String("dir", ".testenv", "state folder")
	bin := flag.String("bin-dir", os.Getenv("E2E_BIN"), "folder with etcd, kube-apiserver and kube-controller-manager")
	kcp := flag.Bool("kcp", false, "also start kcp and make the mailbox workspaces")
	kcpBin := flag.String("kcp-bin-dir", os.Getenv("KCP_BIN"), "folder with kcp and crd-puller")
	node := flag.Bool("node", true, "give the edge a real node: containerd, kubelet, kube-proxy and kube-scheduler (needs root and `make node-bins`)")
	nodeDir := flag.String("node-dir", envOr("NODE_DIR", testenv.DefaultNodeDir()), "folder with the node's packages and images (`make node-bins`)")
	var nodeImages []string
	flag.Func("node-image", "an image archive to import into the node's containerd when present, e.g. _output/image/syncer-image.docker.tar (repeat)", func(s string) error {
		if _, err := os.Stat(s); err == nil {
			nodeImages = append(nodeImages, s)
		}
		return nil
	})
	upstreamControllers := flag.Bool("upstream-controllers", true, "run the controllers every cluster runs (root-CA publisher, ServiceAccount, token) on upstream too, as a real upstream does (-upstream-controllers=false: a bare apiserver)")
	flag.Parse()
	var err error
	switch flag.Arg(0) {
	case "up":
		err = up(*dir, testenv.Options{BinDir: *bin, KCP: *kcp, KCPBinDir: *kcpBin, UpstreamControllers: *upstreamControllers,
			Node: *node, NodeDir: *nodeDir, NodeImages: nodeImages})
	case "down":
		var stopped []string
		stopped, err = testenv.StopDir(*dir)
		for _, s := range stopped {
			fmt.Println("testenv: stopped", s)
		}
		if err == nil {
			fmt.Println("testenv: down; removed", *dir)
		}
	default:
		err = fmt.Errorf("usage: testenv [-dir DIR] [-bin-dir DIR] [-kcp [-kcp-bin-dir DIR]] [-upstream-controllers=false] [-node=false | -node-dir DIR -node-image FILE...] up|down")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func up(dir string, opts testenv.Options) error {
	if testenv.Running(dir) {
		if env, err := testenv.Load(dir); err == nil && opts.KCP && env.KCP == nil {
			return fmt.Errorf("testenv: already running without kcp (state in %s); `make testenv-down` first", dir)
		}
		fmt.Printf("testenv: already running (state in %s)\n", dir)
		return nil
	}
	if _, err := testenv.StopDir(dir); err != nil { // clear a stale or half-started one
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	opts.Dir, opts.Detach, opts.Log = dir, true, os.Stdout
	env, err := testenv.Start(ctx, opts)
	if err != nil {
		return err
	}
	var mb *testenv.KCPMailboxes
	if opts.KCP {
		if mb, err = env.SetUpKCPMailboxes(ctx, testenv.KCPMailboxOptions{Plain: true}); err != nil {
			_ = env.Stop()
			return err
		}
	}
	wd, _ := os.Getwd()
	rel := func(p string) string {
		if r, err := filepath.Rel(wd, p); err == nil {
			return r
		}
		return p
	}
	fmt.Printf("testenv: up.\n  kubectl --kubeconfig %s get ns   # upstream (mailbox workspace)\n  kubectl --kubeconfig %s get ns   # downstream (edge cluster)\n",
		rel(env.Upstream.Kubeconfig), rel(env.Downstream.Kubeconfig))
	if n := env.Node; n != nil {
		fmt.Printf("  kubectl --kubeconfig %s get nodes,pods -A -o wide   # the edge's node %s (%s), pods on %s\n", rel(env.Downstream.Kubeconfig), n.Name, n.IP, n.PodCIDR)
		fmt.Printf("  images there: %s (ctr --address %s -n k8s.io images ls)\n", strings.Join(n.Images, ", "), rel(n.ContainerdAddress))
	}
	if mb != nil {
		fmt.Printf("  kubectl --kubeconfig %s get deployments,services -A   # kcp mailbox workspace, APIs bound from %s\n", rel(mb.Mailbox.Kubeconfig), mb.Provider.Path)
		fmt.Printf("  kubectl --kubeconfig %s get crds   # kcp mailbox workspace with the CRDs themselves\n", rel(mb.Plain.Kubeconfig))
		fmt.Printf("  kubectl --kubeconfig %s get apiexports,apiresourceschemas   # kcp provider workspace\n", rel(mb.Provider.Kubeconfig))
	}
	return nil
}
