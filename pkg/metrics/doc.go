// Package metrics defines the syncer's Prometheus metrics on a registry passed in (never the global
// one): workqueue metrics through a client-go MetricsProvider, API requests sent per side, verb and
// code, and writes per direction, resource and result. Every label comes from a closed set or from
// the configured resources; object names and error strings never become labels.
package metrics
