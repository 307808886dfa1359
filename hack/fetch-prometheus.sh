#!/usr/bin/env bash
# Installs the Prometheus server from Debian's `prometheus` package into $PROMETHEUS_BIN, once: the
# package is downloaded (not installed: no service, no dependencies) and its binary extracted. The
# e2e tests scrape the syncer with it.
set -euo pipefail
: "${PROMETHEUS_BIN:?PROMETHEUS_BIN must be set (the Makefile sets it)}"
if [ -x "$PROMETHEUS_BIN" ]; then
  echo "prometheus-bin: cached in $PROMETHEUS_BIN ($("$PROMETHEUS_BIN" --version 2>&1 | head -1))"
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
mkdir -p "$(dirname "$PROMETHEUS_BIN")"
install -m 0755 root/usr/bin/prometheus "$PROMETHEUS_BIN"
echo "prometheus-bin: installed $("$PROMETHEUS_BIN" --version 2>&1 | head -1) in $PROMETHEUS_BIN"
