// Package support holds helpers shared by the end-to-end tests (test/e2e) and the benchmark
// (test/bench): reading Prometheus text exposition, waiting for the syncer to settle, building
// SyncerConfig specs, free ports, running promtool on the alerting rules (also used by the unit
// tests of manifests).
package support
