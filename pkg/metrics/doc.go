// Package metrics defines the syncer's Prometheus metrics on a registry passed in (never the global
// one): workqueue metrics through a client-go MetricsProvider, API requests sent per side, verb and
// code, writes per direction, resource and result, and build_info (the version, revision and Go
// version of pkg/version). Every label comes from a closed set, the configured resources or the
// build; object names and error strings never become labels.
package metrics
