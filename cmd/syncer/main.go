// Command syncer runs the KubeStellar syncer: it keeps an edge cluster in step with its mailbox
// workspace upstream, as selected by the SyncerConfigs there.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/cmd/syncer/options"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/syncer"
)

func main() {
	opts := options.NewOptions()
	fs := pflag.NewFlagSet("syncer", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "syncer:", err)
		os.Exit(2)
	}
	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "syncer:", err)
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(opts *options.Options) error {
	if err := opts.Complete(); err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	upCfg, downCfg, err := opts.RESTConfigs()
	if err != nil {
		return err
	}

	ctx, cancel := signalContext()
	defer cancel()
	logger := klog.FromContext(ctx).WithValues("syncTarget", opts.SyncTargetName)
	ctx = klog.NewContext(ctx, logger)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := metrics.New(reg)
	clientmetrics.Register(m.ClientGoHooks()) // client-go's hooks are process-wide: set once, here
	upCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return m.InstrumentTransport(syncer.Upstream, rt) })
	downCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return m.InstrumentTransport(syncer.Downstream, rt) })

	cfg, err := engineConfig(opts, upCfg, downCfg, m)
	if err != nil {
		return err
	}
	upKube, err := kubernetes.NewForConfig(upCfg)
	if err != nil {
		return fmt.Errorf("upstream client: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: upKube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	cfg.Recorder = broadcaster.NewRecorder(runtime.NewScheme(), corev1.EventSource{Component: "kubestellar-syncer", Host: opts.SyncTargetName})
	s, err := syncer.New(cfg)
	if err != nil {
		return err
	}

	errCh := make(chan error, 3)
	var servers []*http.Server
	var leading atomic.Bool
	var watchdog *leaderelection.HealthzAdaptor
	if opts.LeaderElect {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(opts.LeaderElectRenewDeadline)
	}
	if addr := opts.MetricsBindAddress; addr != "0" && addr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		if opts.Profiling {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		}
		srv, err := serve(ctx, "metrics", addr, mux, errCh)
		if err != nil {
			return fmt.Errorf("--metrics-bind-address: %w", err)
		}
		servers = append(servers, srv)
	}
	if addr := opts.HealthProbeBindAddress; addr != "0" && addr != "" {
		h := health{ready: s.Ready, standby: func() bool { return opts.LeaderElect && !leading.Load() }, watchdog: watchdog}
		srv, err := serve(ctx, "health probes", addr, h.mux(), errCh)
		if err != nil {
			return fmt.Errorf("--health-probe-bind-address: %w", err)
		}
		servers = append(servers, srv)
	}

	logger.Info("Starting syncer", "upstream", upCfg.Host, "downstream", downCfg.Host, "syncTargetUID", opts.SyncTargetUID)
	if opts.LeaderElect {
		go func() { errCh <- runLeaderElected(ctx, opts, downCfg, s, m, &leading, watchdog) }()
	} else {
		m.Leader.Set(1)
		go func() { errCh <- s.Run(ctx) }()
	}
	var runErr error
	select {
	case runErr = <-errCh:
		cancel()
	case <-ctx.Done():
		runErr = <-errCh // the engine returns once its workers have stopped
	}
	for _, srv := range servers {
		shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(shutdownCtx)
		done()
	}
	if errors.Is(runErr, context.Canceled) {
		runErr = nil
	}
	logger.Info("Syncer stopped")
	return runErr
}

// serve listens on addr and serves mux until ctx is done; a serving error goes to errCh.
func serve(ctx context.Context, what, addr string, mux http.Handler, errCh chan<- error) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	klog.FromContext(ctx).Info("Serving "+what, "address", ln.Addr().String())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errCh <- fmt.Errorf("%s server: %w", what, err)
		}
	}()
	return srv, nil
}

// runLeaderElected runs the engine while this process holds the Lease at the edge. Losing the Lease
// stops the engine and returns an error, so that the process exits and its restart competes again
// (as kube-controller-manager does); a standby watches and writes nothing.
func runLeaderElected(ctx context.Context, opts *options.Options, downCfg *rest.Config, s *syncer.Syncer, m *metrics.Metrics,
	leading *atomic.Bool, watchdog *leaderelection.HealthzAdaptor) error {
	logger := klog.FromContext(ctx)
	kube, err := kubernetes.NewForConfig(downCfg)
	if err != nil {
		return fmt.Errorf("downstream client for leader election: %w", err)
	}
	host, _ := os.Hostname()
	id := host + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, opts.LeaderElectNamespace, opts.LeaderElectLeaseName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	engineDone := make(chan error, 1)
	var started atomic.Bool
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: opts.LeaderElectLeaseName, ReleaseOnCancel: true, WatchDog: watchdog,
		LeaseDuration: opts.LeaderElectLeaseDuration, RenewDeadline: opts.LeaderElectRenewDeadline, RetryPeriod: opts.LeaderElectRetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				started.Store(true)
				leading.Store(true)
				m.Leader.Set(1)
				logger.Info("Leading: starting the engine", "lease", opts.LeaderElectNamespace+"/"+opts.LeaderElectLeaseName, "identity", id)
				engineDone <- s.Run(lctx)
			},
			OnStoppedLeading: func() {
				leading.Store(false)
				m.Leader.Set(0)
			},
			OnNewLeader: func(identity string) {
				if identity != id {
					logger.Info("Standing by; another syncer leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	logger.Info("Waiting to lead", "lease", opts.LeaderElectNamespace+"/"+opts.LeaderElectLeaseName, "identity", id)
	le.Run(ctx)
	if !started.Load() {
		return ctx.Err()
	}
	engineErr := <-engineDone
	if ctx.Err() == nil {
		return fmt.Errorf("lost the Lease %s/%s; exiting so that a restart competes again", opts.LeaderElectNamespace, opts.LeaderElectLeaseName)
	}
	return engineErr
}

func engineConfig(opts *options.Options, upCfg, downCfg *rest.Config, m *metrics.Metrics) (syncer.Config, error) {
	upDyn, err := dynamic.NewForConfig(upCfg)
	if err != nil {
		return syncer.Config{}, fmt.Errorf("upstream client: %w", err)
	}
	downDyn, err := dynamic.NewForConfig(downCfg)
	if err != nil {
		return syncer.Config{}, fmt.Errorf("downstream client: %w", err)
	}
	upDisc, err := discovery.NewDiscoveryClientForConfig(upCfg)
	if err != nil {
		return syncer.Config{}, fmt.Errorf("upstream discovery: %w", err)
	}
	downDisc, err := discovery.NewDiscoveryClientForConfig(downCfg)
	if err != nil {
		return syncer.Config{}, fmt.Errorf("downstream discovery: %w", err)
	}
	return syncer.Config{
		UpstreamDynamic:        upDyn,
		UpstreamDiscovery:      upDisc,
		DownstreamDynamic:      downDyn,
		DownstreamDiscovery:    downDisc,
		SyncTargetName:         opts.SyncTargetName,
		Workers:                opts.Workers,
		StatusWorkers:          opts.StatusWorkers,
		UpsyncWorkers:          opts.UpsyncWorkers,
		AdoptExisting:          opts.AdoptExisting,
		FieldManager:           syncer.DefaultFieldManager,
		DiscoveryRefreshPeriod: opts.DiscoveryRefreshPeriod,
		HeartbeatPeriod:        opts.HeartbeatPeriod,
		ConflictRecheckPeriod:  opts.ConflictRecheckPeriod,
		Metrics:                m,
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
