#!/usr/bin/env bash
# Builds the test bed node's images without a container engine or a base image (make node-bins):
# the pause image (hack/image/pause, a static Go program, built here) and kubestellar-syncer-testapp:dev
# (Debian's static busybox from hack/fetch-node-pkgs.sh), as docker-archives in $NODE_DIR/images for
# test/testenv to import into the node's containerd. Seconds; rebuilt only when an input changed.
set -euo pipefail
: "${NODE_DIR:?NODE_DIR must name the cache folder (the Makefile sets it)}"
here=$(cd "$(dirname "$0")" && pwd)
out=$NODE_DIR/images
[ -x "$NODE_DIR/busybox" ] || { echo "node-images: $NODE_DIR/busybox is missing (hack/fetch-node-pkgs.sh)" >&2; exit 1; }
# The inputs: the image builder's sources and module, and busybox's version.
stamp=$(cat "$here"/image/go.mod "$here"/image/go.sum "$here"/image/*.go "$here"/image/pause/*.go "$NODE_DIR/versions.txt" | sha256sum | cut -c1-16)
if [ -f "$out/pause.docker.tar" ] && [ -f "$out/testapp.docker.tar" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "node-images: cached in $out"
  exit 0
fi
start=$(date +%s)
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -C "$here/image" -trimpath -ldflags '-s -w' -o "$tmp/pause" ./pause
go run -C "$here/image" . node-images -out "$out" -pause "$tmp/pause" -busybox "$NODE_DIR/busybox" \
  -busybox-version "$(awk '$1 == "busybox-static" { print $2 }' "$NODE_DIR/versions.txt")"
echo "$stamp" > "$out/stamp"
echo "node-images: built in $out in $(( $(date +%s) - start ))s"
