// Package charts holds the syncer's Helm charts (kubestellar-syncer/: what syncer-gen's edge
// manifest installs, as a chart) and, as Go code, only their tests: they run the real helm
// ($HELM_BIN, `make helm-bin`) and check the rendered objects against the syncer's own flag parsing
// and against the manifest pkg/bootstrap renders. Nothing here is imported by the product.
package charts
