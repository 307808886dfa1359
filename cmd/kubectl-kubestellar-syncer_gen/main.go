// Command kubectl-kubestellar-syncer_gen is the kubectl plugin `kubectl kubestellar syncer-gen`: run
// against the mailbox workspace, it creates the syncer's identity there and writes the manifest
// that runs the syncer in the edge cluster, or the values of the Helm chart that does.
//
// The binary answers to the name it is run under (see execute):
//   - kubectl-kubestellar-syncer_gen: the plugin (kubectl runs it for `kubectl kubestellar syncer-gen`);
//   - kubectl-kubestellar-sign: `kubectl kubestellar sign`, which signs manifests for an edge that
//     verifies what it applies (make build links it);
//   - kubectl-kubestellar: krew's link for its plugin "kubestellar"; kubectl runs it for `kubectl
//     kubestellar syncer-gen ...` and `kubectl kubestellar sign ...`, the command as the first argument;
//   - kubectl_complete-kubestellar-syncer_gen and kubectl_complete-kubestellar: the executables
//     kubectl (v1.26 and later) runs to complete a plugin's arguments; as links to the binary they
//     answer Cobra's __complete request for the plugin of the same name.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// The names the binary answers to.
const (
	pluginName = "kubectl-kubestellar-syncer_gen"
	// krewName is krew's link for the krew plugin "kubestellar" (krew links kubectl-<name>).
	krewName = "kubectl-kubestellar"
	// commandName is the plugin's command under `kubectl kubestellar`.
	commandName = "syncer-gen"
	// completePrefix begins the names of kubectl's plugin completion executables: it runs
	// kubectl_complete-<plugin> for kubectl-<plugin>.
	completePrefix = "kubectl_complete-"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := execute(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "syncer-gen:", err)
		os.Exit(1)
	}
}

// run is the plugin under its own name: --help and --version answer on stdout, progress goes to
// stderr, and the manifest to the -o file (or stdout for -).
func run(args []string, stdout, stderr io.Writer) error {
	return execute(context.Background(), pluginName, args, stdout, stderr)
}

// execute runs the command the binary is run as (argv0, see the package documentation) with args.
func execute(ctx context.Context, argv0 string, args []string, stdout, stderr io.Writer) error {
	name := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if rest, ok := strings.CutPrefix(name, completePrefix); ok {
		// kubectl passes the words after the plugin's name, the last one being the word to complete
		// ("" for a new one), and reads the candidates and Cobra's :<directive> line from stdout:
		// exactly what Cobra's __complete takes and prints.
		name = "kubectl-" + rest
		args = append([]string{cobra.ShellCompRequestCmd}, args...)
	}
	var root *cobra.Command
	switch name {
	case krewName:
		root = newKrewCommand(stdout, stderr)
	case signName:
		root = newSignCommand(signName, stdout)
	default:
		root = newCommand(pluginName, stdout, stderr)
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

// newKrewCommand is kubectl-kubestellar, whose one command is syncer-gen.
func newKrewCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:               krewName,
		Short:             "KubeStellar's kubectl plugin",
		Long:              "kubectl kubestellar holds KubeStellar's commands: syncer-gen and sign.",
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl kubestellar"},
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.AddCommand(newCommand(commandName, stdout, stderr), newSignCommand("sign", stdout))
	return root
}
