#!/usr/bin/env bash
# Regenerates hack/e2e/promtools/go.mod and go.sum: a tools module, outside the project's main module,
# that builds the Prometheus server and promtool from the Go module proxy (hack/build-prometheus.sh).
# Prometheus's Go module versions are v0.<major><minor 2 digits>.<patch>: v0.316.0 is Prometheus 3.16.0.
# Run only when bumping PROMETHEUS; the generated files are committed, and with them a plain
# `go build` needs no checksum-database look-up.
set -euo pipefail
PROMETHEUS_MODULE=${PROMETHEUS_MODULE:-v0.316.0}
dir=$(cd "$(dirname "$0")" && pwd)/promtools
cd "$dir"
rm -f go.mod go.sum
go mod init example.invalid/e2e/promtools
go get "github.com/prometheus/prometheus@$PROMETHEUS_MODULE"
go mod tidy   # tools.go (build tag tools) names the two commands
