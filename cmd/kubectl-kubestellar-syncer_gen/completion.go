package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/pkg/signature"
)

// completionTimeout bounds the request that completes the sync target name: a shell waits for it.
const completionTimeout = 5 * time.Second

// newCompletionCommand prints the shell completion scripts, made by Cobra for the root command: they
// call the binary's __complete, which completes flags, their values and the sync target name.
func newCompletionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script",
		Long: `Print the shell completion script of this binary, for example

  source <(kubectl-kubestellar-syncer_gen completion bash)

kubectl itself (v1.26 and later) completes the arguments of ` + "`kubectl kubestellar syncer-gen`" + ` by running
kubectl_complete-kubestellar-syncer_gen from PATH: make it a link to this binary (make build does,
in bin/); for krew's kubectl-kubestellar, link kubectl_complete-kubestellar to it.`,
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		Args:                  cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			default:
				return root.GenPowerShellCompletionWithDesc(out)
			}
		},
	}
}

// registerCompletions completes the values of the flags that have a closed set of values or name
// something in the kubeconfig; the others but file paths complete to nothing.
func (o *options) registerCompletions(cmd *cobra.Command) {
	fixed := func(values ...string) cobra.CompletionFunc {
		return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
	}
	must := func(err error) {
		if err != nil {
			panic(err) // a flag name below is wrong
		}
	}
	must(cmd.RegisterFlagCompletionFunc("rbac", fixed(bootstrap.RBACBroad, bootstrap.RBACLeast)))
	must(cmd.RegisterFlagCompletionFunc("signature-policy", fixed(string(signature.Off), string(signature.Warn), string(signature.Enforce), string(signature.Strict))))
	must(cmd.RegisterFlagCompletionFunc("context", o.completeKubeconfig(func(c kubeconfigNames) []string { return c.contexts })))
	must(cmd.RegisterFlagCompletionFunc("cluster", o.completeKubeconfig(func(c kubeconfigNames) []string { return c.clusters })))
	must(cmd.RegisterFlagCompletionFunc("user", o.completeKubeconfig(func(c kubeconfigNames) []string { return c.users })))
	for _, name := range []string{"syncer-image", "upstream-namespace", "kcp-namespace", "namespace", "replicas", "qps", "burst", "syncer-verbosity",
		"expected-objects", "max-objects-per-resource", "requests-cpu", "requests-memory", "limits-cpu", "limits-memory", "lifetime", "server", "token", "as", "as-group", "as-uid",
		"as-user-extra", "tls-server-name", "request-timeout", "apiexport-endpoint-slice"} {
		must(cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions))
	}
}

// kubeconfigNames are the names in the kubeconfig the flags so far choose.
type kubeconfigNames struct{ contexts, clusters, users []string }

// completeKubeconfig completes a flag from the names pick takes out of the kubeconfig.
func (o *options) completeKubeconfig(pick func(kubeconfigNames) []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		raw, err := o.connection.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names kubeconfigNames
		for name := range raw.Contexts {
			names.contexts = append(names.contexts, name)
		}
		for name := range raw.Clusters {
			names.clusters = append(names.clusters, name)
		}
		for name := range raw.AuthInfos {
			names.users = append(names.users, name)
		}
		return withPrefix(pick(names), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeSyncTargetName completes the argument with the names of the SyncerConfigs upstream (a
// sync target's SyncerConfig has its name), asked for with the connection flags given so far.
func (o *options) completeSyncTargetName(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, err := o.syncerConfigNames(cmd.Context())
	if err != nil {
		cobra.CompDebugln(fmt.Sprintf("listing SyncerConfigs: %v", err), true)
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// syncerConfigNames lists the SyncerConfigs upstream, within completionTimeout.
func (o *options) syncerConfigNames(ctx context.Context) ([]string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := o.connection.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 || cfg.Timeout > completionTimeout {
		cfg.Timeout = completionTimeout
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	list, err := dyn.Resource(edgev1.SyncerConfigResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, item := range list.Items {
		names = append(names, item.GetName())
	}
	return names, nil
}

// withPrefix are the names that begin with prefix, sorted.
func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
