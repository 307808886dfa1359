package main

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/tools/leaderelection"
)

// health serves the probes: /healthz is live while the process serves (and, when leading, renews
// its Lease in time); /readyz is ready when the engine is synced and both sides are reachable, or
// when the process is a standby waiting for the Lease.
type health struct {
	ready    func() error
	standby  func() bool
	watchdog *leaderelection.HealthzAdaptor
}

func (h health) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if h.watchdog != nil {
			if err := h.watchdog.Check(r); err != nil {
				http.Error(w, "leader election: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if h.standby() {
			fmt.Fprintln(w, "ok: standby, another replica leads")
			return
		}
		if err := h.ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}
