// Command syncer runs the KubeStellar syncer: it keeps an edge cluster in step with its mailbox
// workspace upstream, as selected by the SyncerConfigs there.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
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
	upCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return m.InstrumentTransport(syncer.Upstream, rt) })
	downCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return m.InstrumentTransport(syncer.Downstream, rt) })

	cfg, err := engineConfig(opts, upCfg, downCfg, m)
	if err != nil {
		return err
	}
	s, err := syncer.New(cfg)
	if err != nil {
		return err
	}

	errCh := make(chan error, 2)
	var srv *http.Server
	if opts.MetricsBindAddress != "0" && opts.MetricsBindAddress != "" {
		ln, err := net.Listen("tcp", opts.MetricsBindAddress)
		if err != nil {
			return fmt.Errorf("--metrics-bind-address: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		logger.Info("Serving metrics", "address", ln.Addr().String())
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errCh <- fmt.Errorf("metrics server: %w", err)
			}
		}()
	}
	go func() { errCh <- s.Run(ctx) }()

	logger.Info("Starting syncer", "upstream", upCfg.Host, "downstream", downCfg.Host, "syncTargetUID", opts.SyncTargetUID)
	var runErr error
	select {
	case runErr = <-errCh:
		cancel()
	case <-ctx.Done():
		runErr = <-errCh // the engine returns once its workers have stopped
	}
	if srv != nil {
		shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shutdownCtx)
	}
	if errors.Is(runErr, context.Canceled) {
		runErr = nil
	}
	logger.Info("Syncer stopped")
	return runErr
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
