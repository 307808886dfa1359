package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/cmd/syncer/options"
	"github.com/kubestellar/syncer/pkg/httpauth"
)

// servers are the metrics and health-probe servers the flags ask for; edge reviews the metrics
// address's requests with --metrics-secure.
func servers(opts *options.Options, reg *prometheus.Registry, h health, wholeReport http.Handler, edge *rest.Config) ([]component, error) {
	var out []component
	if addr := opts.MetricsBindAddress; addr != "0" && addr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		if wholeReport != nil {
			mux.Handle("/report", wholeReport) // what report-only mode would write, whole
		}
		if opts.Profiling {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		}
		var handler http.Handler = mux
		var tlsConfig *tls.Config
		if opts.MetricsSecure {
			kube, err := kubernetes.NewForConfig(edge)
			if err != nil {
				return nil, fmt.Errorf("--metrics-secure: %w", err)
			}
			if tlsConfig, err = httpauth.TLSConfig(opts.MetricsCertDir, opts.SyncTargetName+".kubestellar-syncer"); err != nil {
				return nil, fmt.Errorf("--metrics-cert-dir: %w", err)
			}
			handler = httpauth.NewFilter(kube).Wrap(mux)
		}
		c, err := server("metrics", addr, handler, tlsConfig)
		if err != nil {
			return nil, fmt.Errorf("--metrics-bind-address: %w", err)
		}
		out = append(out, c)
	}
	if addr := opts.HealthProbeBindAddress; addr != "0" && addr != "" {
		c, err := server("health probes", addr, h.mux(), nil)
		if err != nil {
			return nil, fmt.Errorf("--health-probe-bind-address: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// server listens on addr now (so that a busy port is an error at start) and returns the component
// that serves mux (over TLS with tlsConfig) until its context is done, then shuts down gracefully.
func server(what, addr string, mux http.Handler, tlsConfig *tls.Config) (component, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return component{}, err
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	return component{name: what, run: func(ctx context.Context) error {
		klog.FromContext(ctx).Info("Serving "+what, "address", ln.Addr().String(), "tls", tlsConfig != nil)
		failed := make(chan error, 1)
		go func() { failed <- srv.Serve(ln) }()
		select {
		case err := <-failed:
			return fmt.Errorf("%s server: %w", what, err)
		case <-ctx.Done():
		}
		shutdownCtx, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer done()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			return fmt.Errorf("%s server shutdown: %w", what, err)
		}
		return nil
	}}, nil
}

// http2HealthChecks makes client-go ping an HTTP/2 connection that has read nothing for 5 s and drop
// it when the ping is not answered within 5 s (client-go's defaults are 30 s and 15 s): a hung
// apiserver is then noticed within about 10 s through the syncer's long-running watches, even when
// the syncer sends nothing else. client-go reads these only from the environment; an operator's own
// setting wins.
func http2HealthChecks() {
	for name, seconds := range map[string]string{"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "5", "HTTP2_PING_TIMEOUT_SECONDS": "5"} {
		if _, set := os.LookupEnv(name); !set {
			_ = os.Setenv(name, seconds)
		}
	}
}
