#!/usr/bin/env bash
# Installs the Prometheus server and promtool from Debian's `prometheus` package into $PROMETHEUS_BIN
# and $PROMTOOL_BIN, once: the package is downloaded (not installed: no service, no dependencies) and
# its two binaries extracted. The e2e tests scrape the syncer with the server and check the alerting
# rules (manifests/monitoring) with promtool.
set -euo pipefail
: "${PROMETHEUS_BIN:?PROMETHEUS_BIN must be set (the Makefile sets it)}"
PROMTOOL_BIN=${PROMTOOL_BIN:-$(dirname "$PROMETHEUS_BIN")/promtool}
if [ -x "$PROMETHEUS_BIN" ] && [ -x "$PROMTOOL_BIN" ]; then
  echo "prometheus-bin: cached in $PROMETHEUS_BIN and $PROMTOOL_BIN ($("$PROMETHEUS_BIN" --version 2>&1 | head -1))"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
if ! apt-get download prometheus >/dev/null 2>&1; then
  echo "prometheus-bin: refreshing the Debian package lists"
  apt-get update -qq
  apt-get download prometheus
fi
dpkg-deb -x prometheus_*.deb root
mkdir -p "$(dirname "$PROMETHEUS_BIN")" "$(dirname "$PROMTOOL_BIN")"
install -m 0755 root/usr/bin/prometheus "$PROMETHEUS_BIN"
install -m 0755 root/usr/bin/promtool "$PROMTOOL_BIN"
echo "prometheus-bin: installed $("$PROMETHEUS_BIN" --version 2>&1 | head -1) in $PROMETHEUS_BIN, and promtool in $PROMTOOL_BIN"
