// Command syncer runs the KubeStellar syncer: it keeps an edge cluster in step with its mailbox
// workspace upstream, as selected by the SyncerConfigs there.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"golang.org/x/oauth2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/transport"
	"k8s.io/client-go/util/flowcontrol"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/cmd/syncer/options"
	"github.com/kubestellar/syncer/pkg/breaker"
	"github.com/kubestellar/syncer/pkg/credential"
	"github.com/kubestellar/syncer/pkg/downsync"
	"github.com/kubestellar/syncer/pkg/dynclient"
	"github.com/kubestellar/syncer/pkg/etagcache"
	"github.com/kubestellar/syncer/pkg/mailboxes"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/reachability"
	"github.com/kubestellar/syncer/pkg/report"
	"github.com/kubestellar/syncer/pkg/signature"
	"github.com/kubestellar/syncer/pkg/syncer"
	"github.com/kubestellar/syncer/pkg/version"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// usage begins --help: what the syncer does, then how to call it; the flags follow.
const usage = `The KubeStellar syncer runs in an edge cluster and keeps it in step with its mailbox workspace
upstream (a kcp workspace or any kube-apiserver), as the SyncerConfigs there select: the selected
objects are applied at the edge, kept there against drift and deleted when they leave upstream or the
selection; their status at the edge is written back upstream; and objects created at the edge that
the SyncerConfigs select for upsync are copied up. It is event-driven, serves Prometheus metrics,
/healthz and /readyz, and with --leader-elect works only while it holds a Lease at the edge.

Usage:
  syncer --upstream-kubeconfig <mailbox kubeconfig> [--downstream-kubeconfig <edge kubeconfig>] \
    --sync-target-name <name> --sync-target-uid <uid> [flags]

Flags:
`

func main() {
	opts, done, err := parseFlags(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "syncer:", err)
		os.Exit(2)
	case done:
		return
	}
	if err := run(opts, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "syncer:", err)
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// parseFlags parses the command line. done is true when the command was --help (-h) or --version,
// answered on stdout: the process then exits 0. Deprecation notices go to stderr.
func parseFlags(args []string, stdout, stderr io.Writer) (opts *options.Options, done bool, err error) {
	opts = options.NewOptions()
	fs := pflag.NewFlagSet("syncer", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	opts.AddFlags(fs)
	fs.Usage = func() { fmt.Fprint(stdout, usage+fs.FlagUsages()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("%w (see --help)", err)
	}
	if opts.PrintVersion {
		fmt.Fprintln(stdout, version.Get().Line("syncer"))
		return nil, true, nil
	}
	return opts, false, nil
}

func run(opts *options.Options, stdout, stderr io.Writer) error {
	if err := prepare(opts, stdout, stderr); err != nil {
		return err
	}
	http2HealthChecks()
	upCfg, downCfg, err := opts.RESTConfigs()
	if err != nil {
		return err
	}

	ctx, cancel := signalContext()
	defer cancel()
	logger := klog.FromContext(ctx).WithValues("syncTarget", opts.SyncTargetName)
	ctx = klog.NewContext(ctx, logger)
	setMemoryLimit(logger, cgroupRoot, opts.MemoryLimitRatio)

	obs, reviews := instrument(upCfg, downCfg)
	renewer, err := upstreamCredential(ctx, opts, upCfg, downCfg, obs.reg)
	if err != nil {
		return err
	}
	cfg, err := engineConfig(opts, upCfg, downCfg, obs.m, obs.reach)
	if err != nil {
		return err
	}
	var components []component
	if renewer != nil {
		cfg.Credential = renewer
		components = append(components, component{name: "upstream credential", run: renewer.Run})
	}
	s, whole, stop, err := newEngine(ctx, opts, cfg, upCfg, downCfg)
	defer stop()
	if err != nil {
		return err
	}

	var leading atomic.Bool
	var watchdog *leaderelection.HealthzAdaptor
	if opts.LeaderElect {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(opts.LeaderElectRenewDeadline)
	}
	h := health{ready: s.Ready, standby: func() bool { return opts.LeaderElect && !leading.Load() }, watchdog: watchdog}
	serving, err := servers(opts, obs.reg, h, whole, reviews)
	if err != nil {
		return err
	}
	components = append(components, serving...)

	logger.Info("Starting syncer", "upstream", upCfg.Host, "downstream", downCfg.Host, "syncTargetUID", opts.SyncTargetUID)
	engine, err := engineComponent(opts, s, downCfg, obs.m, watchdog, &leading)
	if err != nil {
		return err
	}
	err = runAll(ctx, append(components, engine)...)
	logger.Info("Syncer stopped")
	return err
}

// observers are the process's metrics registry, the syncer's metrics and the reachability of both
// sides.
type observers struct {
	reg   *prometheus.Registry
	m     *metrics.Metrics
	reach *reachability.Tracker
}

// instrument makes the metrics and wraps both sides' clients so that each request is counted, timed
// out and followed for the side's reachability. reviews is the edge config for the metrics address's
// reviews, which are not the syncer's traffic: not counted, nor taken for reachability.
func instrument(upCfg, downCfg *rest.Config) (obs observers, reviews *rest.Config) {
	obs.reg = prometheus.NewRegistry()
	obs.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	obs.m = metrics.New(obs.reg)
	clientmetrics.Register(obs.m.ClientGoHooks()) // client-go's hooks are process-wide: set once, here
	reviews = rest.CopyConfig(downCfg)
	reviews.QPS, reviews.Burst = 20, 40 // a flood of requests to the metrics address cannot flood the edge
	obs.reach = reachability.New(obs.reg, syncer.Upstream, syncer.Downstream)
	// Discovery is revalidated by its ETag (above the counting, which sees the 304s as they travel).
	upCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return etagcache.New(obs.m.InstrumentTransport(syncer.Upstream, obs.reach.Transport(syncer.Upstream, rt)))
	})
	downCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return etagcache.New(obs.m.InstrumentTransport(syncer.Downstream, obs.reach.Transport(syncer.Downstream, rt)))
	})
	return obs, reviews
}

// newEngine makes what runs the syncer: the engine of one workspace, or the controller of the
// workspaces of an APIExport (--apiexport-endpoint-slice), with their Event recorders and the
// signature verifier. whole is the whole report of report-only mode (one workspace only); stop
// stops the recorders, and is to be called even on an error.
func newEngine(ctx context.Context, opts *options.Options, cfg syncer.Config, upCfg, downCfg *rest.Config) (s engineRunner, whole http.Handler, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range stops {
			f()
		}
	}
	edgeRecorder, stopEdge, err := eventRecorder(ctx, downCfg, opts.SyncTargetName)
	if err != nil {
		return nil, nil, stop, err
	}
	stops = append(stops, stopEdge)
	cfg.EdgeRecorder = edgeRecorder
	if cfg.Signatures, err = signatures(klog.FromContext(ctx), opts); err != nil {
		return nil, nil, stop, err
	}
	if cfg.Signatures != nil {
		klog.FromContext(ctx).Info("Verifying the signature of every object before applying it", "policy", opts.SignaturePolicy, "keys", opts.SignatureKeys)
	}
	if opts.APIExportEndpointSlice != "" {
		s, err = mailboxesController(opts, cfg, upCfg)
		return s, nil, stop, err
	}
	recorder, stopUp, err := eventRecorder(ctx, upCfg, opts.SyncTargetName)
	if err != nil {
		return nil, nil, stop, err
	}
	stops = append(stops, stopUp)
	cfg.Recorder = recorder
	cfg.Report = report.NewStore()
	if opts.ReportOnly {
		whole = cfg.Report // object names: served only when asked for (see --metrics-secure)
	}
	s, err = syncer.New(cfg)
	return s, whole, stop, err
}

// engineComponent runs the engine: always, or while this replica leads (--leader-elect).
func engineComponent(opts *options.Options, s engineRunner, downCfg *rest.Config, m *metrics.Metrics, watchdog *leaderelection.HealthzAdaptor,
	leading *atomic.Bool) (component, error) {
	engine := component{name: "engine", run: s.Run}
	if !opts.LeaderElect {
		m.Leader.Set(1)
		return engine, nil
	}
	lock, err := leaseLock(opts, downCfg)
	if err != nil {
		return component{}, err
	}
	le := leaderElection{lock: lock, leaseDuration: opts.LeaderElectLeaseDuration, renewDeadline: opts.LeaderElectRenewDeadline,
		retryPeriod: opts.LeaderElectRetryPeriod, watchdog: watchdog, metrics: m, leading: leading}
	engine.run = func(ctx context.Context) error { return le.run(ctx, s.Run) }
	return engine, nil
}

// upstreamCredential hands every upstream client the token of the upstream kubeconfig through a
// credential.Renewer, which renews it and keeps it in --upstream-token-secret at the edge when that
// is set. nil when the kubeconfig authenticates otherwise (a client certificate, an exec plugin), or
// reads its token from a file (client-go reads the file again every minute: whoever writes it renews
// it).
func upstreamCredential(ctx context.Context, opts *options.Options, upCfg, downCfg *rest.Config, reg prometheus.Registerer) (*credential.Renewer, error) {
	token := strings.TrimSpace(upCfg.BearerToken)
	if upCfg.BearerTokenFile != "" || token == "" {
		if opts.UpstreamTokenSecret != "" {
			klog.FromContext(ctx).Info("Not renewing the upstream credential: it is not a token of the kubeconfig itself", "tokenFile", upCfg.BearerTokenFile)
		}
		return nil, nil
	}
	cfg := credential.Config{Bootstrap: token, Registerer: reg, Off: "--upstream-token-secret is not set"}
	if opts.UpstreamTokenSecret != "" {
		edge, err := kubernetes.NewForConfig(downCfg)
		if err != nil {
			return nil, err
		}
		ns, name, _ := strings.Cut(opts.UpstreamTokenSecret, "/")
		cfg.Off, cfg.Store = "", credential.SecretStore{Secrets: edge.CoreV1(), Secret: types.NamespacedName{Namespace: ns, Name: name}}
	}
	// Every upstream request takes the token in use now, renewed or not, from the Renewer; the
	// Renewer's own requests too.
	var renewer *credential.Renewer
	upCfg.BearerToken = "" // a token file returned above: client-go keeps reading it
	upCfg.Wrap(transport.TokenSourceWrapTransport(tokenSource(func() (*oauth2.Token, error) { return renewer.Token() })))
	up, err := kubernetes.NewForConfig(upCfg)
	if err != nil {
		return nil, err
	}
	cfg.Requester = credential.TokenRequests{ServiceAccounts: up.CoreV1()}
	renewer = credential.New(ctx, cfg)
	return renewer, nil
}

// tokenSource is a function as an oauth2.TokenSource.
type tokenSource func() (*oauth2.Token, error)

func (f tokenSource) Token() (*oauth2.Token, error) { return f() }

// engineRunner is what runs: one workspace's engine, or the engines of every workspace bound to an
// APIExport.
type engineRunner interface {
	Run(ctx context.Context) error
	Ready() error
}

// eventRecorder records Events upstream (reached at cfg) for the sync target; stop flushes and stops it.
func eventRecorder(ctx context.Context, cfg *rest.Config, syncTarget string) (record.EventRecorder, func(), error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("events client: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return broadcaster.NewRecorder(runtime.NewScheme(), corev1.EventSource{Component: "kubestellar-syncer", Host: syncTarget}), broadcaster.Shutdown, nil
}

// signatures are the keys and policy the edge verifies what it applies with (nil: Off).
func signatures(logger klog.Logger, opts *options.Options) (downsync.Signatures, error) {
	policy, err := signature.ParsePolicy(opts.SignaturePolicy)
	if err != nil || policy == signature.Off {
		return nil, err
	}
	trust, err := signature.NewTrust(logger, policy, opts.SignatureKeys)
	if err != nil {
		return nil, fmt.Errorf("--signature-keys: %w", err)
	}
	return trust, nil
}

// mailboxesController serves every workspace bound to the APIExport of --apiexport-endpoint-slice;
// cfg is the template of each workspace's engine.
func mailboxesController(opts *options.Options, cfg syncer.Config, upCfg *rest.Config) (*mailboxes.Controller, error) {
	downstream, downDisc, writes := cfg.DownstreamDynamic, cfg.DownstreamDiscovery, cfg.DownstreamWrites
	cfg.UpstreamDynamic, cfg.UpstreamDiscovery, cfg.DownstreamDynamic, cfg.DownstreamDiscovery, cfg.DownstreamWrites = nil, nil, nil, nil, nil
	return mailboxes.NewController(mailboxes.Config{
		Provider: upCfg, EndpointSlice: opts.APIExportEndpointSlice, DrainQuietPeriod: opts.DrainQuietPeriod, Downstream: downstream, DownstreamDiscovery: downDisc, DownstreamWrites: writes, Engine: cfg,
		NewRecorder: func(ctx context.Context, _ logicalcluster.Name, ws *rest.Config) (record.EventRecorder, func()) {
			recorder, stop, err := eventRecorder(ctx, ws, opts.SyncTargetName)
			if err != nil {
				klog.FromContext(ctx).Error(err, "No Events for this workspace")
				return nil, func() {}
			}
			return recorder, stop
		},
	})
}

// prepare completes and validates the options, then configures klog's process-wide logger from the
// logging flags (--logging-format, -v, --vmodule), the way Kubernetes components do
// (k8s.io/component-base/logs/api/v1): once, here, before anything logs. Logs go to stderr, whatever
// the format; stdout is given for component-base's split-stream options, which the syncer does not
// enable.
func prepare(opts *options.Options, stdout, stderr io.Writer) error {
	if err := opts.Complete(); err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := logsapi.ValidateAndApplyWithOptions(opts.Logs, &logsapi.LoggingOptions{ErrorStream: stderr, InfoStream: stdout}, nil); err != nil {
		return fmt.Errorf("logging: %w", err)
	}
	return nil
}

// leaseLock is the Lease at the edge that leader election holds.
func leaseLock(opts *options.Options, downCfg *rest.Config) (resourcelock.Interface, error) {
	kube, err := kubernetes.NewForConfig(downCfg)
	if err != nil {
		return nil, fmt.Errorf("downstream client for leader election: %w", err)
	}
	host, _ := os.Hostname()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, opts.LeaderElectResourceNamespace, opts.LeaderElectResourceName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: host + "_" + opts.LeaderElectIdentity})
	if err != nil {
		return nil, fmt.Errorf("leader election lock: %w", err)
	}
	return lock, nil
}

func engineConfig(opts *options.Options, upCfg, downCfg *rest.Config, m *metrics.Metrics, reach *reachability.Tracker) (syncer.Config, error) {
	// client-go's dynamic client, its watches and creates decoding in one pass (pkg/dynclient).
	upDyn, err := dynclient.NewForConfig(upCfg)
	if err != nil {
		return syncer.Config{}, fmt.Errorf("upstream client: %w", err)
	}
	if downCfg.QPS > 0 && opts.Executor != "" {
		// The executor's writes and the syncer's own requests draw on one client-side limit.
		downCfg = rest.CopyConfig(downCfg)
		downCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(downCfg.QPS, downCfg.Burst)
	}
	downDyn, err := dynclient.NewForConfig(downCfg)
	if err != nil {
		return syncer.Config{}, fmt.Errorf("downstream client: %w", err)
	}
	var writes dynamic.Interface
	var fenceNS string
	if opts.Executor != "" {
		// Writes on the mailboxes' behalf as the executor: the edge's apiserver holds them to what the
		// edge owner grants it.
		ns, name, _ := strings.Cut(opts.Executor, "/")
		execCfg := rest.CopyConfig(downCfg)
		execCfg.Impersonate = rest.ImpersonationConfig{UserName: wellknown.ServiceAccountUser(ns, name)}
		if writes, err = dynclient.NewForConfig(execCfg); err != nil {
			return syncer.Config{}, fmt.Errorf("executor client: %w", err)
		}
		if opts.RequireFence {
			fenceNS = ns
		}
	}
	upDisc, err := discovery.NewDiscoveryClientForConfig(upCfg)
	if err != nil {
		return syncer.Config{}, fmt.Errorf("upstream discovery: %w", err)
	}
	downDisc, err := discovery.NewDiscoveryClientForConfig(downCfg)
	if err != nil {
		return syncer.Config{}, fmt.Errorf("downstream discovery: %w", err)
	}
	maxObjectBytes, _ := opts.ObjectBytesLimit() // validated
	maxEdgeBytes, _ := opts.EdgeBytesLimit()
	return syncer.Config{
		MaxObjectBytes:         maxObjectBytes,
		MaxEdgeBytes:           maxEdgeBytes,
		MaxObjectsPerResource:  opts.MaxObjectsPerResource,
		UpstreamDynamic:        upDyn,
		UpstreamDiscovery:      syncer.NewDiscovery(upDisc),
		DownstreamDynamic:      downDyn,
		DownstreamWrites:       writes,
		DownstreamDiscovery:    syncer.NewDiscovery(downDisc),
		SyncTargetName:         opts.SyncTargetName,
		Workers:                opts.Workers,
		StatusWorkers:          opts.StatusWorkers,
		UpsyncWorkers:          opts.UpsyncWorkers,
		AdoptExisting:          opts.AdoptExisting,
		FieldManager:           syncer.DefaultFieldManager,
		DiscoveryRefreshPeriod: opts.DiscoveryRefreshPeriod,
		MaxNamespaceInformers:  opts.MaxNamespaceInformers,
		AuditPeriod:            opts.AuditPeriod,
		HeartbeatPeriod:        opts.HeartbeatPeriod,
		HeartbeatRefresh:       opts.HeartbeatRefresh,
		ConflictRecheckPeriod:  opts.ConflictRecheckPeriod,
		EdgeWarnings:           opts.EdgeWarnings,
		ReportOnly:             opts.ReportOnly,
		DeletionBreaker: breaker.Options{Count: opts.DeletionBreakerCount, Percent: opts.DeletionBreakerPercent,
			HourCount: opts.DeletionBreakerHourlyCount},
		DeletionRelease:          namespacedName(opts.DeletionReleaseConfigMap),
		MailboxReleasesDeletions: opts.MailboxReleasesDeletions,
		ProtectedNamespaces:      opts.ProtectedNamespaces,
		FenceNamespace:           fenceNS,
		FenceAllow:               opts.FenceAllow,
		FenceWrites:              writes,
		UpsyncSecrets:            opts.UpsyncSecrets,
		ConfigSelector:           opts.SyncerConfigSelector,
		Metrics:                  m,
		Reachability:             reach,
	}, nil
}

// signalContext is cancelled by the first SIGINT or SIGTERM; a second one exits at once.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ch
		cancel()
		<-ch
		os.Exit(1)
	}()
	return ctx, cancel
}

// namespacedName reads namespace/name ("" and anything without both: none).
func namespacedName(s string) types.NamespacedName {
	ns, name, _ := strings.Cut(s, "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}
