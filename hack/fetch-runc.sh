#!/usr/bin/env bash
# Puts runc from Debian's `runc` package at $RUNC_BIN, once, for `make image-check` to run the image
# in a container: the package is downloaded (not installed) and its binary extracted. It needs only
# libc and libseccomp2, which apt itself depends on. Where the package cannot be had (no apt, no
# network), it says so and succeeds: the image test then skips the container run and says why.
set -euo pipefail
: "${RUNC_BIN:?RUNC_BIN must be set (the Makefile sets it)}"
if [ -x "$RUNC_BIN" ]; then
  echo "runc-bin: cached in $RUNC_BIN ($("$RUNC_BIN" --version 2>&1 | head -1))"
  exit 0
fi
if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
  echo "runc-bin: no apt-get or dpkg-deb here: the image will not be run in a container"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
if ! apt-get download runc >/dev/null 2>&1; then
  echo "runc-bin: refreshing the Debian package lists"
  if ! { apt-get update -qq && apt-get download runc; }; then
    echo "runc-bin: cannot download Debian's runc package: the image will not be run in a container"
    exit 0
  fi
fi
dpkg-deb -x runc_*.deb root
mkdir -p "$(dirname "$RUNC_BIN")"
install -m 0755 root/usr/sbin/runc "$RUNC_BIN"
echo "runc-bin: installed $("$RUNC_BIN" --version 2>&1 | head -1) in $RUNC_BIN"
