// Package metrics defines the syncer's Prometheus metrics on a registry passed in (never the global
// one): its own, named kubestellar_syncer_* (API requests sent per side, verb and code, writes per
// direction, resource and result, informers, leadership, the heartbeat, and build_info,
// the version, revision and Go version of pkg/version), and client-go's workqueue metrics (through a
// MetricsProvider) and REST client metrics (through its metrics hooks) under the names Kubernetes
// components give them, workqueue_* and rest_client_*, so that dashboards made for those work. Every
// label comes from a closed set, the configured resources or the build; object names and error
// strings never become labels. The series whose labels do not depend on the configuration exist
// from the start. The gauge of each side's reachability is pkg/reachability's, on the same registry.
package metrics
