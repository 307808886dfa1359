// Command kubectl-kubestellar-syncer_gen is the kubectl plugin `kubectl kubestellar syncer-gen`: run
// against the mailbox workspace, it creates the syncer's identity there and writes the manifest
// that runs the syncer in the edge cluster.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/pkg/version"
)

// usage begins --help: what the plugin does, then how to call it; the flags follow.
const usage = `kubectl kubestellar syncer-gen bootstraps a KubeStellar syncer: in the mailbox workspace the
kubeconfig points at, it creates (or updates in place) the syncer's ServiceAccount, ClusterRole and
ClusterRoleBinding, requests a fresh token for it and installs the SyncerConfig CRD when that API is
not served; then it writes the manifest that runs the syncer in the edge cluster (namespace, RBAC,
the upstream kubeconfig with that token, and a Deployment). It checks first that the endpoint answers,
that the user may do all of this and that the output file can be written, and stops with one line
before changing anything otherwise.

Usage:
  kubectl kubestellar syncer-gen <sync-target-name> --syncer-image <image> -o <file|-> [flags]

Flags:
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "syncer-gen:", err)
		os.Exit(1)
	}
}

// run is the plugin: --help and --version answer on stdout, progress goes to stderr, and the
// manifest to the -o file (or stdout for -).
func run(args []string, stdout, stderr io.Writer) error {
	opts := bootstrap.Options{UpstreamNamespace: "default", Replicas: 1, QPS: 500, Burst: 1000, Verbosity: 2,
		Lifetime: 365 * 24 * time.Hour, RBAC: bootstrap.RBACBroad}
	var kubeconfig, kubeContext, output string
	var printVersion bool
	fs := pflag.NewFlagSet("syncer-gen", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stdout, usage+fs.FlagUsages()) }
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
	fs.BoolVar(&printVersion, "version", false, "Print the version, git revision, Go version and platform, and exit.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w (see --help)", err)
	}
	if printVersion {
		_, err := fmt.Fprintln(stdout, version.Get().Line("kubectl-kubestellar-syncer_gen"))
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("expected one argument, the sync target name (see --help)")
	}
	opts.Name = fs.Arg(0)
	if output == "" {
		return fmt.Errorf("-o/--output-file is required (a file, or - for standard output)")
	}
	// Before anything changes upstream (a run rotates the token): a manifest that cannot be written
	// would leave the running syncer with a token nobody has.
	if err := bootstrap.CheckWritable(output); err != nil {
		return fmt.Errorf("%w; nothing was changed upstream", err)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	res, err := bootstrap.Run(ctx, cfg, opts, stderr)
	if err != nil {
		return err
	}
	if output == "-" {
		_, err := stdout.Write(res.Manifest)
		return err
	}
	// The manifest holds a token: an existing file keeps its mode under WriteFile, so set it too.
	if err := os.WriteFile(output, res.Manifest, 0o600); err != nil {
		return fmt.Errorf("writing the manifest to %s (the upstream token was already issued: run again to issue another): %w", output, err)
	}
	if err := os.Chmod(output, 0o600); err != nil {
		return fmt.Errorf("making %s readable by its owner only: %w", output, err)
	}
	fmt.Fprintf(stderr, `
Wrote the edge cluster manifest to %s for namespace %q (it holds a token: keep it secret). Use

  KUBECONFIG=<edge-cluster-config> kubectl apply -f %q

to apply it. Use

  KUBECONFIG=<edge-cluster-config> kubectl get deployment -n %q %s

to verify the syncer pod is running.
`, output, res.Namespace, output, res.Namespace, res.ID)
	return nil
}
