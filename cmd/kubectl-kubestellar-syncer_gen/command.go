package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/pkg/legacyflags"
	"github.com/kubestellar/syncer/pkg/signature"
	"github.com/kubestellar/syncer/pkg/version"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// usage begins --help: what the plugin does, then how to call it; the flags follow.
const usage = `kubectl kubestellar syncer-gen bootstraps a KubeStellar syncer: in the mailbox workspace the
kubeconfig points at, it creates (or updates in place) the syncer's ServiceAccount, ClusterRole and
ClusterRoleBinding, requests a fresh token for it and installs the SyncerConfig CRD when that API is
not served; then it writes the manifest that runs the syncer in the edge cluster (namespace, RBAC,
the upstream kubeconfig with that token, and a Deployment), and/or the values with which the Helm
chart charts/kubestellar-syncer installs the same. It checks first that the endpoint answers, that
the user may do all of this and that the output files can be written, and stops with one line
before changing anything otherwise.

Usage:
  kubectl kubestellar syncer-gen <sync-target-name> --syncer-image <image> -o <file|-> [--helm-values <file|->] [flags]
  kubectl kubestellar syncer-gen <sync-target-name> --syncer-image <image> --helm-values <file|-> [flags]
  kubectl kubestellar syncer-gen completion bash|zsh|fish|powershell

`

// commandsHelp ends --help.
const commandsHelp = `
Commands:
  completion bash|zsh|fish|powershell   Print the shell completion script of this binary. kubectl
                                        completes ` + "`kubectl kubestellar syncer-gen`" + ` through the executable
                                        kubectl_complete-kubestellar-syncer_gen (a link to this binary;
                                        ` + "`make build`" + ` makes it in bin/): see docs/install.md.
`

// defaultRequestTimeout bounds each request unless --request-timeout is given: an unusable endpoint
// is an error within seconds, not a hang (kubestellar/kubestellar#1310).
const defaultRequestTimeout = "15s"

// options are the plugin's flags.
type options struct {
	bootstrap.Options
	resources bootstrap.Resources
	// expectedObjects is --expected-objects: the memory request and limit derive from it unless
	// --requests-memory or --limits-memory is given.
	expectedObjects int
	// connection are kubectl's flags choosing the mailbox workspace and the credentials.
	connection         *genericclioptions.ConfigFlags
	output, helmValues string
	version            bool
	// labels is release-0.14's --labels, validated and otherwise unused (as there); legacyLogs checks
	// its klog flags.
	labels     []string
	legacyLogs func() error
	// signatureKeyFiles are --signature-public-keys, read into Options.SignatureKeys.
	signatureKeyFiles []string
}

func newOptions() *options {
	o := &options{
		Options:         bootstrap.DefaultOptions(),
		resources:       bootstrap.DefaultResources(),
		expectedObjects: bootstrap.DefaultExpectedObjects,
		connection:      genericclioptions.NewConfigFlags(true),
	}
	o.Resources = &o.resources
	// -n/--namespace has been the edge namespace since the first syncer-gen, as in KubeStellar's; the
	// upstream namespace is --upstream-namespace (release-0.14: --kcp-namespace). kubectl's meaning (the namespace of the request) is not
	// offered: it would change what an existing command line does.
	o.connection.Namespace = nil
	o.connection.CacheDir = nil // no discovery cache is read or written
	o.connection.Timeout = ptr.To(defaultRequestTimeout)
	return o
}

// addFlags adds the plugin's own flags (the connection flags are o.connection's).
func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Image, "syncer-image", "", "The syncer's container image. Required.")
	fs.StringVarP(&o.output, "output-file", "o", "", "Where to write the edge manifest; - for standard output. This or --helm-values is required.")
	fs.StringVar(&o.helmValues, "helm-values", "", "Where to write the values of the Helm chart charts/kubestellar-syncer for this syncer (the same identity, image and settings as the manifest; they hold the token); - for standard output. With or without -o.")
	fs.StringVar(&o.UpstreamNamespace, "upstream-namespace", o.UpstreamNamespace, "Upstream namespace of the syncer's service account and token Secret (release-0.14: --kcp-namespace).")
	fs.StringVarP(&o.EdgeNamespace, "namespace", "n", "", "Edge namespace the syncer runs in (default: the syncer ID).")
	fs.Int32Var(&o.Replicas, "replicas", o.Replicas, "Syncer replicas; more than one is safe (leader election).")
	fs.Float32Var(&o.QPS, "qps", o.QPS, "The syncer's --upstream-qps: its client-side limit to the upstream (the edge has none by default).")
	fs.IntVar(&o.Burst, "burst", o.Burst, "The syncer's --upstream-burst, to the upstream.")
	fs.IntVar(&o.Verbosity, "syncer-verbosity", o.Verbosity, "The syncer's -v.")
	fs.IntVar(&o.MaxObjectsPerResource, "max-objects-per-resource", o.MaxObjectsPerResource, "The syncer's --max-objects-per-resource: how many objects of one resource upstream it holds and syncs; past it that resource is held, not synced, and said upstream (SelectionValid). 0: no limit. Default: twice --expected-objects (at least 1000), so that a mailbox that makes more holds that resource up rather than makes the syncer run out of memory.")
	fs.StringVar(&o.APIExportEndpointSlice, "apiexport-endpoint-slice", "", "Make a syncer that serves every kcp workspace bound to an APIExport (the syncer's --apiexport-endpoint-slice): the name of the APIExportEndpointSlice in the provider workspace, which --kubeconfig then points at. The identity may read that slice and the export's content, and nothing else there; the SyncerConfigs are the bound workspaces' own.")
	fs.StringVar(&o.SyncerConfigSelector, "syncer-config-selector", "", "The syncer's --syncer-config-selector: a label selector of the SyncerConfigs (and EdgeSyncConfigs) it reads, for several syncers sharing one upstream; --rbac=least grants only what those need. Empty: all of them.")
	fs.StringVar(&o.resources.RequestsCPU, "requests-cpu", o.resources.RequestsCPU, "CPU the syncer container requests; empty: no request.")
	fs.IntVar(&o.expectedObjects, "expected-objects", o.expectedObjects, "How many objects the syncer will hold: those of the selected resources upstream (every namespace's, in a shared upstream). The memory request and limit derive from it (64Mi + 8Ki per object; the limit room for twice the objects, at least 256Mi) unless --requests-memory or --limits-memory is given.")
	fs.StringVar(&o.resources.RequestsMemory, "requests-memory", o.resources.RequestsMemory, "Memory the syncer container requests; empty: no request. Default: derived from --expected-objects.")
	fs.StringVar(&o.resources.LimitsCPU, "limits-cpu", o.resources.LimitsCPU, "CPU limit of the syncer container; empty (the default): none, so that a resync is not throttled.")
	fs.StringVar(&o.resources.LimitsMemory, "limits-memory", o.resources.LimitsMemory, "Memory limit of the syncer container; empty: none. Default: derived from --expected-objects.")
	fs.DurationVar(&o.Lifetime, "lifetime", o.Lifetime, "How long each upstream token lives (TokenRequest): the first, minted now, and each the syncer renews when half of it has gone, so that a site cut off from its mailbox for up to 40% of it comes back by itself; longer, it may need bootstrapping again. At least 10m; the server may grant less.")
	fs.StringVar(&o.RBAC, "rbac", o.RBAC, `"broad": the syncer may read and write anything on both sides, so any later SyncerConfig works; "least": only what the current SyncerConfigs need (run syncer-gen again after changing them).`)
	fs.StringVar(&o.SignaturePolicy, "signature-policy", "Off", "The syncer's --signature-policy: Off, Warn, Enforce (apply only what a key of --signature-public-keys signed: kubectl kubestellar sign) or Strict (Enforce, and only what was signed for this sync target, never below the serial applied: sign --targets --serial).")
	fs.StringSliceVar(&o.signatureKeyFiles, "signature-public-keys", nil, "PEM ed25519 public keys (files) the syncer verifies signatures with, held at the edge in the Secret <id>-signature-keys (several for a rotation: re-run syncer-gen and apply; the syncer reads them again without a restart). Required unless --signature-policy=Off.")
	fs.BoolVar(&o.Fence, "fence", o.Fence, "Bound what the syncer writes at the edge by the edge owner's fence, held by the edge's apiserver: the syncer writes as the ServiceAccount <id>-executor, granted what --rbac gives but no RBAC escalation, and a ValidatingAdmissionPolicy <id>-fence keeps it out of the protected namespaces, admission webhooks, ClusterRoleBindings and aggregated ClusterRoles (Kubernetes 1.30 or later at the edge). false: the syncer writes as itself.")
	fs.StringSliceVar(&o.ProtectedNamespaces, "fence-protected-namespaces", o.ProtectedNamespaces, "More namespaces the fence keeps the syncer out of (objects in them, and the Namespaces themselves), besides its own and kube-system, kube-node-lease and kube-public, which it always keeps it out of.")
	fs.BoolVar(&o.AllowWebhooks, "fence-allow-webhooks", false, "Let the syncer write admission webhook configurations through the fence (admission policies stay out of reach: Kubernetes exempts them from admission control).")
	fs.BoolVar(&o.AllowEscalation, "fence-allow-escalation", false, "Let the syncer write ClusterRoleBindings, ClusterRoles that aggregate into others, and Roles and bindings that grant more than its executor holds (escalate and bind on roles and clusterroles).")
	fs.StringSliceVar(&o.Allow, "fence-allow", nil, "Let the syncer write through the fence what it otherwise keeps it from, by name: resources that act on the whole cluster (as resource.group), a Service's externalIPs (service-external-ips), a CRD's conversion webhook (crd-conversion-webhooks), NetworkPolicies, ResourceQuotas and LimitRanges in namespaces the syncer did not make (policies-in-edge-namespaces). One of: "+strings.Join(wellknown.FenceAllowNames(), ", ")+".")
	fs.BoolVar(&o.version, "version", false, "Print the version, git revision, Go version and platform, and exit.")
	fs.BoolP("help", "h", false, "Print this help and exit.")
	// Release-0.14 command lines keep working.
	fs.StringSliceVar(&o.labels, "labels", nil, "")
	_ = fs.MarkDeprecated("labels", "it has no effect, as in release-0.14 (its values are still checked to be key=value labels)")
	fs.StringVar(&o.UpstreamNamespace, "kcp-namespace", o.UpstreamNamespace, "")
	_ = fs.MarkDeprecated("kcp-namespace", "use --upstream-namespace instead (it names the upstream namespace of any upstream, kcp or not)")
	fs.IntP("v", "v", 0, "")
	_ = fs.MarkDeprecated("v", "syncer-gen writes its progress to standard error at one level; --syncer-verbosity sets the syncer's -v")
	o.legacyLogs = legacyflags.Klog(fs)
}

// newCommand is syncer-gen, named name (the binary's name when it is the root, so that the
// completion scripts it prints name it).
func newCommand(name string, stdout, stderr io.Writer) *cobra.Command {
	return newOptions().command(name, stdout, stderr)
}

// command is syncer-gen on these options.
func (o *options) command(name string, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   name + " <sync-target-name>",
		Short: "Bootstrap a syncer: its identity upstream, and its manifest or Helm values for the edge",
		// Checked in run, with a message that says what the argument is.
		Args:              cobra.ArbitraryArgs,
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl kubestellar syncer-gen"},
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		ValidArgsFunction: o.completeSyncTargetName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(cmd.Flags()); err != nil {
				return err
			}
			return o.run(cmd.Context(), args, stdout, stderr)
		},
	}
	plugin := pflag.NewFlagSet("plugin", pflag.ContinueOnError)
	o.addFlags(plugin)
	connection := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	o.connection.AddFlags(connection)
	cmd.Flags().AddFlagSet(plugin)
	cmd.Flags().AddFlagSet(connection)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w (see --help)", err) })
	defaultHelp := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c != cmd {
			defaultHelp(c, args)
			return
		}
		fmt.Fprint(c.OutOrStdout(), usage+"Flags:\n"+plugin.FlagUsages()+
			"\nConnection flags (kubectl's: they choose the mailbox workspace and the credentials; -n is the edge namespace above):\n"+
			connection.FlagUsages()+commandsHelp)
	})
	cmd.AddCommand(newCompletionCommand())
	o.registerCompletions(cmd)
	return cmd
}

// complete derives the memory request and limit, and the syncer's object limit, from
// --expected-objects, each unless its own flag was given.
func (o *options) complete(fs *pflag.FlagSet) error {
	if o.expectedObjects < 0 {
		return fmt.Errorf("--expected-objects must not be negative (see --help)")
	}
	if err := o.legacyLogs(); err != nil {
		return err
	}
	for _, l := range o.labels {
		if _, err := labels.ConvertSelectorToLabelsMap(l); err != nil || !strings.Contains(l, "=") {
			return fmt.Errorf("--labels %q: want key=value labels", l)
		}
	}
	if err := o.readSignatureKeys(); err != nil {
		return err
	}
	if !o.Fence {
		for _, name := range []string{"fence-protected-namespaces", "fence-allow-webhooks", "fence-allow-escalation", "fence-allow"} {
			if fs.Changed(name) {
				return fmt.Errorf("--%s needs --fence (see --help)", name)
			}
		}
	}
	if o.MaxObjectsPerResource < 0 {
		return fmt.Errorf("--max-objects-per-resource must not be negative (see --help)")
	}
	if !fs.Changed("max-objects-per-resource") {
		o.MaxObjectsPerResource = bootstrap.MaxObjectsFor(o.expectedObjects)
	}
	derived := bootstrap.ResourcesFor(o.expectedObjects)
	if !fs.Changed("requests-memory") {
		o.resources.RequestsMemory = derived.RequestsMemory
	}
	if !fs.Changed("limits-memory") {
		o.resources.LimitsMemory = derived.LimitsMemory
	}
	return nil
}

// readSignatureKeys checks the signature policy and reads the public keys it needs.
func (o *options) readSignatureKeys() error {
	policy, err := signature.ParsePolicy(o.SignaturePolicy)
	if err != nil {
		return fmt.Errorf("--signature-policy: %w", err)
	}
	o.SignaturePolicy = string(policy)
	switch {
	case policy == signature.Off && len(o.signatureKeyFiles) > 0:
		return fmt.Errorf("--signature-public-keys needs --signature-policy Warn or Enforce")
	case policy == signature.Off:
		return nil
	case len(o.signatureKeyFiles) == 0:
		return fmt.Errorf("--signature-policy %s needs --signature-public-keys", policy)
	}
	o.SignatureKeys = nil
	for _, f := range o.signatureKeyFiles {
		data, err := os.ReadFile(f)
		if err == nil {
			err = signature.CheckPublicKeys(data) // what the syncer will read
		}
		if err != nil {
			return fmt.Errorf("--signature-public-keys %s: %w", f, err)
		}
		o.SignatureKeys = append(append(o.SignatureKeys, data...), '\n')
	}
	return nil
}

// run bootstraps the syncer named by the one argument.
func (o *options) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if o.version {
		_, err := fmt.Fprintln(stdout, version.Get().Line(pluginName))
		return err
	}
	if len(args) != 1 {
		return fmt.Errorf("expected one argument, the sync target name (see --help)")
	}
	o.Name = args[0]
	switch {
	case o.output == "" && o.helmValues == "":
		return fmt.Errorf("-o/--output-file or --helm-values is required (a file, or - for standard output)")
	case o.output == "-" && o.helmValues == "-":
		return fmt.Errorf("-o and --helm-values cannot both be - (standard output)")
	}
	if err := o.Validate(); err != nil {
		return err
	}
	// Before anything changes upstream (a run rotates the token): an output that cannot be written
	// would leave the running syncer with a token nobody has.
	for _, out := range o.outputs() {
		if err := bootstrap.CheckWritableFor(out.path, out.what, out.flag); err != nil {
			return fmt.Errorf("%w; nothing was changed upstream", err)
		}
	}
	cfg, err := o.connection.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	res, err := bootstrap.Run(ctx, cfg, o.Options, stderr)
	if err != nil {
		return err
	}
	for _, out := range o.outputs() {
		data := res.Manifest
		if out.flag == "--helm-values" {
			data = res.HelmValues
		}
		if err := writeSecret(out.path, data, stdout); err != nil {
			return fmt.Errorf("writing %s to %s (the upstream token was already issued: run again to issue another): %w", out.what, out.path, err)
		}
	}
	if o.output != "" && o.output != "-" {
		fmt.Fprintf(stderr, `
Wrote the edge cluster manifest to %s for namespace %q (it holds a token: keep it secret). Use

  KUBECONFIG=<edge-cluster-config> kubectl apply -f %q

to apply it. Use

  KUBECONFIG=<edge-cluster-config> kubectl get deployment -n %q %s

to verify the syncer pod is running.
`, o.output, res.Namespace, o.output, res.Namespace, res.ID)
	}
	if o.helmValues != "" && o.helmValues != "-" {
		fmt.Fprintf(stderr, `
Wrote the values of the Helm chart %s to %s (they hold a token: keep them secret). Use

  KUBECONFIG=<edge-cluster-config> helm install %s %s -n %q --create-namespace -f %q

to install the syncer with the chart instead of the manifest.
`, bootstrap.ChartPath, o.helmValues, res.ID, bootstrap.ChartPath, res.Namespace, o.helmValues)
	}
	return nil
}

// output is one file the run writes.
type output struct{ path, what, flag string }

// outputs are the files the flags ask for: the manifest, then the Helm values.
func (o *options) outputs() []output {
	var outs []output
	if o.output != "" {
		outs = append(outs, output{o.output, "the manifest", "-o"})
	}
	if o.helmValues != "" {
		outs = append(outs, output{o.helmValues, "the Helm values", "--helm-values"})
	}
	return outs
}

// writeSecret writes data, which holds a token, to path readable by its owner only, or to stdout
// for "-".
func writeSecret(path string, data []byte, stdout io.Writer) error {
	if path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	// An existing file keeps its mode under WriteFile, so set it too.
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("making it readable by its owner only: %w", err)
	}
	return nil
}
