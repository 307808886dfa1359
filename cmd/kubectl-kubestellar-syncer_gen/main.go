// Command kubectl-kubestellar-syncer_gen is the kubectl plugin `kubectl kubestellar syncer-gen`: run
// against the mailbox workspace, it creates the syncer's identity there and writes the manifest
// that runs the syncer in the edge cluster.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubestellar/syncer/pkg/bootstrap"
)

const usage = `Create the syncer's service account, RBAC and token in the mailbox workspace the kubeconfig
points at, and write a manifest that deploys the syncer in the edge cluster.

Usage:
  kubectl kubestellar syncer-gen <sync-target-name> --syncer-image <image> -o <file|-> [flags]

Flags:
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "syncer-gen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	opts := bootstrap.Options{UpstreamNamespace: "default", Replicas: 1, QPS: 500, Burst: 1000, Verbosity: 2,
		Lifetime: 365 * 24 * time.Hour, RBAC: bootstrap.RBACBroad}
	var kubeconfig, kubeContext, output string
	fs := pflag.NewFlagSet("syncer-gen", pflag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage+fs.FlagUsages()) }
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the mailbox workspace (default: $KUBECONFIG or ~/.kube/config).")
	fs.StringVar(&kubeContext, "context", "", "Context of the kubeconfig to use.")
	fs.StringVar(&opts.Image, "syncer-image", "", "The syncer's container image. Required.")
	fs.StringVarP(&output, "output-file", "o", "", "Where to write the edge manifest; - for standard output. Required.")
	fs.StringVar(&opts.UpstreamNamespace, "kcp-namespace", opts.UpstreamNamespace, "Upstream namespace of the syncer's service account and token Secret.")
	fs.StringVarP(&opts.EdgeNamespace, "namespace", "n", "", "Edge namespace the syncer runs in (default: the syncer ID).")
	fs.Int32Var(&opts.Replicas, "replicas", opts.Replicas, "Syncer replicas; more than one is safe (leader election).")
	fs.Float32Var(&opts.QPS, "qps", opts.QPS, "The syncer's --qps.")
	fs.IntVar(&opts.Burst, "burst", opts.Burst, "The syncer's --burst.")
	fs.IntVar(&opts.Verbosity, "syncer-verbosity", opts.Verbosity, "The syncer's -v.")
	fs.DurationVar(&opts.Lifetime, "lifetime", opts.Lifetime, "Lifetime of the upstream token (TokenRequest); the server may grant less.")
	fs.StringVar(&opts.RBAC, "rbac", opts.RBAC, `"broad": the syncer may read and write anything on both sides, so any later SyncerConfig works; "least": only what the current SyncerConfigs need (run syncer-gen again after changing them).`)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("expected one argument, the sync target name (see --help)")
	}
	opts.Name = fs.Arg(0)
	if output == "" {
		return fmt.Errorf("-o/--output-file is required (a file, or - for standard output)")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	res, err := bootstrap.Run(ctx, cfg, opts, os.Stderr)
	if err != nil {
		return err
	}
	if output == "-" {
		_, err := os.Stdout.Write(res.Manifest)
		return err
	}
	if err := os.WriteFile(output, res.Manifest, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, `
Wrote the edge cluster manifest to %s for namespace %q (it holds a token: keep it secret). Use

  KUBECONFIG=<edge-cluster-config> kubectl apply -f %q

to apply it. Use

  KUBECONFIG=<edge-cluster-config> kubectl get deployment -n %q %s

to verify the syncer pod is running.
`, output, res.Namespace, output, res.Namespace, res.ID)
	return nil
}
