// Command testenv starts (`up`) or stops (`down`) the local control plane of package testenv, for
// `make testenv` and `make testenv-down`. `up` returns once both apiservers are ready and leaves the
// processes running; running it again while they run does nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/kubestellar/syncer/test/testenv"
)

func main() {
	dir := flag.String("dir", ".testenv", "state folder")
	bin := flag.String("bin-dir", os.Getenv("E2E_BIN"), "folder with etcd, kube-apiserver and kube-controller-manager")
	flag.Parse()
	var err error
	switch flag.Arg(0) {
	case "up":
		err = up(*dir, *bin)
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
		err = fmt.Errorf("usage: testenv [-dir DIR] [-bin-dir DIR] up|down")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func up(dir, bin string) error {
	if testenv.Running(dir) {
		fmt.Printf("testenv: already running (state in %s)\n", dir)
		return nil
	}
	if _, err := testenv.StopDir(dir); err != nil { // clear a stale or half-started one
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{BinDir: bin, Dir: dir, Detach: true, Log: os.Stdout})
	if err != nil {
		return err
	}
	rel := func(p string) string {
		if r, err := filepath.Rel(".", p); err == nil {
			return r
		}
		return p
	}
	fmt.Printf("testenv: up.\n  kubectl --kubeconfig %s get ns   # upstream (mailbox workspace)\n  kubectl --kubeconfig %s get ns   # downstream (edge cluster)\n",
		rel(env.Upstream.Kubeconfig), rel(env.Downstream.Kubeconfig))
	return nil
}
