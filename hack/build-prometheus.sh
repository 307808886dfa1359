#!/usr/bin/env bash
# Builds the Prometheus server and promtool from the tools module hack/e2e/promtools (Go module proxy)
# into $PROMETHEUS_BIN and $PROMTOOL_BIN, once (the folder name carries the version). Built from
# source because Debian's package leaves Kubernetes service discovery out, and the e2e tests find the
# syncer's Pod as a user's Prometheus would (kubernetes_sd_configs). Cold: about 4 minutes on 2 idle
# cores (modules downloaded, then compiled); progress is printed.
set -euo pipefail
: "${PROMETHEUS_BIN:?PROMETHEUS_BIN must be set (the Makefile sets it)}"
: "${PROMETHEUS_VERSION:?PROMETHEUS_VERSION must be set (the Makefile sets it)}"
PROMTOOL_BIN=${PROMTOOL_BIN:-$(dirname "$PROMETHEUS_BIN")/promtool}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib-build.sh
. "$here/lib-build.sh"
out=$(dirname "$PROMETHEUS_BIN")
mkdir -p "$out"
v=github.com/prometheus/common/version
ldflags="-s -w -X $v.Version=${PROMETHEUS_VERSION#v} -X $v.Branch=release -X $v.Revision=module -X $v.BuildUser=kubestellar-syncer -X $v.BuildDate=19700101-00:00:00"
build_bin prometheus-bin "$here/e2e/promtools" "$out" "$(basename "$PROMETHEUS_BIN")" github.com/prometheus/prometheus/cmd/prometheus "$ldflags"
build_bin prometheus-bin "$here/e2e/promtools" "$(dirname "$PROMTOOL_BIN")" "$(basename "$PROMTOOL_BIN")" github.com/prometheus/prometheus/cmd/promtool "$ldflags"
echo "prometheus-bin: $("$PROMETHEUS_BIN" --version 2>&1 | head -1)"
